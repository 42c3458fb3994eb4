package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/internal/wait"
)

// TestScopesBelongToWhoCreatedThem: with --api-key, a scope's mount is
// an engine route (the key or a JSON 401, never the login page), and a
// scope is read back only by the key that created it (hardening's
// identity), as the engine names that client.
func TestScopesBelongToWhoCreatedThem(t *testing.T) {
	a := apptest.Start(t, func(c *app.Config) { c.APIKey = "sk-secret" })
	key := map[string]string{"Authorization": "Bearer sk-secret", "Content-Type": "application/json"}
	resp, body := do(t, "POST", a.URL()+"/api/scopes", `{"tool_turns":2}`, key)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var sc struct{ ID, Path, Owner string }
	if err := json.Unmarshal([]byte(body), &sc); err != nil || !strings.HasPrefix(sc.Owner, "key:") {
		t.Fatalf("scope %s: owner %q", body, sc.Owner)
	}
	if resp, body := do(t, "POST", a.URL()+sc.Path+"/responses", `{"model":"instant","input":"hi"}`, map[string]string{"Content-Type": "application/json"}); resp.StatusCode != 401 || !strings.Contains(body, "invalid_api_key") {
		t.Fatalf("the mount without the key: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "POST", a.URL()+sc.Path+"/responses", `{"model":"instant","input":"hi"}`, key); resp.StatusCode != 200 {
		t.Fatalf("the mount with the key: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", a.URL()+sc.Path+"/nope", "", key); resp.StatusCode != 404 || !strings.Contains(body, "Invalid URL") {
		t.Fatalf("an unknown path under the mount: %d %s", resp.StatusCode, body)
	}
	wait.UntilErr(t, "the scope's trace", func() error {
		if resp, body := do(t, "GET", a.URL()+"/api/scopes/"+sc.ID, "", key); resp.StatusCode != 200 || !strings.Contains(body, `"chain"`) {
			return fmt.Errorf("read back: %d %s", resp.StatusCode, body)
		}
		return nil
	})
}
