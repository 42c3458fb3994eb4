package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
)

// The drill API is under the process's access rules: with --api-key it
// needs the key.
func TestDrillAPINeedsTheKey(t *testing.T) {
	a := apptest.Start(t, func(c *app.Config) { c.APIKey = "sk-drills" })
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, a.URL()+"/api/drills", strings.NewReader(`{"drill":"stall"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without the key: %d", method, resp.StatusCode)
		}
		req.Header.Set("Authorization", "Bearer sk-drills")
		req.Body = io.NopCloser(strings.NewReader(`{"drill":"stall"}`))
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s with the key: %d", method, resp.StatusCode)
		}
	}
}

// The drill API takes JSON only, like every /api write.
func TestDrillAPITakesJSONOnly(t *testing.T) {
	a := apptest.Start(t)
	resp, err := http.Post(a.URL()+"/api/drills", "text/plain", strings.NewReader(`{"drill":"stall"}`))
	if err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %v %v", err, resp.Status)
	}
	resp.Body.Close()
}
