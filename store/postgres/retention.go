package postgres

import (
	"context"
	"fmt"
	"time"

	"agentloop/store"

	"github.com/jackc/pgx/v5"
)

// Sweep deletes stored responses and finished runs created before cutoff,
// in small transactions (store.RetentionBatch rows each). A stored child of
// a swept response stays readable: each response lists its whole context,
// and items still listed stay. PostgreSQL's autovacuum reclaims the space.
func (db *DB) Sweep(ctx context.Context, cutoff time.Time) (store.Swept, error) {
	var s store.Swept
	for {
		n, err := db.sweepBatch(ctx, `SELECT id FROM responses WHERE created_at < $1 ORDER BY created_at LIMIT $2`,
			cutoff.Unix(), func(tx pgx.Tx, id string) error { return deleteResponse(ctx, tx, id) })
		s.Responses += n
		if err != nil {
			return s, fmt.Errorf("store: sweep responses: %w", err)
		}
		if n < store.RetentionBatch {
			break
		}
	}
	for {
		// A run that is queued or running belongs to a live race; its rows
		// go with it (ON DELETE CASCADE: lanes, turns, spans).
		n, err := db.sweepBatch(ctx, `SELECT id FROM runs WHERE created_at < $1 AND status NOT IN ('queued', 'running')
			ORDER BY created_at LIMIT $2`, cutoff.UnixNano(), func(tx pgx.Tx, id string) error {
			_, err := tx.Exec(ctx, `DELETE FROM runs WHERE id = $1`, id)
			return err
		})
		s.Runs += n
		if err != nil {
			return s, fmt.Errorf("store: sweep runs: %w", err)
		}
		if n < store.RetentionBatch {
			break
		}
	}
	for {
		// An inspected session goes with its turns (ON DELETE CASCADE).
		n, err := db.sweepBatch(ctx, `SELECT id FROM inspect_sessions WHERE updated_at < $1
			ORDER BY updated_at LIMIT $2`, cutoff.UnixNano(), func(tx pgx.Tx, id string) error {
			_, err := tx.Exec(ctx, `DELETE FROM inspect_sessions WHERE id = $1`, id)
			return err
		})
		s.Sessions += n
		if err != nil {
			return s, fmt.Errorf("store: sweep inspected sessions: %w", err)
		}
		if n < store.RetentionBatch {
			break
		}
	}
	for {
		n, err := db.sweepBatch(ctx, `SELECT response_id FROM traces WHERE started_unix_ns < $1
			ORDER BY started_unix_ns LIMIT $2`, cutoff.UnixNano(), func(tx pgx.Tx, id string) error {
			_, err := tx.Exec(ctx, `DELETE FROM traces WHERE response_id = $1`, id)
			return err
		})
		s.Traces += n
		if err != nil {
			return s, fmt.Errorf("store: sweep traces: %w", err)
		}
		if n < store.RetentionBatch {
			break
		}
	}
	for {
		// Workloads are kept like runs: a race that replayed one keeps its
		// own copy in its config.
		n, err := db.sweepBatch(ctx, `SELECT id FROM workloads WHERE created_at < $1 ORDER BY created_at LIMIT $2`, cutoff.UnixNano(), func(tx pgx.Tx, id string) error {
			_, err := tx.Exec(ctx, `DELETE FROM workloads WHERE id = $1`, id)
			return err
		})
		s.Workloads += n
		if err != nil {
			return s, fmt.Errorf("store: sweep workloads: %w", err)
		}
		if n < store.RetentionBatch {
			break
		}
	}
	return s, nil
}

// sweepBatch deletes up to store.RetentionBatch rows that query selects,
// in one write transaction. A response another replica deleted meanwhile
// is skipped.
func (db *DB) sweepBatch(ctx context.Context, query string, cutoff int64, del func(pgx.Tx, string) error) (int, error) {
	n := 0
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		n = 0
		rows, err := tx.Query(ctx, query, cutoff, store.RetentionBatch)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := del(tx, id); err != nil && !isNotFound(err) {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}
