package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentloop/store"
)

// CreateRun stores a new run. A zero CreatedAt becomes now, a zero UpdatedAt
// becomes CreatedAt and an empty Status becomes queued; the defaults are
// written back into r.
func (db *DB) CreateRun(ctx context.Context, r *store.Run) error {
	if r.ID == "" {
		return errors.New("store: create run: empty id")
	}
	created, updated, status := r.CreatedAt, r.UpdatedAt, r.Status
	if created.IsZero() {
		created = time.Now()
	}
	if updated.IsZero() {
		updated = created
	}
	if status == "" {
		status = store.RunQueued
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, created_at, updated_at, scenario, profile, status, config, summary, replica)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, created.UnixNano(), updated.UnixNano(), r.Scenario, r.Profile, status, r.Config, r.Summary, r.Replica)
		return err
	})
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: run %s", store.ErrExists, r.ID)
		}
		return fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	r.CreatedAt, r.UpdatedAt, r.Status = created, updated, status
	return nil
}

// UpdateRun sets a run's status and summary and touches UpdatedAt. An empty
// status or a nil summary keeps the stored value.
func (db *DB) UpdateRun(ctx context.Context, id, status string, summary []byte) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET
			status = COALESCE(NULLIF(?, ''), status),
			summary = COALESCE(?, summary),
			updated_at = ?
			WHERE id = ?`, status, summary, time.Now().UnixNano(), id)
		if err != nil {
			return err
		}
		return expectOneRow(res, "run "+id)
	})
	return wrapRunError("update run "+id, err)
}

// SaveLane inserts or updates a lane of an existing run. A nil Summary keeps
// the stored one.
func (db *DB) SaveLane(ctx context.Context, l *store.Lane) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO lanes (run_id, name, status, summary) VALUES (?, ?, ?, ?)
			ON CONFLICT (run_id, name) DO UPDATE SET
				status = excluded.status,
				summary = COALESCE(excluded.summary, lanes.summary)`,
			l.RunID, l.Name, l.Status, l.Summary)
		if isForeignKeyViolation(err) {
			return fmt.Errorf("%w: run %s", store.ErrNotFound, l.RunID)
		}
		return err
	})
	return wrapRunError("save lane "+l.RunID+"/"+l.Name, err)
}

// SaveTurn stores a turn with its spans in one transaction: all or nothing.
// Saving the same turn again replaces it and its spans. The spans are stored
// under t's run, lane, repeat and index, whatever their own fields say.
func (db *DB) SaveTurn(ctx context.Context, t *store.Turn, spans []store.Span) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO turns (run_id, lane, repeat, idx, response_id, timings, request, output)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (run_id, lane, repeat, idx) DO UPDATE SET
				response_id = excluded.response_id,
				timings = excluded.timings,
				request = excluded.request,
				output = excluded.output`,
			t.RunID, t.Lane, t.Repeat, t.Index, t.ResponseID, t.Timings, t.Request, t.Output)
		if isForeignKeyViolation(err) {
			return fmt.Errorf("%w: run %s", store.ErrNotFound, t.RunID)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM spans WHERE run_id = ? AND lane = ? AND repeat = ? AND turn_index = ?`,
			t.RunID, t.Lane, t.Repeat, t.Index); err != nil {
			return err
		}
		if len(spans) == 0 {
			return nil
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO spans
			(run_id, lane, repeat, turn_index, response_id, name, kind, start_ns, duration_ns, items, tokens, bytes)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, s := range spans {
			if _, err := stmt.ExecContext(ctx, t.RunID, t.Lane, t.Repeat, t.Index, s.ResponseID, s.Name, s.Kind,
				s.StartNS, s.DurationNS, s.Items, s.Tokens, s.Bytes); err != nil {
				return fmt.Errorf("span %q: %w", s.Name, err)
			}
		}
		return nil
	})
	return wrapRunError(fmt.Sprintf("save turn %s/%s/%d/%d", t.RunID, t.Lane, t.Repeat, t.Index), err)
}

// GetRun loads a run and its lanes, in the order the lanes were first saved.
func (db *DB) GetRun(ctx context.Context, id string) (*store.Run, []store.Lane, error) {
	var (
		run   *store.Run
		lanes []store.Lane
	)
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		run, err = scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: run %s", store.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT run_id, name, status, summary FROM lanes WHERE run_id = ? ORDER BY seq`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l store.Lane
			if err := rows.Scan(&l.RunID, &l.Name, &l.Status, &l.Summary); err != nil {
				return err
			}
			lanes = append(lanes, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, wrapRunError("get run "+id, err)
	}
	return run, lanes, nil
}

