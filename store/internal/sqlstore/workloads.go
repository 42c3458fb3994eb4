package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"agentloop/store"
)

// SaveWorkload stores a workload under its id, which names its content
// (workload.ID): saving an id already stored keeps the stored copy and
// moves its time to w's, later, so retention counts from the last save.
func (s *Store) SaveWorkload(ctx context.Context, w *store.Workload) error {
	if w.ID == "" {
		return errors.New("store: save workload: empty id")
	}
	err := s.c.Write(ctx, func(c Conn) error {
		_, err := c.Exec(ctx, s.q(`INSERT INTO workloads (id, created_at, source, turns, json) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET created_at = CASE WHEN excluded.created_at > workloads.created_at
				THEN excluded.created_at ELSE workloads.created_at END`),
			w.ID, w.CreatedAt.UnixNano(), w.Source, w.Turns, w.JSON)
		return err
	})
	return wrap("save workload "+w.ID, err)
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

// DeleteWorkload deletes a workload; store.ErrNotFound when there is
// none, store.ErrInUse while a record names it (workloadReferrers).
func (s *Store) DeleteWorkload(ctx context.Context, id string) error {
	err := s.c.Write(ctx, func(c Conn) error {
		var named bool
		if err := c.QueryRow(ctx, s.q(`SELECT `+workloadNamed("?")), id).Scan(&named); err != nil {
			return err
		}
		if named {
			return fmt.Errorf("%w: workload %s", store.ErrInUse, id)
		}
		n, err := c.Exec(ctx, s.q(`DELETE FROM workloads WHERE id = ?`), id)
		return expectOne(n, err, "workload "+id)
	})
	if errors.Is(err, store.ErrInUse) {
		return err
	}
	return wrap("delete workload "+id, err)
}

// workloadReferrers are the tables whose rows name a workload in a
// workload_id column; retention and DeleteWorkload keep a workload any of
// their rows names. A record that comes to name workloads (an inspector
// session, a corpus entry) joins by adding its table here.
var workloadReferrers = []string{"runs"}

// workloadNamed is SQL that is true when a referrer names the workload
// whose id is the expression id.
func workloadNamed(id string) string {
	parts := make([]string, len(workloadReferrers))
	for i, t := range workloadReferrers {
		parts[i] = `EXISTS (SELECT 1 FROM ` + t + ` WHERE workload_id = ` + id + `)`
	}
	return `(` + strings.Join(parts, ` OR `) + `)`
}
