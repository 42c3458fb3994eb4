package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"agentloop/store"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO runs (id, created_at, updated_at, scenario, profile, status, config, summary, replica)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
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
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET
			status = COALESCE(NULLIF($1, ''), status),
			summary = COALESCE($2, summary),
			updated_at = $3
			WHERE id = $4`, status, summary, time.Now().UnixNano(), id)
		if err != nil {
			return err
		}
		return expectOneRow(tag, "run "+id)
	})
	return wrapRunError("update run "+id, err)
}

// SaveLane inserts or updates a lane of an existing run. A nil Summary keeps
// the stored one.
func (db *DB) SaveLane(ctx context.Context, l *store.Lane) error {
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO lanes (run_id, name, status, summary) VALUES ($1, $2, $3, $4)
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
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO turns (run_id, lane, repeat, idx, response_id, timings, request, output)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (run_id, lane, repeat, idx) DO UPDATE SET
				response_id = excluded.response_id,
				timings = excluded.timings,
				request = excluded.request,
				output = excluded.output`,
			t.RunID, t.Lane, t.Repeat, t.Index, t.ResponseID, t.Timings, t.Request, t.Output)
		b.Queue(`DELETE FROM spans WHERE run_id = $1 AND lane = $2 AND repeat = $3 AND turn_index = $4`,
			t.RunID, t.Lane, t.Repeat, t.Index)
		if len(spans) > 0 {
			n := len(spans)
			var (
				responseIDs, names, kinds            = make([]string, n), make([]string, n), make([]string, n)
				starts, durations, items, tokens, bs = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
			)
			for i, s := range spans {
				responseIDs[i], names[i], kinds[i] = s.ResponseID, s.Name, s.Kind
				starts[i], durations[i], items[i], tokens[i], bs[i] = s.StartNS, s.DurationNS, s.Items, s.Tokens, s.Bytes
			}
			b.Queue(`INSERT INTO spans
				(run_id, lane, repeat, turn_index, response_id, name, kind, start_ns, duration_ns, items, tokens, bytes)
				SELECT $1, $2, $3, $4, s.* FROM unnest($5::text[], $6::text[], $7::text[],
					$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[]) AS s`,
				t.RunID, t.Lane, t.Repeat, t.Index, responseIDs, names, kinds, starts, durations, items, tokens, bs)
		}
		err := tx.SendBatch(ctx, b).Close()
		if isForeignKeyViolation(err) {
			return fmt.Errorf("%w: run %s", store.ErrNotFound, t.RunID)
		}
		return err
	})
	return wrapRunError(fmt.Sprintf("save turn %s/%s/%d/%d", t.RunID, t.Lane, t.Repeat, t.Index), err)
}

// GetRun loads a run and its lanes, in the order the lanes were first saved.
func (db *DB) GetRun(ctx context.Context, id string) (*store.Run, []store.Lane, error) {
	var (
		run   *store.Run
		lanes []store.Lane
	)
	err := db.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		run, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: run %s", store.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT run_id, name, status, summary FROM lanes WHERE run_id = $1 ORDER BY seq`, id)
		if err != nil {
			return err
		}
		lanes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Lane, error) {
			var l store.Lane
			err := row.Scan(&l.RunID, &l.Name, &l.Status, &l.Summary)
			return l, err
		})
		return err
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
	err := db.readTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1)`, runID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("%w: run %s", store.ErrNotFound, runID)
		}
		rows, err := tx.Query(ctx, `SELECT run_id, lane, repeat, idx, response_id, timings, request, output
			FROM turns WHERE run_id = $1 ORDER BY lane COLLATE "C", repeat, idx`, runID)
		if err != nil {
			return err
		}
		turns, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Turn, error) {
			var t store.Turn
			err := row.Scan(&t.RunID, &t.Lane, &t.Repeat, &t.Index, &t.ResponseID, &t.Timings, &t.Request, &t.Output)
			return t, err
		})
		if err != nil {
			return err
		}
		srows, err := tx.Query(ctx, `SELECT run_id, lane, repeat, turn_index, response_id, name, kind,
			start_ns, duration_ns, items, tokens, bytes
			FROM spans WHERE run_id = $1 ORDER BY lane COLLATE "C", repeat, turn_index, start_ns, seq`, runID)
		if err != nil {
			return err
		}
		spans, err = pgx.CollectRows(srows, func(row pgx.CollectableRow) (store.Span, error) {
			var s store.Span
			err := row.Scan(&s.RunID, &s.Lane, &s.Repeat, &s.TurnIndex, &s.ResponseID, &s.Name, &s.Kind,
				&s.StartNS, &s.DurationNS, &s.Items, &s.Tokens, &s.Bytes)
			return s, err
		})
		return err
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
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Scenario != "" {
		where = append(where, "scenario = "+arg(f.Scenario))
	}
	if f.Profile != "" {
		where = append(where, "profile = "+arg(f.Profile))
	}
	if !f.Since.IsZero() {
		where = append(where, "created_at >= "+arg(f.Since.UnixNano()))
	}
	if !f.Until.IsZero() {
		where = append(where, "created_at < "+arg(f.Until.UnixNano()))
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
	q += ` ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ` + arg(limit)

	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", classify(err))
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Run, error) {
		r, err := scanRun(row)
		if err != nil {
			return store.Run{}, err
		}
		return *r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", classify(err))
	}
	return runs, nil
}

// DeleteRun deletes a run with its lanes, turns and spans.
func (db *DB) DeleteRun(ctx context.Context, id string) error {
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM runs WHERE id = $1`, id)
		if err != nil {
			return err
		}
		return expectOneRow(tag, "run "+id)
	})
	return wrapRunError("delete run "+id, err)
}

// MarkInterrupted is called at start-up: the runs this replica left
// queued or running, and those any replica created before staleBefore
// (no race outlives its time limit), become interrupted with their lanes.
// It returns how many runs changed.
func (db *DB) MarkInterrupted(ctx context.Context, replica string, staleBefore time.Time) (int, error) {
	var n int64
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET status = 'interrupted', updated_at = $1
			WHERE status IN ('queued', 'running') AND (replica = $2 OR created_at < $3)`,
			time.Now().UnixNano(), replica, staleBefore.UnixNano())
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `UPDATE lanes SET status = 'interrupted' WHERE status IN ('queued', 'running')
			AND run_id IN (SELECT id FROM runs WHERE status NOT IN ('queued', 'running'))`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: mark interrupted: %w", err)
	}
	return int(n), nil
}

const runColumns = `id, created_at, updated_at, scenario, profile, status, config, summary, replica`

func scanRun(s pgx.Row) (*store.Run, error) {
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

func expectOneRow(tag pgconn.CommandTag, what string) error {
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", store.ErrNotFound, what)
	}
	return nil
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// wrapRunError leaves ErrNotFound as it is and prefixes anything else.
func wrapRunError(op string, err error) error {
	if err == nil || isNotFound(err) {
		return err
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
