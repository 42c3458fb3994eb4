package api_test

import (
	"net/http/httptest"
	"testing"

	"agentloop/api"
)

// Each of agentloop's request headers reads from its query alias when the
// header is absent; the header wins when both are set.
func TestAgentloopHeaderFallsBackToItsQueryAlias(t *testing.T) {
	for _, a := range api.QueryAliases {
		r := httptest.NewRequest("GET", "/v1/responses?"+a.Query+"=from-query", nil)
		if got := api.AgentloopHeader(r, a.Header); got != "from-query" {
			t.Errorf("%s from ?%s=: %q", a.Header, a.Query, got)
		}
		r.Header.Set(a.Header, "from-header")
		if got := api.AgentloopHeader(r, a.Header); got != "from-header" {
			t.Errorf("%s with both set: %q, want the header's", a.Header, got)
		}
	}
	if len(api.QueryAliases) < 3 {
		t.Errorf("aliases %v: the stack, the scope and the race tag each need one", api.QueryAliases)
	}
}

// Bearer reads the token of the Bearer scheme, named in any case, and
// nothing else: Basic and a bare token are no bearer token.
func TestBearerReadsOnlyTheBearerScheme(t *testing.T) {
	for _, tc := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer sk-1", "sk-1", true},
		{"bearer sk-1", "sk-1", true},
		{"BEARER ", "", true},
		{"Basic dXNlcjpwYXNz", "", false},
		{"sk-1", "", false},
		{"Bearer", "", false},
		{"", "", false},
	} {
		r := httptest.NewRequest("GET", "/v1/models", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		token, ok := api.Bearer(r)
		if token != tc.token || ok != tc.ok {
			t.Errorf("Authorization %q: (%q, %v), want (%q, %v)", tc.header, token, ok, tc.token, tc.ok)
		}
	}
}
