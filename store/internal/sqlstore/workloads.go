package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"agentloop/store"
)

// SaveWorkload stores a workload; store.ErrExists when its id is taken.
func (s *Store) SaveWorkload(ctx context.Context, w *store.Workload) error {
	if w.ID == "" {
		return errors.New("store: save workload: empty id")
	}
	err := s.c.Write(ctx, func(c Conn) error {
		_, err := c.Exec(ctx, s.q(`INSERT INTO workloads (id, created_at, source, turns, json) VALUES (?, ?, ?, ?, ?)`),
			w.ID, w.CreatedAt.UnixNano(), w.Source, w.Turns, w.JSON)
		return err
	})
	if err != nil {
		if s.c.Dialect.IsUniqueViolation(err) {
			return fmt.Errorf("%w: workload %s", store.ErrExists, w.ID)
		}
		return fmt.Errorf("store: save workload: %w", err)
	}
	return nil
}

// GetWorkload returns a workload; store.ErrNotFound when there is none.
func (s *Store) GetWorkload(ctx context.Context, id string) (*store.Workload, error) {
	w := &store.Workload{ID: id}
	var created int64
	err := s.c.Reader.QueryRow(ctx, s.q(`SELECT created_at, source, turns, json FROM workloads WHERE id = ?`), id).
		Scan(&created, &w.Source, &w.Turns, &w.JSON)
	if s.isNoRows(err) {
		return nil, notFound("workload " + id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get workload: %w", s.c.Dialect.Classify(err))
	}
	w.CreatedAt = unixNano(created)
	return w, nil
}

// ListWorkloads returns up to limit workloads (1 to 1000, default 50),
// newest first, without their JSON.
func (s *Store) ListWorkloads(ctx context.Context, limit int) ([]store.Workload, error) {
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	rows, err := s.c.Reader.Query(ctx, s.q(`SELECT id, created_at, source, turns FROM workloads ORDER BY created_at DESC, id LIMIT ?`), limit)
	out, err := collect(rows, err, func(row Row) (store.Workload, error) {
		var w store.Workload
		var created int64
		err := row.Scan(&w.ID, &created, &w.Source, &w.Turns)
		w.CreatedAt = unixNano(created)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list workloads: %w", s.c.Dialect.Classify(err))
	}
	return out, nil
}

// DeleteWorkload deletes a workload; store.ErrNotFound when there is none.
func (s *Store) DeleteWorkload(ctx context.Context, id string) error {
	err := s.c.Write(ctx, func(c Conn) error {
		n, err := c.Exec(ctx, s.q(`DELETE FROM workloads WHERE id = ?`), id)
		return expectOne(n, err, "workload "+id)
	})
	return wrap("delete workload "+id, err)
}
