package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentloop/store"
)

// CreateRun stores a new run. A zero CreatedAt becomes now, a zero UpdatedAt
// becomes CreatedAt and an empty Status becomes queued; the defaults are
// written back into r.
func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
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
	err := s.c.Write(ctx, func(c Conn) error {
		_, err := c.Exec(ctx, s.q(`INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			r.ID, created.UnixNano(), updated.UnixNano(), r.Scenario, r.Profile, status, r.Config, r.Summary, r.Replica,
			startedNano(r.StartedAt), r.WorkloadID)
		return err
	})
	if err != nil {
		if s.c.Dialect.IsUniqueViolation(err) {
			return fmt.Errorf("%w: run %s", store.ErrExists, r.ID)
		}
		return fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	r.CreatedAt, r.UpdatedAt, r.Status = created, updated, status
	return nil
}

// UpdateRun sets a run's status and summary and touches UpdatedAt. An empty
// status or a nil summary keeps the stored value. The first update to
// running sets StartedAt.
func (s *Store) UpdateRun(ctx context.Context, id, status string, summary []byte) error {
	now := time.Now().UnixNano()
	err := s.c.Write(ctx, func(c Conn) error {
		n, err := c.Exec(ctx, s.q(`UPDATE runs SET
			status = COALESCE(NULLIF(?, ''), status),
			summary = COALESCE(?, summary),
			started_at = CASE WHEN started_at = 0 AND ? = 'running' THEN ? ELSE started_at END,
			updated_at = ?
			WHERE id = ?`), status, summary, status, now, now, id)
		return expectOne(n, err, "run "+id)
	})
	return wrap("update run "+id, err)
}

// SaveLane inserts or updates a lane of an existing run. A nil Summary keeps
// the stored one.
func (s *Store) SaveLane(ctx context.Context, l *store.Lane) error {
	err := s.c.Write(ctx, func(c Conn) error {
		_, err := c.Exec(ctx, s.q(`INSERT INTO lanes (run_id, name, status, summary) VALUES (?, ?, ?, ?)
			ON CONFLICT (run_id, name) DO UPDATE SET
				status = excluded.status,
				summary = COALESCE(excluded.summary, lanes.summary)`),
			l.RunID, l.Name, l.Status, l.Summary)
		if s.c.Dialect.IsForeignKeyViolation(err) {
			return notFound("run " + l.RunID)
		}
		return err
	})
	return wrap("save lane "+l.RunID+"/"+l.Name, err)
}

// SaveTurn stores a turn with its spans in one transaction: all or nothing.
// Saving the same turn again replaces it and its spans. The spans are stored
// under t's run, lane, repeat and index, whatever their own fields say.
func (s *Store) SaveTurn(ctx context.Context, t *store.Turn, spans []store.Span) error {
	stmts := []Stmt{
		{SQL: s.q(`INSERT INTO turns (run_id, lane, repeat, idx, response_id, timings, request, output)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (run_id, lane, repeat, idx) DO UPDATE SET
				response_id = excluded.response_id,
				timings = excluded.timings,
				request = excluded.request,
				output = excluded.output`),
			Args: []any{t.RunID, t.Lane, t.Repeat, t.Index, t.ResponseID, t.Timings, t.Request, t.Output}},
		{SQL: s.q(`DELETE FROM spans WHERE run_id = ? AND lane = ? AND repeat = ? AND turn_index = ?`),
			Args: []any{t.RunID, t.Lane, t.Repeat, t.Index}},
	}
	if len(spans) > 0 {
		stmts = append(stmts, s.c.SQL.InsertSpans(t, spans)...)
	}
	err := s.c.Write(ctx, func(c Conn) error {
		err := c.Batch(ctx, stmts)
		if s.c.Dialect.IsForeignKeyViolation(err) {
			return notFound("run " + t.RunID)
		}
		return err
	})
	return wrap(fmt.Sprintf("save turn %s/%s/%d/%d", t.RunID, t.Lane, t.Repeat, t.Index), err)
}

// GetRun loads a run and its lanes, in the order the lanes were first saved.
func (s *Store) GetRun(ctx context.Context, id string) (*store.Run, []store.Lane, error) {
	var (
		run   *store.Run
		lanes []store.Lane
	)
	err := s.c.Read(ctx, func(c Conn) error {
		var err error
		run, err = scanRun(c.QueryRow(ctx, s.q(`SELECT `+runColumns+` FROM runs WHERE id = ?`), id))
		if s.isNoRows(err) {
			return notFound("run " + id)
		}
		if err != nil {
			return err
		}
		rows, err := c.Query(ctx, s.q(`SELECT run_id, name, status, summary FROM lanes WHERE run_id = ? ORDER BY seq`), id)
		lanes, err = collect(rows, err, func(row Row) (store.Lane, error) {
			var l store.Lane
			err := row.Scan(&l.RunID, &l.Name, &l.Status, &l.Summary)
			return l, err
		})
		return err
	})
	if err != nil {
		return nil, nil, wrap("get run "+id, err)
	}
	return run, lanes, nil
}

// RunTurns loads a run's turns ordered by lane, repeat and index, and their
// spans in the same order, then by start.
func (s *Store) RunTurns(ctx context.Context, runID string) ([]store.Turn, []store.Span, error) {
	var (
		turns []store.Turn
		spans []store.Span
	)
	err := s.c.Read(ctx, func(c Conn) error {
		var exists bool
		if err := c.QueryRow(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?)`), runID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound("run " + runID)
		}
		rows, err := c.Query(ctx, s.q(`SELECT run_id, lane, repeat, idx, response_id, timings, request, output
			FROM turns WHERE run_id = ? ORDER BY lane`+s.c.Dialect.Bytewise+`, repeat, idx`), runID)
		turns, err = collect(rows, err, func(row Row) (store.Turn, error) {
			var t store.Turn
			err := row.Scan(&t.RunID, &t.Lane, &t.Repeat, &t.Index, &t.ResponseID, &t.Timings, &t.Request, &t.Output)
			return t, err
		})
		if err != nil {
			return err
		}
		rows, err = c.Query(ctx, s.q(`SELECT run_id, lane, repeat, turn_index, response_id, name, kind,
			start_ns, duration_ns, items, tokens, bytes
			FROM spans WHERE run_id = ? ORDER BY lane`+s.c.Dialect.Bytewise+`, repeat, turn_index, start_ns, seq`), runID)
		spans, err = collect(rows, err, func(row Row) (store.Span, error) {
			var sp store.Span
			err := row.Scan(&sp.RunID, &sp.Lane, &sp.Repeat, &sp.TurnIndex, &sp.ResponseID, &sp.Name, &sp.Kind,
				&sp.StartNS, &sp.DurationNS, &sp.Items, &sp.Tokens, &sp.Bytes)
			return sp, err
		})
		return err
	})
	if err != nil {
		return nil, nil, wrap("run turns "+runID, err)
	}
	return turns, spans, nil
}

