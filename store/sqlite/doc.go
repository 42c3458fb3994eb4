// Package sqlite is the SQLite backend of the store contract: the embedded
// schema migrations, stored responses and their items, the usage ledger,
// the recorded runs of races (runs, lanes, turns and spans) and login
// sessions, all in the types of package store, passing the contract suite
// (store/storetest) as store/postgres does.
//
// It uses modernc.org/sqlite in WAL mode with one writer connection and a
// small pool of readers, and keeps every transaction short. Like
// store/postgres, it imports its database driver so no one else does:
// driver errors leave it marked with store.ErrBusy or store.ErrFull
// (classify), so no caller needs the driver to tell a locked database from
// a full one. What is the same in both backends lives once: the
// group-commit ledger writer in store/internal/ledger, and the store code
// over SQL in store/internal/sqlstore, which DB embeds. This package keeps
// SQLite's SQL text, its driver, its way of storing a response's items
// (JSON key lists, read with json_each), its migrations and its integrity
// checks.
//
// sqlite must never import an agentloop package but store and its internal
// packages: it treats wire JSON (items, snapshots, run summaries) as opaque
// bytes. It never calls
// inference, and never holds a transaction open across anything but SQLite
// work.
package sqlite
