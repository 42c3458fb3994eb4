package web

import (
	"net/http"
	"testing"
)

// TestListRoutesReadOneLimit: every list route reads ?limit= by the one
// rule, 1 to 1000, with the same OpenAI-shaped error.
func TestListRoutesReadOneLimit(t *testing.T) {
	_, db := validatingRunner(t)
	stored := &testPlayground{pg: New(Deps{Races: &fakeRaces{running: map[string]bool{}}, Runs: StoreRuns(db), Workloads: db, Checks: db}), e: newEcho()}
	stored.pg.Register(stored.e)
	inspecting, _ := newInspectPlayground(t)
	for route, tp := range map[string]*testPlayground{"/api/workloads": stored, "/api/checks": stored, "/api/sessions": inspecting} {
		for _, q := range []string{"0", "1001", "ten"} {
			rec := tp.do(http.MethodGet, route+"?limit="+q, "", nil)
			if rec.Code != http.StatusBadRequest {
				t.Errorf("%s?limit=%s: status %d", route, q, rec.Code)
				continue
			}
			if e := decodeAPIError(t, rec.Body.Bytes()); deref(e.Error.Param) != "limit" {
				t.Errorf("%s?limit=%s: param %q", route, q, deref(e.Error.Param))
			}
		}
		if rec := tp.do(http.MethodGet, route+"?limit=1000", "", nil); rec.Code != http.StatusOK {
			t.Errorf("%s?limit=1000: status %d: %s", route, rec.Code, rec.Body)
		}
	}
}
