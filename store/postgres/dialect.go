package postgres

import (
	"context"

	"agentloop/store"
	"agentloop/store/internal/sqlstore"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// records is the store code both backends share; DB embeds it, so its
// methods (runs, login sessions, workloads, the inspector's records, ...)
// are DB's.
type records = sqlstore.Store

// dialect is PostgreSQL's: numbered placeholders, and text ordered by
// bytes (COLLATE "C"), as SQLite orders it, whatever the database's
// locale.
var dialect = sqlstore.Dialect{
	Numbered:              true,
	Bytewise:              ` COLLATE "C"`,
	NoRows:                pgx.ErrNoRows,
	IsUniqueViolation:     isUniqueViolation,
	IsForeignKeyViolation: isForeignKeyViolation,
	Classify:              classify,
	// A key list is a bigint[].
	NewKeyList: func() any { return new([]int64) },
}

// queries are PostgreSQL's text of the statements that differ.
var queries = sqlstore.SQL{
	FindOutputItem: `SELECT key, item_id, type, json FROM items
		WHERE item_id = $1 AND is_output ORDER BY key DESC LIMIT 1`,
	InputCursor: `SELECT %s(k.pos - 1)
		FROM unnest($1::bigint[]) WITH ORDINALITY AS k(key, pos) JOIN items AS i ON i.key = k.key
		WHERE k.pos - 1 >= $2 AND i.item_id = $3`,
	ListedItems: `SELECT k.pos - 1, k.key, i.item_id, i.type, i.json
		FROM unnest($1::bigint[]) WITH ORDINALITY AS k(key, pos) LEFT JOIN items AS i ON i.key = k.key
		WHERE k.pos - 1 BETWEEN $2 AND $3`,
	ListedOrder: ` ORDER BY k.pos %s LIMIT $4`,
	InsertSpans: insertSpans,
}

// insertSpans inserts a turn's spans in one statement, from arrays.
func insertSpans(t *store.Turn, spans []store.Span) []sqlstore.Stmt {
	n := len(spans)
	var (
		responseIDs, names, kinds            = make([]string, n), make([]string, n), make([]string, n)
		starts, durations, items, tokens, bs = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	)
	for i, s := range spans {
		responseIDs[i], names[i], kinds[i] = s.ResponseID, s.Name, s.Kind
		starts[i], durations[i], items[i], tokens[i], bs[i] = s.StartNS, s.DurationNS, s.Items, s.Tokens, s.Bytes
	}
	return []sqlstore.Stmt{{SQL: `INSERT INTO spans
		(run_id, lane, repeat, turn_index, response_id, name, kind, start_ns, duration_ns, items, tokens, bytes)
		SELECT $1, $2, $3, $4, s.* FROM unnest($5::text[], $6::text[], $7::text[],
			$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[]) AS s`,
		Args: []any{t.RunID, t.Lane, t.Repeat, t.Index, responseIDs, names, kinds, starts, durations, items, tokens, bs}}}
}

// conn is a transaction or the pool as a sqlstore.Conn.
type conn struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
		SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	}
}

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := c.q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return c.q.QueryRow(ctx, query, args...)
}

// Batch sends stmts in one round trip.
func (c conn) Batch(ctx context.Context, stmts []sqlstore.Stmt) error {
	var b pgx.Batch
	for _, st := range stmts {
		b.Queue(st.SQL, st.Args...)
	}
	return c.q.SendBatch(ctx, &b).Close()
}

// writeConn and readConn are writeTx and readTx for the shared code.
func (db *DB) writeConn(ctx context.Context, fn func(sqlstore.Conn) error) error {
	return db.writeTx(ctx, func(tx pgx.Tx) error { return fn(conn{tx}) })
}

func (db *DB) readConn(ctx context.Context, fn func(sqlstore.Conn) error) error {
	return db.readTx(ctx, func(tx pgx.Tx) error { return fn(conn{tx}) })
}
