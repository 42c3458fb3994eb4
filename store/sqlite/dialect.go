package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"agentloop/store"
	"agentloop/store/internal/sqlstore"
)

// records is the store code both backends share; DB embeds it, so its
// methods (runs, login sessions, workloads, the inspector's records, ...)
// are DB's.
type records = sqlstore.Store

// dialect is SQLite's: ? placeholders, and the default BINARY collation
// already orders text by bytes.
var dialect = sqlstore.Dialect{
	NoRows:                sql.ErrNoRows,
	IsUniqueViolation:     isUniqueViolation,
	IsForeignKeyViolation: isForeignKeyViolation,
	Classify:              classify,
	// A key list is a JSON array, read with json_each.
	NewKeyList: func() any { return new(string) },
}

// queries are SQLite's text of the statements that differ.
var queries = sqlstore.SQL{
	FindOutputItem: `SELECT key, item_id, type, json FROM items
		WHERE item_id = ? AND is_output = 1 ORDER BY key DESC LIMIT 1`,
	InputCursor: `SELECT %s(j.key)
		FROM json_each(?) AS j JOIN items AS i ON i.key = j.value
		WHERE j.key >= ? AND i.item_id = ?`,
	ListedItems: `SELECT j.key, j.value, i.item_id, i.type, i.json
		FROM json_each(?) AS j LEFT JOIN items AS i ON i.key = j.value
		WHERE j.key BETWEEN ? AND ?`,
	ListedOrder: ` ORDER BY j.key %s LIMIT ?`,
	InsertSpans: insertSpans,
}

// insertSpans inserts a turn's spans one statement each: SQLite runs in
// process, so a statement costs no round trip.
func insertSpans(t *store.Turn, spans []store.Span) []sqlstore.Stmt {
	const insert = `INSERT INTO spans
		(run_id, lane, repeat, turn_index, response_id, name, kind, start_ns, duration_ns, items, tokens, bytes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	stmts := make([]sqlstore.Stmt, len(spans))
	for i, s := range spans {
		stmts[i] = sqlstore.Stmt{SQL: insert, What: fmt.Sprintf("span %q", s.Name), Args: []any{t.RunID, t.Lane, t.Repeat, t.Index,
			s.ResponseID, s.Name, s.Kind, s.StartNS, s.DurationNS, s.Items, s.Tokens, s.Bytes}}
	}
	return stmts
}

// conn is a transaction or a pool as a sqlstore.Conn.
type conn struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := c.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return c.q.QueryRowContext(ctx, query, args...)
}

// Batch runs stmts one after the other.
func (c conn) Batch(ctx context.Context, stmts []sqlstore.Stmt) error {
	for _, st := range stmts {
		if _, err := c.q.ExecContext(ctx, st.SQL, st.Args...); err != nil {
			if st.What != "" {
				return fmt.Errorf("%s: %w", st.What, err)
			}
			return err
		}
	}
	return nil
}

// sqlRows drops the error of Close, which Err reports.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// writeConn and readConn are writeTx and readTx for the shared code.
func (db *DB) writeConn(ctx context.Context, fn func(sqlstore.Conn) error) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error { return fn(conn{tx}) })
}

func (db *DB) readConn(ctx context.Context, fn func(sqlstore.Conn) error) error {
	return db.readTx(ctx, func(tx *sql.Tx) error { return fn(conn{tx}) })
}
