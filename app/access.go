package app

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/web"

	"github.com/labstack/echo/v4"
)

// securityHeaders sets the page protections: a CSP without inline scripts,
// no sniffing, no framing.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		return next(c)
	}
}

// hostAllowlist rejects requests whose Host is not ours, against DNS
// rebinding. Hostnames are compared without ports.
func hostAllowlist(allowed []string) echo.MiddlewareFunc {
	set := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	for _, h := range allowed {
		h = strings.TrimSpace(strings.ToLower(h))
		if h != "" {
			set[strings.Trim(h, "[]")] = true
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			host := c.Request().Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			host = strings.Trim(strings.ToLower(host), "[]")
			if !set[host] {
				return api.Errorf(http.StatusMisdirectedRequest, "", api.CodeHostNotAllowed,
					"Host '%s' is not allowed; start the server with --allowed-hosts to serve it.", host)
			}
			return next(c)
		}
	}
}

// bindHosts is the host of a specific (non-wildcard) bind address, which
// clients may always use.
func bindHosts(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || host == "" || (ip != nil && ip.IsUnspecified()) {
		return nil
	}
	return []string{host}
}

// checkBind refuses a wildcard bind without an explicit host list.
func checkBind(addr string, allowed []string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if (host == "" || (ip != nil && ip.IsUnspecified())) && len(allowed) == 0 {
		return fmt.Errorf("--addr %q listens on every interface: name the hostnames clients use with --allowed-hosts", addr)
	}
	return nil
}

// keyAuth requires the API key on every route but login, logout and the
// static assets: as a Bearer token (SDKs), or as a login session's cookie
// (pages), the cookie only when the browser says the request is
// same-origin. Wrong keys are throttled per client address; a request
// without any key is not a guess and is not charged.
func (l *logins) keyAuth(loginPage echo.HandlerFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			path := r.URL.Path
			if path == "/login" || path == "/logout" || strings.HasPrefix(path, "/static/") || path == "/favicon.ico" {
				return next(c)
			}
			if token, ok := api.Bearer(r); ok {
				if err := l.guessCheck(c); err != nil {
					return err
				}
				if l.keyMatches(token) {
					return next(c)
				}
				return l.wrongKey(c)
			}
			if ck, err := r.Cookie(loginCookieName(c)); err == nil && cookieAllowed(r) {
				ok, err := l.valid(r.Context(), ck.Value)
				if err != nil {
					l.log.Error("read session", "err", err)
					return api.StoreError(err, "The login could not be read")
				}
				if ok {
					c.Set(loginContextKey, l.loginID(ck.Value))
					return next(c)
				}
			}
			if isAPIPath(path) || loginPage == nil {
				return unauthorized("You didn't provide an API key. Provide it as 'Authorization: Bearer YOUR_KEY'.")
			}
			c.Response().Header().Set("Cache-Control", "no-store")
			c.Response().WriteHeader(http.StatusUnauthorized)
			return loginPage(c)
		}
	}
}

// cookieAllowed says the browser marks the request same-origin (or typed
// in the address bar). Chromium sends no Sec-Fetch-Site on WebSocket
// handshakes; there the Origin must be this very host.
func cookieAllowed(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	}
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && sameHostOrigin(r)
}

// requestGuard applies web's same-origin guards to the whole process, once:
// a request that may change state (any method but GET, HEAD and OPTIONS)
// and any request to an API or engine route (the WebSocket upgrade
// included) is refused cross-site without an Authorization header, and
// POST, PUT and PATCH take application/json only, but for a bodiless POST
// to an engine route (the SDKs' cancel). Page GETs stay reachable by
// navigation from anywhere.
func requestGuard(next echo.HandlerFunc) echo.HandlerFunc {
	withBody, noBody := web.SameOriginJSON(next), web.SameOrigin(next)
	return func(c echo.Context) error {
		r := c.Request()
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if isAPIPath(r.URL.Path) {
				return noBody(c)
			}
			return next(c)
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			if bodiless(r) && isEnginePath(r.URL.Path) {
				// A POST with no body (the SDKs' cancel) sends nothing a
				// form could: it needs only the same-origin rule.
				return noBody(c)
			}
			return withBody(c)
		default:
			return noBody(c)
		}
	}
}

// bodiless says a request declares an empty body: Content-Length 0 and
// no Content-Type.
func bodiless(r *http.Request) bool {
	return r.ContentLength == 0 && r.Header.Get(echo.HeaderContentType) == ""
}

// isEnginePath says a path is under an engine (/v1, /baseline/v1, or /v1
// mounted under a scope, /scope/{id}/v1).
func isEnginePath(p string) bool {
	return strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/baseline/v1/") || strings.HasPrefix(p, "/scope/")
}

func isAPIPath(p string) bool {
	for _, pre := range []string{"/v1/", "/baseline/v1/", "/scope/", "/api/", "/metrics", "/ui/"} {
		if strings.HasPrefix(p, pre) || p+"/" == pre {
			return true
		}
	}
	return false
}

func unauthorized(msg string) error {
	return &api.Error{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: api.CodeInvalidAPIKey, Message: msg}
}

// rateLimit limits each client address's request rate, with the same
// bounded per-address buckets as the login throttle.
func rateLimit(rps float64, burst int) echo.MiddlewareFunc {
	t := newThrottle(rps, burst, throttleAddrs)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ip := c.RealIP()
			if wait := t.take(ip, time.Now()); wait > 0 {
				secs := int(math.Ceil(wait.Seconds()))
				e := api.Errorf(http.StatusTooManyRequests, "", api.CodeRateLimitExceeded, "Rate limit reached for %s: %g requests per second. Please try again in %ds.", ip, rps, secs)
				e.Headers = map[string]string{"Retry-After": strconv.Itoa(secs)}
				return e
			}
			return next(c)
		}
	}
}

// sameHostOrigin reports whether the request's Origin is the host it was
// sent to (scheme aside), which is what a same-origin WebSocket carries.
func sameHostOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}
