package postgres

import (
	"context"
	"errors"
	"fmt"

	"agentloop/store"

	"github.com/jackc/pgx/v5"
)

// SaveTraces stores finished traces in one transaction; a trace stored
// already is kept as it is.
func (db *DB) SaveTraces(ctx context.Context, traces []store.Trace) error {
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, t := range traces {
			b.Queue(`INSERT INTO traces (response_id, replica, started_unix_ns, trace) VALUES ($1, $2, $3, $4)
				ON CONFLICT (response_id) DO NOTHING`, t.ResponseID, t.Replica, t.StartedUnixNS, string(t.JSON))
		}
		return tx.SendBatch(ctx, &b).Close()
	})
}

// GetTrace reads one trace by response id, or store.ErrNotFound.
func (db *DB) GetTrace(ctx context.Context, responseID string) (store.Trace, error) {
	t := store.Trace{ResponseID: responseID}
	var body string
	err := db.pool.QueryRow(ctx, `SELECT replica, started_unix_ns, trace FROM traces WHERE response_id = $1`, responseID).
		Scan(&t.Replica, &t.StartedUnixNS, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, store.ErrNotFound
	}
	if err != nil {
		return t, fmt.Errorf("store: get trace %s: %w", responseID, classify(err))
	}
	t.JSON = []byte(body)
	return t, nil
}
