package web

import (
	"errors"
	"net/http"
	"strings"

	"agentloop/api"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// writeError writes an OpenAI-shaped JSON error.
func writeError(c echo.Context, e *api.Error) error {
	if c.Response().Committed {
		return nil
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSONCharsetUTF8)
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(e.Status)
	_, err := c.Response().Write(api.AppendHTTPError(nil, e))
	return err
}

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
			return writeError(c, api.Errorf(http.StatusForbidden, "", "cross_site_request", "Cross-site requests are not allowed."))
		}
		return next(c)
	}
}

// sameOriginJSON guards state-changing routes with a body: JSON only (a
// form post from another site cannot send it without a preflight), and
// never cross-site. It mirrors the rule app applies to /login.
func sameOriginJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return sameOrigin(func(c echo.Context) error {
		ct := c.Request().Header.Get(echo.HeaderContentType)
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
			return writeError(c, api.Errorf(http.StatusUnsupportedMediaType, "", "unsupported_media_type", "Send a JSON body (Content-Type: application/json)."))
		}
		return next(c)
	})
}
