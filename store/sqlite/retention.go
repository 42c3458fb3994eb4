package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"agentloop/store"
)

// retentionBatch is how many rows one sweep transaction deletes, so the
// writer is never held for long.
const retentionBatch = store.RetentionBatch

// Sweep deletes stored responses and finished runs created before cutoff,
// and the inspector's sessions idle since before it,
// in small transactions, then returns the freed pages to the file system a
// little at a time. A stored child of a swept response stays readable: each
// response lists its whole context, and items still listed stay.
func (db *DB) Sweep(ctx context.Context, cutoff time.Time) (store.Swept, error) {
	var s store.Swept
	for {
		n, err := db.sweepBatch(ctx, `SELECT id FROM responses WHERE created_at < ? ORDER BY created_at LIMIT ?`,
			cutoff.Unix(), func(tx *sql.Tx, id string) error { return deleteResponse(ctx, tx, id) })
		s.Responses += n
		if err != nil {
			return s, fmt.Errorf("store: sweep responses: %w", classify(err))
		}
		if n < retentionBatch {
			break
		}
	}
	for {
		// A run that is queued or running belongs to a live race; its rows
		// go with it (ON DELETE CASCADE: lanes, turns, spans).
		n, err := db.sweepBatch(ctx, `SELECT id FROM runs WHERE created_at < ? AND status NOT IN ('queued', 'running')
			ORDER BY created_at LIMIT ?`, cutoff.UnixNano(), func(tx *sql.Tx, id string) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, id)
			return err
		})
		s.Runs += n
		if err != nil {
			return s, fmt.Errorf("store: sweep runs: %w", classify(err))
		}
		if n < retentionBatch {
			break
		}
	}
	for {
		// An inspected session goes with its turns (ON DELETE CASCADE).
		n, err := db.sweepBatch(ctx, `SELECT id FROM inspect_sessions WHERE updated_at < ? ORDER BY updated_at LIMIT ?`,
			cutoff.UnixNano(), func(tx *sql.Tx, id string) error {
				_, err := tx.ExecContext(ctx, `DELETE FROM inspect_sessions WHERE id = ?`, id)
				return err
			})
		s.Sessions += n
		if err != nil {
			return s, fmt.Errorf("store: sweep inspected sessions: %w", classify(err))
		}
		if n < retentionBatch {
			break
		}
	}
	for {
		// Workloads are kept like runs: a race that replayed one keeps its
		// own copy in its config.
		n, err := db.sweepBatch(ctx, `SELECT id FROM workloads WHERE created_at < ? ORDER BY created_at LIMIT ?`, cutoff.UnixNano(), func(tx *sql.Tx, id string) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM workloads WHERE id = ?`, id)
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
	if s.Responses+s.Runs+s.Sessions+s.Workloads > 0 {
		// Incremental: a few hundred pages per statement, never a full VACUUM.
		if _, err := db.w.ExecContext(ctx, `PRAGMA incremental_vacuum(512)`); err != nil {
			return s, fmt.Errorf("store: incremental vacuum: %w", classify(err))
		}
	}
	return s, nil
}

// sweepBatch deletes up to retentionBatch rows that query selects, in one
// write transaction.
func (db *DB) sweepBatch(ctx context.Context, query string, cutoff int64, del func(*sql.Tx, string) error) (int, error) {
	n := 0
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, cutoff, retentionBatch)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			if err := del(tx, id); err != nil {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// incrementalVacuum makes the file give freed pages back on request
// (PRAGMA incremental_vacuum) instead of never. A new file takes the mode
// before its first table; an older one is rebuilt once with VACUUM.
func incrementalVacuum(ctx context.Context, w *sql.DB) error {
	var mode int
	if err := w.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return err
	}
	const incremental = 2
	if mode == incremental {
		return nil
	}
	if _, err := w.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
		return err
	}
	var tables int
	if err := w.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&tables); err != nil {
		return err
	}
	if tables > 0 {
		_, err := w.ExecContext(ctx, `VACUUM`)
		return err
	}
	return nil
}
