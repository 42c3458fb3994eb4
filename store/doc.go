// Package store owns agentloop's SQLite database: the embedded schema
// migrations, stored responses and their items, the usage ledger, and the
// recorded runs of races (runs, lanes, turns and spans).
//
// It uses modernc.org/sqlite in WAL mode with one writer connection and a
// small pool of readers, and keeps every transaction short.
//
// store must never import another agentloop package: it deals in its own
// record types and treats wire JSON (items, snapshots, run summaries) as
// opaque bytes. It never calls inference, and never holds a transaction open
// across anything but SQLite work.
package store
