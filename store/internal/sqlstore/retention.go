package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentloop/store"
)

// Sweep is one kind of record retention deletes.
type Sweep struct {
	// What names the records in errors ("responses").
	What string
	// Select lists the ids of up to ? records older than ?, oldest first,
	// in the backend's own placeholders.
	Select string
	// Cutoff is the cutoff in the unit the records store their time in.
	Cutoff func(time.Time) int64
	// Delete deletes one record in c.
	Delete func(ctx context.Context, c Conn, id string) error
	// Count is the field of store.Swept that counts them.
	Count func(*store.Swept) *int
}

// Sweep deletes stored responses, finished runs, the inspector's sessions
// idle since before cutoff and workloads saved before it that no kept
// record names, then the
// backend's own records, in small transactions (store.RetentionBatch rows
// each). A stored child of a swept response stays readable: each response
// lists its whole context, and items still listed stay.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time) (store.Swept, error) {
	var swept store.Swept
	total := 0
	for _, k := range append(s.sweeps(), s.c.Sweeps...) {
		for {
			n, err := s.sweepBatch(ctx, k, k.Cutoff(cutoff))
			*k.Count(&swept) += n
			total += n
			if err != nil {
				return swept, fmt.Errorf("store: sweep %s: %w", k.What, s.c.Dialect.Classify(err))
			}
			if n < store.RetentionBatch {
				break
			}
		}
	}
	if total > 0 && s.c.AfterSweep != nil {
		if err := s.c.AfterSweep(ctx); err != nil {
			return swept, err
		}
	}
	return swept, nil
}

// sweeps are the records both backends keep.
func (s *Store) sweeps() []Sweep {
	unixNano := func(t time.Time) int64 { return t.UnixNano() }
	deleteBy := func(query string) func(context.Context, Conn, string) error {
		return func(ctx context.Context, c Conn, id string) error {
			_, err := c.Exec(ctx, s.q(query), id)
			return err
		}
	}
	return []Sweep{
		// Responses store their time in seconds.
		{What: "responses", Select: s.q(`SELECT id FROM responses WHERE created_at < ? ORDER BY created_at LIMIT ?`),
			Cutoff: time.Time.Unix, Delete: s.c.DeleteResponse,
			Count: func(w *store.Swept) *int { return &w.Responses }},
		// A run that is queued or running belongs to a live race; its rows
		// go with it (ON DELETE CASCADE: lanes, turns, spans).
		{What: "runs", Select: s.q(`SELECT id FROM runs WHERE created_at < ? AND status NOT IN ('queued', 'running')
			ORDER BY created_at LIMIT ?`),
			Cutoff: unixNano, Delete: deleteBy(`DELETE FROM runs WHERE id = ?`),
			Count: func(w *store.Swept) *int { return &w.Runs }},
		// An inspected session goes with its turns (ON DELETE CASCADE).
		{What: "inspected sessions", Select: s.q(`SELECT id FROM inspect_sessions WHERE updated_at < ? ORDER BY updated_at LIMIT ?`),
			Cutoff: unixNano, Delete: deleteBy(`DELETE FROM inspect_sessions WHERE id = ?`),
			Count: func(w *store.Swept) *int { return &w.Sessions }},
		// Workloads are kept like runs, and for as long as a kept record
		// names one (workloadReferrers): a run holds only its workload's
		// id. Runs go first above, so a swept run frees its workload in
		// the same sweep.
		{What: "workloads", Select: s.q(`SELECT id FROM workloads WHERE created_at < ? AND NOT ` + workloadNamed("workloads.id") + `
			ORDER BY created_at LIMIT ?`),
			Cutoff: unixNano, Delete: deleteBy(`DELETE FROM workloads WHERE id = ? AND NOT ` + workloadNamed("workloads.id")),
			Count: func(w *store.Swept) *int { return &w.Workloads }},
		// Report cards are kept like runs.
		{What: "check reports", Select: s.q(`SELECT id FROM check_reports WHERE created_at < ? ORDER BY created_at LIMIT ?`),
			Cutoff: unixNano, Delete: deleteBy(`DELETE FROM check_reports WHERE id = ?`),
			Count: func(w *store.Swept) *int { return &w.CheckReports }},
		// A conversation goes with its items (ON DELETE CASCADE) once idle.
		{What: "conversations", Select: s.q(`SELECT id FROM conversations WHERE updated_at < ? ORDER BY updated_at LIMIT ?`),
			Cutoff: unixNano, Delete: deleteBy(`DELETE FROM conversations WHERE id = ?`),
			Count: func(w *store.Swept) *int { return &w.Conversations }},
		// A background response goes with its events; an open one is
		// still running or will be marked failed.
		{What: "background responses", Select: s.q(`SELECT id FROM background_responses WHERE created_at < ?
			AND status NOT IN ('queued', 'in_progress') ORDER BY created_at LIMIT ?`),
			Cutoff: unixNano, Delete: deleteBy(`DELETE FROM background_responses WHERE id = ?`),
			Count: func(w *store.Swept) *int { return &w.Background }},
	}
}

// sweepBatch deletes up to store.RetentionBatch records of kind k, in one
// write transaction. A record another replica deleted meanwhile is
// skipped.
func (s *Store) sweepBatch(ctx context.Context, k Sweep, cutoff int64) (int, error) {
	n := 0
	err := s.c.Write(ctx, func(c Conn) error {
		n = 0
		rows, err := c.Query(ctx, k.Select, cutoff, store.RetentionBatch)
		ids, err := collect(rows, err, func(row Row) (string, error) {
			var id string
			err := row.Scan(&id)
			return id, err
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := k.Delete(ctx, c, id); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}
