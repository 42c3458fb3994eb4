package app

import (
	"errors"
	"net/http"

	"agentloop/api"
	"agentloop/server"

	"github.com/labstack/echo/v4"
)

func (a *App) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = echo.ExtractIPDirect()
	e.HTTPErrorHandler = a.errorHandler
	e.Use(securityHeaders)
	e.Use(hostAllowlist(append(bindHosts(a.cfg.Addr), a.cfg.AllowedHosts...)))
	if a.cfg.RateLimit > 0 || a.cfg.ConnLimit > 0 {
		e.Use(perAddressLimits(a.cfg.RateLimit, a.cfg.RateBurst, a.cfg.ConnLimit))
	}
	if a.cfg.APIKey != "" {
		e.Use(keyAuth(a.cfg.APIKey, a.loginPage))
		e.POST("/login", login(a.cfg.APIKey))
	}
	a.V1.Register(e.Group("/v1"))
	a.Baseline.Register(e.Group("/baseline/v1"))
	server.RegisterTraces(e.Group("/api"), a.Shared.Traces)
	e.GET("/metrics", echo.WrapHandler(a.Shared.Metrics.Handler()))
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	return e
}

// loginPage is replaced by the playground's page when it is mounted.
func (a *App) loginPage(c echo.Context) error {
	return c.HTML(http.StatusUnauthorized, "<!doctype html><title>agentloop</title><p>This server needs its API key.</p>")
}

// errorHandler turns handler errors into OpenAI-shaped JSON.
func (a *App) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		_ = server.WriteError(c, ae)
		return
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if s, ok := he.Message.(string); ok {
			msg = s
		}
		_ = server.WriteError(c, &api.Error{Status: he.Code, Type: "invalid_request_error", Message: msg})
		return
	}
	a.log.Error("handler", "path", c.Path(), "err", err)
	_ = server.WriteError(c, api.ServerError("The server had an error while processing your request."))
}
