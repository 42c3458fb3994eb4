package sqlstore

import (
	"context"
	"strconv"
	"strings"
)

// Conn is what the shared code needs of a driver: a transaction, or a pool
// for a single statement outside one. Each backend wraps its driver in one.
type Conn interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Batch runs stmts in order and stops at the first error; a backend
	// that can sends them in one round trip.
	Batch(ctx context.Context, stmts []Stmt) error
}

// Row is one result row; Scan returns the Dialect's NoRows when there is
// none.
type Row interface{ Scan(dest ...any) error }

// Rows is a result set, read with Next and Scan, then Err; Close may be
// called more than once.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Stmt is one statement of a Batch. What, when set, names the statement in
// its error (a span's name, say).
type Stmt struct {
	SQL  string
	Args []any
	What string
}

// TxFunc runs fn in one transaction and returns its error classified
// (store.ErrBusy, store.ErrFull, ...). A write TxFunc may run fn again
// after a deadlock, so fn must not keep state from an attempt that failed.
type TxFunc func(ctx context.Context, fn func(Conn) error) error

// Dialect is what differs between the backends beyond the SQL text.
type Dialect struct {
	// Numbered says placeholders are $1, $2, ... (PostgreSQL) rather than
	// ? (SQLite). The shared SQL is written with ?; Rebind numbers it.
	Numbered bool
	// Bytewise follows a text column in ORDER BY to sort it by bytes, as
	// SQLite's default BINARY collation does: ` COLLATE "C"` in
	// PostgreSQL, whose default collation follows the locale.
	Bytewise string
	// NoRows is the driver's error for a QueryRow that found nothing.
	NoRows error
	// IsUniqueViolation and IsForeignKeyViolation read the driver's
	// constraint errors.
	IsUniqueViolation     func(error) bool
	IsForeignKeyViolation func(error) bool
	// Classify marks a driver error with store's sentinel for it (see
	// Mark); every error of a single statement outside a TxFunc passes
	// through it.
	Classify func(error) error
	// NewKeyList returns a scan target for a response's key list, which
	// goes back into SQL as an argument: *string (a JSON array, SQLite) or
	// *[]int64 (an array, PostgreSQL).
	NewKeyList func() any
}

// Rebind numbers q's ? placeholders when the dialect wants $1, $2, ....
// The shared SQL has no ? anywhere else.
func (d Dialect) Rebind(q string) string {
	if !d.Numbered {
		return q
	}
	var b strings.Builder
	n := 0
	for _, part := range strings.SplitAfter(q, "?") {
		if !strings.HasSuffix(part, "?") {
			b.WriteString(part)
			continue
		}
		n++
		b.WriteString(part[:len(part)-1])
		b.WriteString("$")
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// collect reads every row of a query with scan. A query that failed
// returns its error.
func collect[T any](rows Rows, err error, scan func(Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
