package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"agentloop/store"
)

// SaveWorkload stores a workload; store.ErrExists when its id is taken.
func (db *DB) SaveWorkload(ctx context.Context, w *store.Workload) error {
	if w.ID == "" {
		return errors.New("store: save workload: empty id")
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO workloads (id, created_at, source, turns, json) VALUES (?, ?, ?, ?, ?)`,
			w.ID, w.CreatedAt.UnixNano(), w.Source, w.Turns, w.JSON)
		return err
	})
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: workload %s", store.ErrExists, w.ID)
		}
		return fmt.Errorf("store: save workload: %w", err)
	}
	return nil
}

// GetWorkload returns a workload; store.ErrNotFound when there is none.
func (db *DB) GetWorkload(ctx context.Context, id string) (*store.Workload, error) {
	w := &store.Workload{ID: id}
	var created int64
	err := db.r.QueryRowContext(ctx, `SELECT created_at, source, turns, json FROM workloads WHERE id = ?`, id).
		Scan(&created, &w.Source, &w.Turns, &w.JSON)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: workload %s", store.ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get workload: %w", classify(err))
	}
	w.CreatedAt = time.Unix(0, created)
	return w, nil
}

// ListWorkloads returns up to limit workloads (1 to 1000, default 50),
// newest first, without their JSON.
func (db *DB) ListWorkloads(ctx context.Context, limit int) ([]store.Workload, error) {
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	rows, err := db.r.QueryContext(ctx, `SELECT id, created_at, source, turns FROM workloads ORDER BY created_at DESC, id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: list workloads: %w", classify(err))
	}
	defer rows.Close()
	var out []store.Workload
	for rows.Next() {
		var w store.Workload
		var created int64
		if err := rows.Scan(&w.ID, &created, &w.Source, &w.Turns); err != nil {
			return nil, fmt.Errorf("store: list workloads: %w", classify(err))
		}
		w.CreatedAt = time.Unix(0, created)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list workloads: %w", classify(err))
	}
	return out, nil
}

// DeleteWorkload deletes a workload; store.ErrNotFound when there is none.
func (db *DB) DeleteWorkload(ctx context.Context, id string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM workloads WHERE id = ?`, id)
		if err != nil {
			return err
		}
		return expectOneRow(res, "workload "+id)
	})
	return wrapRunError("delete workload "+id, err)
}
