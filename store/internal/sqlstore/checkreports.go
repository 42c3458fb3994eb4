package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"agentloop/store"
)

// SaveCheckReport stores a report card under its id.
func (s *Store) SaveCheckReport(ctx context.Context, r *store.CheckReport) error {
	if r.ID == "" {
		return errors.New("store: save check report: empty id")
	}
	err := s.c.Write(ctx, func(c Conn) error {
		_, err := c.Exec(ctx, s.q(`INSERT INTO check_reports (id, created_at, client, passed, failed, not_exercised, json)
			VALUES (?, ?, ?, ?, ?, ?, ?)`),
			r.ID, r.CreatedAt.UnixNano(), r.Client, r.Passed, r.Failed, r.NotExercised, r.JSON)
		return err
	})
	return wrap("save check report "+r.ID, err)
}

// GetCheckReport returns a report card; store.ErrNotFound when there is
// none.
func (s *Store) GetCheckReport(ctx context.Context, id string) (*store.CheckReport, error) {
	r := &store.CheckReport{ID: id}
	var created int64
	err := s.c.Reader.QueryRow(ctx, s.q(`SELECT created_at, client, passed, failed, not_exercised, json FROM check_reports WHERE id = ?`), id).
		Scan(&created, &r.Client, &r.Passed, &r.Failed, &r.NotExercised, &r.JSON)
	if s.isNoRows(err) {
		return nil, notFound("check report " + id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get check report: %w", s.c.Dialect.Classify(err))
	}
	r.CreatedAt = unixNano(created)
	return r, nil
}

// ListCheckReports returns up to limit report cards (1 to 1000, default
// 50), newest first, without their JSON.
func (s *Store) ListCheckReports(ctx context.Context, limit int) ([]store.CheckReport, error) {
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	rows, err := s.c.Reader.Query(ctx, s.q(`SELECT id, created_at, client, passed, failed, not_exercised FROM check_reports
		ORDER BY created_at DESC, id LIMIT ?`), limit)
	out, err := collect(rows, err, func(row Row) (store.CheckReport, error) {
		var r store.CheckReport
		var created int64
		err := row.Scan(&r.ID, &created, &r.Client, &r.Passed, &r.Failed, &r.NotExercised)
		r.CreatedAt = unixNano(created)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list check reports: %w", s.c.Dialect.Classify(err))
	}
	return out, nil
}
