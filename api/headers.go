package api

import (
	"net/http"
	"strings"
)

// QueryAliases are the query-parameter aliases of agentloop's own request
// headers. A browser cannot set headers on a WebSocket upgrade, so each
// header a client sends also reads from the upgrade's query; the header
// wins when both are set (docs/protocol.md, "agentloop's headers"). The
// explorer offers these aliases from this table.
var QueryAliases = []QueryAlias{
	{Header: HeaderStack, Query: QueryStack},
	{Header: HeaderScope, Query: "agentloop_scope"},
	{Header: HeaderRace, Query: "agentloop_race"},
}

// QueryAlias pairs one of agentloop's headers with its query alias.
type QueryAlias struct {
	Header string `json:"header"`
	Query  string `json:"query"`
}

// AgentloopHeader reads one of agentloop's own headers from the request,
// or else from its query alias.
func AgentloopHeader(r *http.Request, header string) string {
	if v := r.Header.Get(header); v != "" {
		return v
	}
	for _, a := range QueryAliases {
		if a.Header == header {
			return r.URL.Query().Get(a.Query)
		}
	}
	return ""
}

// Bearer returns the token of an "Authorization: Bearer TOKEN" header (the
// scheme's name in any case), the process's one reader of it.
func Bearer(r *http.Request) (token string, ok bool) {
	auth := r.Header.Get("Authorization")
	if len(auth) < len("Bearer ") || !strings.EqualFold(auth[:len("Bearer ")], "Bearer ") {
		return "", false
	}
	return auth[len("Bearer "):], true
}

// The header that chooses a request's modelled API stack, and its query
// alias for WebSocket upgrades from a browser, which cannot set headers.
const (
	HeaderStack = "X-Agentloop-Stack"
	QueryStack  = "agentloop_stack"
)
