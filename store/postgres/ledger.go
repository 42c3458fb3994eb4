package postgres

import (
	"context"
	"fmt"
	"time"

	"agentloop/store"

	"github.com/jackc/pgx/v5"
)

// AppendLedger queues a ledger row for the group-commit writer; the row is
// durable within about 100 ms. It never waits for PostgreSQL, but when the
// queue is full it waits for room rather than drop the row.
func (db *DB) AppendLedger(row store.LedgerRow) { db.ledger.Append(row) }

// FlushLedger waits until every row appended before the call is durable.
func (db *DB) FlushLedger(ctx context.Context) error { return db.ledger.Flush(ctx) }

var ledgerColumns = []string{"response_id", "created_at", "model", "transport", "engine",
	"input_tokens", "cached_tokens", "output_tokens", "stored"}

// ledgerWriteTimeout bounds one commit of the ledger writer, which no
// caller's context does: a server that stops answering (a network
// partition, not a refused connection) fails the batch, which is retried,
// instead of holding the writer.
const ledgerWriteTimeout = 30 * time.Second

// writeLedger commits rows in one transaction with COPY, one round trip;
// the group-commit writer calls it.
func (db *DB) writeLedger(rows []store.LedgerRow) error {
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWriteTimeout)
	defer cancel()
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"usage_ledger"}, ledgerColumns,
			pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) { return ledgerArgs(rows[i]), nil }))
		return err
	})
}

const insertLedgerSQL = `INSERT INTO usage_ledger
	(response_id, created_at, model, transport, engine, input_tokens, cached_tokens, output_tokens, stored)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

func ledgerArgs(r store.LedgerRow) []any {
	return []any{r.ResponseID, r.CreatedAt, r.Model, r.Transport, r.Engine,
		r.InputTokens, r.CachedTokens, r.OutputTokens, r.Stored}
}

// LedgerRows returns the ledger rows of a response in the order written, or
// every row when responseID is empty.
func (db *DB) LedgerRows(ctx context.Context, responseID string) ([]store.LedgerRow, error) {
	rows, err := db.pool.Query(ctx, `SELECT response_id, created_at, model, transport, engine,
		input_tokens, cached_tokens, output_tokens, stored FROM usage_ledger
		WHERE $1 = '' OR response_id = $1 ORDER BY seq`, responseID)
	if err != nil {
		return nil, fmt.Errorf("store: ledger rows %q: %w", responseID, classify(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.LedgerRow, error) {
		var r store.LedgerRow
		err := row.Scan(&r.ResponseID, &r.CreatedAt, &r.Model, &r.Transport, &r.Engine,
			&r.InputTokens, &r.CachedTokens, &r.OutputTokens, &r.Stored)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: ledger rows %q: %w", responseID, classify(err))
	}
	return out, nil
}
