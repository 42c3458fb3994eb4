package app

import (
	"context"
	"time"
)

// retentionEvery is how often the retention sweep runs after the first,
// at start.
const retentionEvery = time.Hour

// startRetention sweeps what is older than --retention (and expired login
// sessions) now and every retentionEvery, until shutdown (before the store
// closes).
func (a *App) startRetention() {
	if a.cfg.Retention <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(retentionEvery)
		defer t.Stop()
		for {
			a.sweep(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	a.OnShutdown(func(context.Context) { cancel(); <-done })
}

func (a *App) sweep(ctx context.Context) {
	if _, err := a.DB.DeleteExpiredSessions(ctx, time.Now()); err != nil && ctx.Err() == nil {
		a.log.Error("retention sweep: sessions", "err", err)
	}
	swept, err := a.DB.Sweep(ctx, time.Now().Add(-a.cfg.Retention))
	switch {
	case err != nil && ctx.Err() == nil:
		a.log.Error("retention sweep", "err", err)
	case swept.Responses+swept.Runs+swept.Sessions+swept.Workloads+swept.CheckReports > 0:
		// Workloads a kept run names stay (store.Backend's Sweep).
		a.log.Info("retention sweep", "responses", swept.Responses, "runs", swept.Runs, "inspected_sessions", swept.Sessions,
			"workloads", swept.Workloads, "check_reports", swept.CheckReports, "older_than", a.cfg.Retention)
	}
}
