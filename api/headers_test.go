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
