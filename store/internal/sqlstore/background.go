package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"agentloop/store"
)

// CreateBackground stores a new background response, queued. When
// maxQueued > 0 and its client already has that many queued, it fails
// with store.ErrTooMany and stores nothing.
func (s *Store) CreateBackground(ctx context.Context, b *store.Background, maxQueued int) error {
	if b.ID == "" {
		return errors.New("store: create background response: empty id")
	}
	err := s.c.Write(ctx, func(c Conn) error {
		if maxQueued > 0 {
			var n int
			if err := c.QueryRow(ctx, s.q(`SELECT COUNT(*) FROM background_responses WHERE client = ? AND status = 'queued'`), b.Client).Scan(&n); err != nil {
				return err
			}
			if n >= maxQueued {
				return fmt.Errorf("%w: client %s has %d background responses queued", store.ErrTooMany, b.Client, n)
			}
		}
		_, err := c.Exec(ctx, s.q(`INSERT INTO background_responses (id, created_at, replica, client, status, cancel_requested, heartbeat, snapshot, failed_snapshot)
			VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?)`),
			b.ID, b.CreatedAt.UnixNano(), b.Replica, b.Client, b.Status, b.Heartbeat.UnixNano(), b.Snapshot, b.FailedSnapshot)
		return err
	})
	if errors.Is(err, store.ErrTooMany) {
		return err
	}
	if err != nil && s.c.Dialect.IsUniqueViolation(err) {
		return fmt.Errorf("%w: background response %s", store.ErrExists, b.ID)
	}
	return wrap("create background response "+b.ID, err)
}

// GetBackground returns a background response's state.
func (s *Store) GetBackground(ctx context.Context, id string) (*store.Background, error) {
	b := &store.Background{ID: id}
	var created, beat, cancel int64
	err := s.c.Reader.QueryRow(ctx, s.q(`SELECT created_at, replica, client, status, cancel_requested, heartbeat, snapshot, failed_snapshot
		FROM background_responses WHERE id = ?`), id).Scan(&created, &b.Replica, &b.Client, &b.Status, &cancel, &beat, &b.Snapshot, &b.FailedSnapshot)
	if s.isNoRows(err) {
		return nil, notFound("background response " + id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get background response %s: %w", id, s.c.Dialect.Classify(err))
	}
	b.CreatedAt, b.Heartbeat, b.CancelRequested = unixNano(created), unixNano(beat), cancel != 0
	return b, nil
}

// UpdateBackground moves an open background response to status with its
// snapshot (and, when failedSnapshot is not nil, a new failed snapshot).
// A response already terminal stays as it is: store.ErrNotFound.
func (s *Store) UpdateBackground(ctx context.Context, id, status string, snapshot, failedSnapshot []byte) error {
	if !slices.Contains(store.BackgroundStatuses, status) {
		return fmt.Errorf("store: update background response %s: unknown status %q", id, status)
	}
	err := s.c.Write(ctx, func(c Conn) error {
		q, args := `UPDATE background_responses SET status = ?, snapshot = ?, heartbeat = ?`, []any{status, snapshot, time.Now().UnixNano()}
		if failedSnapshot != nil {
			q += `, failed_snapshot = ?`
			args = append(args, failedSnapshot)
		}
		n, err := c.Exec(ctx, s.q(q+` WHERE id = ? AND status IN ('queued', 'in_progress')`), append(args, id)...)
		return expectOne(n, err, "open background response "+id)
	})
	return wrap("update background response "+id, err)
}

// AppendBackgroundEvents keeps events of a background response, in one
// transaction.
func (s *Store) AppendBackgroundEvents(ctx context.Context, id string, events []store.BackgroundEvent) error {
	if len(events) == 0 {
		return nil
	}
	stmts := make([]Stmt, len(events))
	for i, ev := range events {
		stmts[i] = Stmt{SQL: s.q(`INSERT INTO background_events (response_id, seq, type, data) VALUES (?, ?, ?, ?)`),
			Args: []any{id, ev.Seq, ev.Type, ev.Data}}
	}
	err := s.c.Write(ctx, func(c Conn) error { return c.Batch(ctx, stmts) })
	return wrap("append events of background response "+id, err)
}

// BackgroundEvents returns a background response's events after sequence
// number after, in order, at most limit of them.
func (s *Store) BackgroundEvents(ctx context.Context, id string, after, limit int) ([]store.BackgroundEvent, error) {
	rows, err := s.c.Reader.Query(ctx, s.q(`SELECT seq, type, data FROM background_events WHERE response_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`), id, after, limit)
	out, err := collect(rows, err, func(row Row) (store.BackgroundEvent, error) {
		var ev store.BackgroundEvent
		err := row.Scan(&ev.Seq, &ev.Type, &ev.Data)
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: events of background response %s: %w", id, s.c.Dialect.Classify(err))
	}
	return out, nil
}

// RequestCancel sets an open background response's cancel flag and
// returns its state; a terminal one is returned as it is.
func (s *Store) RequestCancel(ctx context.Context, id string) (*store.Background, error) {
	err := s.c.Write(ctx, func(c Conn) error {
		_, err := c.Exec(ctx, s.q(`UPDATE background_responses SET cancel_requested = 1 WHERE id = ? AND status IN ('queued', 'in_progress')`), id)
		return err
	})
	if err != nil {
		return nil, wrap("cancel background response "+id, err)
	}
	return s.GetBackground(ctx, id)
}

// BackgroundHeartbeat marks replica's open responses ids alive at now,
// and returns those of them whose cancel flag is set.
func (s *Store) BackgroundHeartbeat(ctx context.Context, replica string, ids []string, now time.Time) (cancelled []string, err error) {
	if len(ids) == 0 {
		return nil, nil
	}
	err = s.c.Write(ctx, func(c Conn) error {
		cancelled = cancelled[:0]
		for _, id := range ids {
			var flag int64
			err := c.QueryRow(ctx, s.q(`UPDATE background_responses SET heartbeat = ? WHERE id = ? AND replica = ?
				AND status IN ('queued', 'in_progress') RETURNING cancel_requested`), now.UnixNano(), id, replica).Scan(&flag)
			if s.isNoRows(err) {
				continue
			}
			if err != nil {
				return err
			}
			if flag != 0 {
				cancelled = append(cancelled, id)
			}
		}
		return nil
	})
	return cancelled, wrap("background heartbeat", err)
}

// MarkBackgroundFailed ends, as failed, the open background responses of
// replica (none when it is "") and those of any replica whose heartbeat is older than
// staleBefore: each snapshot becomes its failed snapshot, whole.
func (s *Store) MarkBackgroundFailed(ctx context.Context, replica string, staleBefore time.Time) (int, error) {
	var n int64
	err := s.c.Write(ctx, func(c Conn) error {
		var err error
		n, err = c.Exec(ctx, s.q(`UPDATE background_responses SET status = 'failed', snapshot = failed_snapshot
			WHERE status IN ('queued', 'in_progress') AND ((replica = ? AND replica <> '') OR heartbeat < ?)`), replica, staleBefore.UnixNano())
		return err
	})
	return int(n), wrap("mark background responses failed", err)
}

// DeleteBackground deletes a background response's state and events.
func (s *Store) DeleteBackground(ctx context.Context, id string) error {
	err := s.c.Write(ctx, func(c Conn) error {
		n, err := c.Exec(ctx, s.q(`DELETE FROM background_responses WHERE id = ?`), id)
		return expectOne(n, err, "background response "+id)
	})
	return wrap("delete background response "+id, err)
}
