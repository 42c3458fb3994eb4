package server

import (
	"net/http"

	"agentloop/api"
	"agentloop/server/drill"
	"agentloop/server/scope"

	"github.com/labstack/echo/v4"
)

// Register mounts the engine on g (e.g. /v1 or /baseline/v1). Any other
// path under g, or another method on one of its paths, gets OpenAI's 404.
func (e *Engine) Register(g *echo.Group) {
	routes := []struct {
		method, path string
		h            echo.HandlerFunc
	}{
		{http.MethodPost, "/responses", e.http.Create},
		{http.MethodGet, "/responses", drill.RefuseUpgrade(e.drills, e.Engine, e.ws.Handle)},
		{http.MethodPost, "/responses/input_tokens", e.http.InputTokens},
		{http.MethodPost, "/responses/compact", e.http.Compact},
		{http.MethodGet, "/responses/:id", e.http.Get},
		{http.MethodDelete, "/responses/:id", e.http.Delete},
		{http.MethodGet, "/responses/:id/input_items", e.http.InputItems},
		{http.MethodPost, "/responses/:id/cancel", e.http.Cancel},
		{http.MethodPost, "/conversations", e.http.CreateConversation},
		{http.MethodGet, "/conversations/:id", e.http.GetConversation},
		{http.MethodPost, "/conversations/:id", e.http.UpdateConversation},
		{http.MethodDelete, "/conversations/:id", e.http.DeleteConversation},
		{http.MethodGet, "/conversations/:id/items", e.http.ConversationItems},
		{http.MethodPost, "/conversations/:id/items", e.http.AddConversationItems},
		{http.MethodGet, "/conversations/:id/items/:item_id", e.http.ConversationItem},
		{http.MethodDelete, "/conversations/:id/items/:item_id", e.http.DeleteConversationItem},
		{http.MethodGet, "/models", e.http.Models},
		{http.MethodGet, "/models/:id", e.http.Model},
	}
	for _, r := range routes {
		g.Add(r.method, r.path, r.h)
		// A path's own not-found handler answers its other methods, where
		// Echo would answer 405.
		g.RouteNotFound(r.path, invalidURL)
	}
	g.RouteNotFound("", invalidURL)
	g.RouteNotFound("/*", invalidURL)
}

// invalidURL is OpenAI's answer to a path or method it does not serve: a
// 404 invalid_request_error naming both.
func invalidURL(c echo.Context) error {
	r := c.Request()
	return api.Errorf(http.StatusNotFound, "", "", "Invalid URL (%s %s)", r.Method, r.URL.Path)
}

// scoped is the mount /scope/{id}/v1: the request is /v1's with its
// X-Agentloop-Scope header set to id, over HTTP and on a WebSocket's
// upgrade alike (docs/protocol.md, "Scopes"). The path wins over a header
// the client also sent. The scope counts the request in flight until the
// handler returns, which is after its trace was handed over (a WebSocket:
// after its connection's last).
func scoped(scopes *scope.Scopes) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id := c.Param("scope")
			if id == "" || len(id) > maxScopeID {
				return api.BadRequest("", api.CodeInvalidValue, "A scope in /scope/{id}/v1 is 1 to %d bytes.", maxScopeID)
			}
			c.Request().Header.Set(api.HeaderScope, id)
			defer scopes.Enter(id)()
			return next(c)
		}
	}
}

// maxScopeID bounds a scope named in the path, as the drills bound theirs.
const maxScopeID = 256
