package web

import (
	"errors"
	"fmt"
	"mime"
	"net/http"

	"agentloop/api"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// storeError maps a failed read of a record to the API's error: a
// missing record is a 404 naming it, anything else follows
// api.StoreError's rule.
func storeError(err error, what, id string) *api.Error {
	return storeErrorDoing(err, what, id, "read")
}

// storeErrorDoing is storeError for a call that did more than read: verb
// says what could not be done to the record ("stored", "deleted").
func storeErrorDoing(err error, what, id, verb string) *api.Error {
	if errors.Is(err, store.ErrNotFound) {
		return api.Errorf(http.StatusNotFound, "", api.CodeNotFound, "%s '%s' not found.", what, id)
	}
	doing := what + " could not be " + verb
	if id != "" {
		doing = fmt.Sprintf("%s '%s' could not be %s", what, id, verb)
	}
	return api.StoreError(err, doing)
}

// storeProblem is the page for a store call that failed: a 503 saying why
// (with Retry-After when it is passing) or a 500 hiding the cause, as
// api.StoreError rules; title heads the page.
func (p *Playground) storeProblem(c echo.Context, err error, title, doing string) error {
	p.log.Error("store", "doing", doing, "err", err)
	e := api.StoreError(err, doing)
	for k, v := range e.Headers {
		c.Response().Header().Set(k, v)
	}
	return p.problem(c, e.Status, title, e.Message)
}

// crossSite says the browser reports a request from another origin that
// carries no bearer token. Requests without Sec-Fetch-Site (SDKs, curl,
// the CLI, older browsers) and those the browser calls same-origin or none
// (typed in the address bar) pass. same-site is refused too: another port
// on 127.0.0.1 is the same site. A request with "Authorization: Bearer"
// passes: a browser sends that header cross-origin only after a CORS
// preflight, which this server never grants, and the key (when set) is
// checked on its own. Other schemes (Basic, Negotiate) do not exempt a
// request, since browsers attach those by themselves.
func crossSite(r *http.Request) bool {
	if _, ok := api.Bearer(r); ok {
		return false
	}
	site := r.Header.Get("Sec-Fetch-Site")
	return site != "" && site != "same-origin" && site != "none"
}

// SameOrigin guards state-changing routes without a body (DELETE) and
// app's API and engine routes, the WebSocket upgrade included: never
// cross-site (see crossSite).
func SameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if crossSite(c.Request()) {
			return api.Errorf(http.StatusForbidden, "", api.CodeCrossSiteRequest,
				"Cross-site requests are not allowed without an Authorization header.")
		}
		return next(c)
	}
}

// SameOriginJSON guards routes that take a body, here and in app (the
// engine's POSTs, /login, /logout): JSON only, since a page on another
// site can send text/plain or a form without a preflight but not JSON,
// and never cross-site.
func SameOriginJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return SameOrigin(func(c echo.Context) error {
		if !IsJSON(c.Request().Header.Get(echo.HeaderContentType)) {
			return api.Errorf(http.StatusUnsupportedMediaType, "", api.CodeUnsupportedMediaType,
				"Send a JSON body with Content-Type: application/json.")
		}
		return next(c)
	})
}

// IsJSON says a Content-Type is application/json, compared
// case-insensitively, parameters (charset) allowed. It is the one media
// type check of the process.
func IsJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return false
	}
	return mt == "application/json"
}
