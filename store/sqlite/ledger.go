package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"agentloop/store"
)

// AppendLedger queues a ledger row for the group-commit writer; the row is
// durable within about 100 ms. It never waits for SQLite, but when the queue
// is full it waits for room rather than drop the row.
func (db *DB) AppendLedger(row store.LedgerRow) { db.ledger.Append(row) }

// FlushLedger waits until every row appended before the call is durable.
func (db *DB) FlushLedger(ctx context.Context) error { return db.ledger.Flush(ctx) }

// writeLedger commits rows in one transaction; the group-commit writer
// calls it. It is not tied to a caller: busy_timeout bounds the wait.
func (db *DB) writeLedger(rows []store.LedgerRow) error {
	ctx := context.Background()
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, insertLedgerSQL)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, ledgerArgs(r)...); err != nil {
				return err
			}
		}
		return nil
	})
}

const insertLedgerSQL = `INSERT INTO usage_ledger
	(response_id, created_at, model, transport, engine, input_tokens, cached_tokens, output_tokens, stored)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

func ledgerArgs(r store.LedgerRow) []any {
	return []any{r.ResponseID, r.CreatedAt, r.Model, r.Transport, r.Engine,
		r.InputTokens, r.CachedTokens, r.OutputTokens, r.Stored}
}

func insertLedgerRow(ctx context.Context, tx *sql.Tx, r store.LedgerRow) error {
	_, err := tx.ExecContext(ctx, insertLedgerSQL, ledgerArgs(r)...)
	return err
}

// LedgerRows returns the ledger rows of a response in the order written, or
// every row when responseID is empty.
func (db *DB) LedgerRows(ctx context.Context, responseID string) ([]store.LedgerRow, error) {
	const cols = `SELECT response_id, created_at, model, transport, engine, input_tokens, cached_tokens, output_tokens, stored FROM usage_ledger`
	var (
		rows *sql.Rows
		err  error
	)
	if responseID == "" {
		rows, err = db.r.QueryContext(ctx, cols+` ORDER BY seq`)
	} else {
		rows, err = db.r.QueryContext(ctx, cols+` WHERE response_id = ? ORDER BY seq`, responseID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: ledger rows %q: %w", responseID, classify(err))
	}
	defer rows.Close()
	var out []store.LedgerRow
	for rows.Next() {
		var r store.LedgerRow
		if err := rows.Scan(&r.ResponseID, &r.CreatedAt, &r.Model, &r.Transport, &r.Engine,
			&r.InputTokens, &r.CachedTokens, &r.OutputTokens, &r.Stored); err != nil {
			return nil, fmt.Errorf("store: ledger rows %q: %w", responseID, classify(err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: ledger rows %q: %w", responseID, classify(err))
	}
	return out, nil
}
