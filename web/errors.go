package web

import (
	"errors"
	"net/http"
	"strings"

	"agentloop/api"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// storeError maps a store or runner error to the API's error.
func storeError(err error, what, id string) *api.Error {
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrNotFound):
		return api.Errorf(http.StatusNotFound, "", "not_found", "%s '%s' not found.", what, id)
	default:
		return api.ServerError("The server had an error while reading %s '%s'.", strings.ToLower(what), id)
	}
}

// crossSite says the browser reports a request from another site.
// Same-origin requests and those without the header (SDKs, the CLI) pass.
func crossSite(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	return site != "" && site != "same-origin" && site != "none"
}

// sameOrigin guards state-changing routes without a body (DELETE).
func sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if crossSite(c.Request()) {
			return api.Errorf(http.StatusForbidden, "", "cross_site_request", "Cross-site requests are not allowed.")
		}
		return next(c)
	}
}

// SameOriginJSON guards state-changing routes with a body, here and app's
// /login: JSON only (a form post from another site cannot send it without
// a preflight), and never cross-site.
func SameOriginJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return sameOrigin(func(c echo.Context) error {
		ct := c.Request().Header.Get(echo.HeaderContentType)
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
			return api.Errorf(http.StatusUnsupportedMediaType, "", "unsupported_media_type", "Send a JSON body (Content-Type: application/json).")
		}
		return next(c)
	})
}