// RunTurns loads a run's turns ordered by lane, repeat and index, and their
// spans in the same order, then by start.
func (db *DB) RunTurns(ctx context.Context, runID string) ([]store.Turn, []store.Span, error) {
	var (
		turns []store.Turn
		spans []store.Span
	)
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE id = ?`, runID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: run %s", store.ErrNotFound, runID)
		}
		rows, err := tx.QueryContext(ctx, `SELECT run_id, lane, repeat, idx, response_id, timings, request, output
			FROM turns WHERE run_id = ? ORDER BY lane, repeat, idx`, runID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t store.Turn
			if err := rows.Scan(&t.RunID, &t.Lane, &t.Repeat, &t.Index, &t.ResponseID, &t.Timings, &t.Request, &t.Output); err != nil {
				return err
			}
			turns = append(turns, t)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		srows, err := tx.QueryContext(ctx, `SELECT run_id, lane, repeat, turn_index, response_id, name, kind,
			start_ns, duration_ns, items, tokens, bytes
			FROM spans WHERE run_id = ? ORDER BY lane, repeat, turn_index, start_ns, seq`, runID)
		if err != nil {
			return err
		}
		defer srows.Close()
		for srows.Next() {
			var s store.Span
			if err := srows.Scan(&s.RunID, &s.Lane, &s.Repeat, &s.TurnIndex, &s.ResponseID, &s.Name, &s.Kind,
				&s.StartNS, &s.DurationNS, &s.Items, &s.Tokens, &s.Bytes); err != nil {
				return err
			}
			spans = append(spans, s)
		}
		return srows.Err()
	})
	if err != nil {
		return nil, nil, wrapRunError("run turns "+runID, err)
	}
	return turns, spans, nil
}

// ListRuns returns the runs f selects, newest first.
func (db *DB) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	var (
		where []string
		args  []any
	)
	if f.Scenario != "" {
		where, args = append(where, "scenario = ?"), append(args, f.Scenario)
	}
	if f.Profile != "" {
		where, args = append(where, "profile = ?"), append(args, f.Profile)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		where, args = append(where, "created_at < ?"), append(args, f.Until.UnixNano())
	}
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = 50
	case limit > 1000:
		limit = 1000
	}
	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)

	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", classify(err))
	}
	defer rows.Close()
	var runs []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list runs: %w", classify(err))
		}
		runs = append(runs, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list runs: %w", classify(err))
	}
	return runs, nil
}

// DeleteRun deletes a run with its lanes, turns and spans.
func (db *DB) DeleteRun(ctx context.Context, id string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, id)
		if err != nil {
			return err
		}
		return expectOneRow(res, "run "+id)
	})
	return wrapRunError("delete run "+id, err)
}

// MarkInterrupted is called at start-up: the runs this replica left
// queued or running, and those any replica created before staleBefore
// (no race outlives its time limit), become interrupted with their lanes.
// It returns how many runs changed.
func (db *DB) MarkInterrupted(ctx context.Context, replica string, staleBefore time.Time) (int, error) {
	var n int64
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'interrupted', updated_at = ?
			WHERE status IN ('queued', 'running') AND (replica = ? OR created_at < ?)`,
			time.Now().UnixNano(), replica, staleBefore.UnixNano())
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE lanes SET status = 'interrupted' WHERE status IN ('queued', 'running')
			AND run_id IN (SELECT id FROM runs WHERE status NOT IN ('queued', 'running'))`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: mark interrupted: %w", err)
	}
	return int(n), nil
}

const runColumns = `id, created_at, updated_at, scenario, profile, status, config, summary, replica`

type rowScanner interface{ Scan(dest ...any) error }

func scanRun(s rowScanner) (*store.Run, error) {
	var (
		r                store.Run
		created, updated int64
	)
	err := s.Scan(&r.ID, &created, &updated, &r.Scenario, &r.Profile, &r.Status, &r.Config, &r.Summary, &r.Replica)
	if err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt = time.Unix(0, created), time.Unix(0, updated)
	return &r, nil
}

func expectOneRow(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", store.ErrNotFound, what)
	}
	return nil
}

// wrapRunError leaves ErrNotFound as it is and prefixes anything else.
func wrapRunError(op string, err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return err
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
