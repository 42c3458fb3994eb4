// Package sqlstore is the store contract written once for both SQL
// backends: the checks, defaults, key bookkeeping, column lists, scanners
// and error wrapping of responses, runs, login sessions, workloads, the
// inspector's sessions, the ledger's reads and retention. A backend gives
// it a Dialect (its placeholders, its no-rows and constraint errors, its
// bytewise collation), the SQL text that differs between the two, and a
// Conn over its driver; it keeps for itself only what it does differently
// (how it stores a response's items, its migrations, its integrity check).
//
// sqlstore must never import a database driver, database/sql, or an
// agentloop package but store: the drivers stay in store/sqlite and
// store/postgres, which wrap them in a Conn.
package sqlstore
