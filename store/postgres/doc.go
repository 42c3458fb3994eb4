// Package postgres is the PostgreSQL backend of the store contract, for
// replicas that share one database: the embedded schema migrations, stored
// responses and their items, the usage ledger, runs with their lanes, turns
// and spans, and login sessions, in the types of package store, with the
// same semantics as store/sqlite (store/storetest checks both).
//
// It uses github.com/jackc/pgx/v5 with a pgxpool. Every transaction is
// short; writes wait at most lock_timeout for a lock. Driver errors leave
// it marked with store.ErrBusy (lock timeout, serialization failure,
// deadlock), store.ErrFull (SQLSTATE 53100, disk full) or
// store.ErrUnavailable (the server refused, dropped or shut down the
// connection), so no caller needs the driver. What is the same in both
// backends lives once: the group-commit ledger writer in
// store/internal/ledger, and the store code over SQL in
// store/internal/sqlstore, which DB embeds. This package keeps
// PostgreSQL's SQL text, pgx, its way of storing a response's items
// (bigint[] key lists, keys from the sequence, one batch), its migrations,
// its traces and its integrity check.
//
// postgres must never import an agentloop package but store and its
// internal packages: it treats wire JSON as opaque bytes. pgtest,
// beside it, starts the throwaway cluster its tests run against.
package postgres
