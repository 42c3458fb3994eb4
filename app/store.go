package app

import (
	"context"
	"log/slog"

	"agentloop/inspect"
	"agentloop/rollout"
	"agentloop/server/core"
	"agentloop/store"
	"agentloop/store/postgres"
	"agentloop/store/sqlite"
	"agentloop/web"
)

// Both backends hold everything, and the contract serves every consumer's
// store interface.
var (
	_ store.Backend    = (*sqlite.DB)(nil)
	_ store.Backend    = (*postgres.DB)(nil)
	_ core.Store       = store.Backend(nil)
	_ rollout.RunStore = store.Backend(nil)
	_ web.RunDB        = store.Backend(nil)
	_ LoginStore       = store.Backend(nil)
	_ inspect.Store    = store.Backend(nil)
	_ web.Inspector    = (*inspect.Inspector)(nil)
	_ core.Observer    = (*inspect.Inspector)(nil)
)

// OpenStore opens the store --db names: a postgres:// (or postgresql://)
// URL opens PostgreSQL, which replicas may share (shared is true); anything
// else is a SQLite file, created on first run (the default), which one
// process owns.
func OpenStore(ctx context.Context, db string, log *slog.Logger) (b store.Backend, shared bool, err error) {
	if postgres.IsURL(db) {
		pg, err := postgres.Open(ctx, db, log)
		if err != nil {
			return nil, true, err
		}
		return pg, true, nil
	}
	lite, err := sqlite.Open(ctx, db, log)
	if err != nil {
		return nil, false, err
	}
	return lite, false, nil
}
