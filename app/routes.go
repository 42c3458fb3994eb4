package app

import (
	"context"
	"net/http"
	"strings"
	"time"

	"agentloop/rollout"
	"agentloop/server/request"
	"agentloop/web"

	"github.com/labstack/echo/v4"
)

func (a *App) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = echo.ExtractIPDirect()
	e.Use(securityHeaders)
	e.Use(hostAllowlist(append(bindHosts(a.cfg.Addr), a.cfg.AllowedHosts...)))
	if a.cfg.ConnLimit > 0 {
		e.Use(refuseOverLimit)
	}
	// Cross-site and non-JSON writes are refused before anything else runs.
	e.Use(requestGuard)
	if a.cfg.RateLimit > 0 {
		e.Use(rateLimit(a.cfg.RateLimit, a.cfg.RateBurst))
	}
	e.Use(bodyTimeout(a.cfg.BodyTimeout))
	// The playground. Its race runner talks to this server over loopback, so
	// it is built on first use, once the server listens and knows its URL.
	pg := web.New(web.Deps{
		Races: web.Deferred(func() web.Races {
			r := rollout.NewRunner(a.URL(), a.DB, a.log)
			r.APIKey, r.Replica, r.Windows = a.cfg.APIKey, a.cfg.ReplicaID, a.cfg.Windows()
			return r
		}),
		Runs:         web.StoreRuns(a.DB),
		Workloads:    a.DB,
		Checks:       a.DB,
		Gauntlet:     gauntlet{a.Shared},
		Log:          a.log,
		KeyRequired:  a.cfg.APIKey != "",
		Inspector:    a.Inspector,
		HomePreset:   a.cfg.HomePreset,
		Identify:     identify(a.cfg.APIKey),
		CancelSecret: cancelKey(a.cfg, a.log),
		Budget:       a.Shared.Budget,
		Windows:      a.cfg.Windows(),
	})
	// Races stop first, so they are stored as interrupted, not failed.
	a.beforeShutdown = append(a.beforeShutdown, pg.Shutdown)
	e.HTTPErrorHandler = ErrorHandler(a.log, pg.NotFoundPage)
	if a.cfg.APIKey != "" {
		l := newLogins(a.cfg.APIKey, a.DB, a.cfg.SessionTTL,
			newThrottle(a.cfg.LoginRate, a.cfg.LoginBurst, throttleAddrs), a.log)
		e.Use(l.keyAuth(pg.LoginPage))
		e.POST("/login", l.login, web.SameOriginJSON)
		e.POST("/logout", l.logout, web.SameOriginJSON)
	}
	// The engines count background responses per client: who it is, as
	// the playground answers it, once a login is known.
	ident := identify(a.cfg.APIKey)
	clientID := func(c echo.Context) string { return ident(c).ID }
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// The scopes API names a scope's owner as the engine names
			// a client (server/scope).
			if p := c.Request().URL.Path; isEnginePath(p) || strings.HasPrefix(p, "/api/scopes") {
				request.SetClientIdentity(c, clientID)
			}
			return next(c)
		}
	})
	a.engines.Register(e)
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	a.probe = newWriteProbe(a.DB, a.cfg.ReplicaID)
	e.GET("/readyz", a.ready)
	pg.Register(e)
	return e
}

// ready is the load balancer's readiness probe: 200 while this replica
// takes new work and its store answers and writes, 503 once it drains,
// the store does not answer within a second, or it cannot write (a
// write probe, reused for readyProbeEvery).
func (a *App) ready(c echo.Context) error {
	if a.draining.Load() {
		return c.String(http.StatusServiceUnavailable, "draining\n")
	}
	// The probe's answer is reused, so a client gone mid-probe must not
	// cut it short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), time.Second)
	defer cancel()
	if err := a.DB.Ping(ctx); err != nil {
		return c.String(http.StatusServiceUnavailable, "store unavailable\n")
	}
	if err := a.probe.check(ctx); err != nil {
		a.log.Warn("readiness write probe", "err", err)
		return c.String(http.StatusServiceUnavailable, "store cannot write\n")
	}
	return c.String(http.StatusOK, "ready\n")
}