// ListRuns returns the runs f selects, newest first, and their lanes, in
// one read transaction of two queries.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, []store.Lane, error) {
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
	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	order := ` ORDER BY created_at DESC, id` + s.c.Dialect.Bytewise + ` DESC LIMIT ?`
	args = append(args, clamp(f.Limit, 50, 1000))
	var (
		runs  []store.Run
		lanes []store.Lane
	)
	err := s.c.Read(ctx, func(c Conn) error {
		rows, err := c.Query(ctx, s.q(q+order), args...)
		runs, err = collect(rows, err, func(row Row) (store.Run, error) {
			r, err := scanRun(row)
			if err != nil {
				return store.Run{}, err
			}
			return *r, nil
		})
		if err != nil || len(runs) == 0 {
			return err
		}
		// The same selection again, joined: its lanes.
		rows, err = c.Query(ctx, s.q(`SELECT l.run_id, l.name, l.status, l.summary FROM lanes AS l
			JOIN (SELECT id, created_at FROM runs`+strings.TrimPrefix(q, `SELECT `+runColumns+` FROM runs`)+order+`) AS r ON r.id = l.run_id
			ORDER BY r.created_at DESC, r.id`+s.c.Dialect.Bytewise+` DESC, l.seq`), args...)
		lanes, err = collect(rows, err, func(row Row) (store.Lane, error) {
			var l store.Lane
			err := row.Scan(&l.RunID, &l.Name, &l.Status, &l.Summary)
			return l, err
		})
		return err
	})
	if err != nil {
		return nil, nil, wrap("list runs", err)
	}
	return runs, lanes, nil
}

// DeleteRun deletes a run with its lanes, turns and spans.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	err := s.c.Write(ctx, func(c Conn) error {
		n, err := c.Exec(ctx, s.q(`DELETE FROM runs WHERE id = ?`), id)
		return expectOne(n, err, "run "+id)
	})
	return wrap("delete run "+id, err)
}

// MarkInterrupted is called at start-up: the runs this replica left
// queued or running, and those any replica created before staleBefore
// (no race outlives its time limit), become interrupted with their lanes.
// It returns how many runs changed.
func (s *Store) MarkInterrupted(ctx context.Context, replica string, staleBefore time.Time) (int, error) {
	var n int64
	err := s.c.Write(ctx, func(c Conn) error {
		var err error
		n, err = c.Exec(ctx, s.q(`UPDATE runs SET status = 'interrupted', updated_at = ?
			WHERE status IN ('queued', 'running') AND (replica = ? OR created_at < ?)`),
			time.Now().UnixNano(), replica, staleBefore.UnixNano())
		if err != nil {
			return err
		}
		_, err = c.Exec(ctx, `UPDATE lanes SET status = 'interrupted' WHERE status IN ('queued', 'running')
			AND run_id IN (SELECT id FROM runs WHERE status NOT IN ('queued', 'running'))`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: mark interrupted: %w", err)
	}
	return int(n), nil
}

const runColumns = `id, created_at, updated_at, scenario, profile, status, config, summary, replica, started_at, workload_id`

func scanRun(row Row) (*store.Run, error) {
	var (
		r                         store.Run
		created, updated, started int64
	)
	err := row.Scan(&r.ID, &created, &updated, &r.Scenario, &r.Profile, &r.Status, &r.Config, &r.Summary, &r.Replica, &started, &r.WorkloadID)
	if err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt = unixNano(created), unixNano(updated)
	if started != 0 {
		r.StartedAt = unixNano(started)
	}
	return &r, nil
}

// startedNano is a run's StartedAt as stored: 0 when unset.
func startedNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
