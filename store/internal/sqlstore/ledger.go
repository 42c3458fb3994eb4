package sqlstore

import (
	"context"
	"fmt"

	"agentloop/store"
)

// LedgerColumns are usage_ledger's columns in the order of LedgerArgs.
var LedgerColumns = []string{"response_id", "created_at", "model", "transport", "engine",
	"input_tokens", "cached_tokens", "output_tokens", "stored"}

// InsertLedger inserts one ledger row, its arguments from LedgerArgs.
const InsertLedger = `INSERT INTO usage_ledger
	(response_id, created_at, model, transport, engine, input_tokens, cached_tokens, output_tokens, stored)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// LedgerArgs are a ledger row's values in the order of LedgerColumns.
func LedgerArgs(r store.LedgerRow) []any {
	return []any{r.ResponseID, r.CreatedAt, r.Model, r.Transport, r.Engine,
		r.InputTokens, r.CachedTokens, r.OutputTokens, r.Stored}
}

// AppendLedger queues a ledger row for the group-commit writer; the row is
// durable within ledger.DurabilityWindow. It never waits for the database, but when
// the queue is full it waits for room rather than drop the row.
func (s *Store) AppendLedger(row store.LedgerRow) { s.c.Ledger.Append(row) }

// FlushLedger waits until every row appended before the call is durable.
func (s *Store) FlushLedger(ctx context.Context) error { return s.c.Ledger.Flush(ctx) }

// LedgerRows returns the ledger rows of a response in the order written, or
// every row when responseID is empty.
func (s *Store) LedgerRows(ctx context.Context, responseID string) ([]store.LedgerRow, error) {
	const cols = `SELECT response_id, created_at, model, transport, engine, input_tokens, cached_tokens, output_tokens, stored FROM usage_ledger`
	var (
		rows Rows
		err  error
	)
	if responseID == "" {
		rows, err = s.c.Reader.Query(ctx, cols+` ORDER BY seq`)
	} else {
		rows, err = s.c.Reader.Query(ctx, s.q(cols+` WHERE response_id = ? ORDER BY seq`), responseID)
	}
	out, err := collect(rows, err, func(row Row) (store.LedgerRow, error) {
		var r store.LedgerRow
		err := row.Scan(&r.ResponseID, &r.CreatedAt, &r.Model, &r.Transport, &r.Engine,
			&r.InputTokens, &r.CachedTokens, &r.OutputTokens, &r.Stored)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: ledger rows %q: %w", responseID, s.c.Dialect.Classify(err))
	}
	return out, nil
}
