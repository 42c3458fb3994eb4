package app

import (
	"net/http/httptest"
	"testing"

	"agentloop/web"

	"github.com/labstack/echo/v4"
)

// Who a client is: its login; failing that its bearer token, only on a
// server with --api-key; failing that its address, never a header it
// sends (X-Forwarded-For).
func TestIdentifyTheClient(t *testing.T) {
	e := echo.New()
	e.IPExtractor = echo.ExtractIPDirect()
	request := func(addr, bearer, login string) echo.Context {
		r := httptest.NewRequest("POST", "/api/runs", nil)
		r.RemoteAddr = addr + ":40000"
		r.Header.Set("X-Forwarded-For", "203.0.113.9")
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		c := e.NewContext(r, httptest.NewRecorder())
		if login != "" {
			c.Set(loginContextKey, login)
		}
		return c
	}
	keyless, keyed := identify(""), identify("sk-key")
	for _, tc := range []struct {
		name string
		who  web.Identify
		c    echo.Context
		want web.Client
	}{
		{"an address", keyless, request("10.0.0.1", "", ""), web.Client{ID: "addr:10.0.0.1"}},
		{"a token without a key is no client", keyless, request("10.0.0.1", "sk-made-up", ""), web.Client{ID: "addr:10.0.0.1"}},
		{"another address", keyless, request("10.0.0.2", "sk-made-up", ""), web.Client{ID: "addr:10.0.0.2"}},
		{"the key", keyed, request("10.0.0.1", "sk-key", ""), web.Client{ID: "key:572dd8e317e4855b", Keyed: true}},
		{"the key from elsewhere", keyed, request("10.0.0.2", "sk-key", ""), web.Client{ID: "key:572dd8e317e4855b", Keyed: true}},
		{"a login", keyed, request("10.0.0.1", "", "0123456789abcdef0123"), web.Client{ID: "login:0123456789abcdef", Keyed: true}},
		{"another login", keyed, request("10.0.0.1", "", "fedcba9876543210fedc"), web.Client{ID: "login:fedcba9876543210", Keyed: true}},
		{"a login wins over the token", keyed, request("10.0.0.1", "sk-key", "0123456789abcdef0123"), web.Client{ID: "login:0123456789abcdef", Keyed: true}},
	} {
		if got := tc.who(tc.c); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
