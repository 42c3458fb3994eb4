// Package sqlite is the SQLite backend of the store contract: the embedded
// schema migrations, stored responses and their items, the usage ledger,
// and the recorded runs of races (runs, lanes, turns and spans), all in the
// types of package store.
//
// It uses modernc.org/sqlite in WAL mode with one writer connection and a
// small pool of readers, and keeps every transaction short. It is the only
// package that imports a database driver: driver errors leave it marked
// with store.ErrBusy or store.ErrFull (classify), so no caller needs the
// driver to tell a locked database from a full one.
//
// sqlite must never import an agentloop package but store: it treats wire
// JSON (items, snapshots, run summaries) as opaque bytes. It never calls
// inference, and never holds a transaction open across anything but SQLite
// work.
package sqlite
