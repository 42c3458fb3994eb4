package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"agentloop/store"
)

// CreateSession stores a login session.
func (db *DB) CreateSession(ctx context.Context, s store.Session) error {
	if s.ID == "" {
		return errors.New("store: create session: empty id")
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO login_sessions (id, created_at, expires_at) VALUES (?, ?, ?)`,
			s.ID, s.CreatedAt.UnixNano(), s.ExpiresAt.UnixNano())
		return err
	})
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: session", store.ErrExists)
		}
		return fmt.Errorf("store: create session: %w", err)
	}
	return nil
}

// GetSession returns a login session, expired or not (the caller decides);
// store.ErrNotFound when there is none.
func (db *DB) GetSession(ctx context.Context, id string) (store.Session, error) {
	var created, expires int64
	err := db.r.QueryRowContext(ctx, `SELECT created_at, expires_at FROM login_sessions WHERE id = ?`, id).Scan(&created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("%w: session", store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("store: get session: %w", classify(err))
	}
	return store.Session{ID: id, CreatedAt: time.Unix(0, created), ExpiresAt: time.Unix(0, expires)}, nil
}

// DeleteSession deletes a login session; deleting one that is gone is not
// an error (logging out twice is fine).
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM login_sessions WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete session: %w", err)
	}
	return nil
}

// DeleteExpiredSessions deletes the sessions that expired at or before now
// and returns how many.
func (db *DB) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM login_sessions WHERE expires_at <= ?`, now.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: delete expired sessions: %w", err)
	}
	return int(n), nil
}
