package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentloop/store"
)

// CreateSession stores a login session.
func (s *Store) CreateSession(ctx context.Context, l store.Session) error {
	if l.ID == "" {
		return errors.New("store: create session: empty id")
	}
	err := s.c.Write(ctx, func(c Conn) error {
		_, err := c.Exec(ctx, s.q(`INSERT INTO login_sessions (id, created_at, expires_at) VALUES (?, ?, ?)`),
			l.ID, l.CreatedAt.UnixNano(), l.ExpiresAt.UnixNano())
		return err
	})
	if err != nil {
		if s.c.Dialect.IsUniqueViolation(err) {
			return fmt.Errorf("%w: session", store.ErrExists)
		}
		return fmt.Errorf("store: create session: %w", err)
	}
	return nil
}

// GetSession returns a login session, expired or not (the caller decides);
// store.ErrNotFound when there is none.
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	var created, expires int64
	err := s.c.Reader.QueryRow(ctx, s.q(`SELECT created_at, expires_at FROM login_sessions WHERE id = ?`), id).Scan(&created, &expires)
	if s.isNoRows(err) {
		return store.Session{}, notFound("session")
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("store: get session: %w", s.c.Dialect.Classify(err))
	}
	return store.Session{ID: id, CreatedAt: unixNano(created), ExpiresAt: unixNano(expires)}, nil
}

// DeleteSession deletes a login session; deleting one that is gone is not
// an error (logging out twice is fine).
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.c.Write(ctx, func(c Conn) error {
		_, err := c.Exec(ctx, s.q(`DELETE FROM login_sessions WHERE id = ?`), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete session: %w", err)
	}
	return nil
}

// DeleteExpiredSessions deletes the sessions that expired at or before now
// and returns how many.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.c.Write(ctx, func(c Conn) error {
		var err error
		n, err = c.Exec(ctx, s.q(`DELETE FROM login_sessions WHERE expires_at <= ?`), now.UnixNano())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: delete expired sessions: %w", err)
	}
	return int(n), nil
}
