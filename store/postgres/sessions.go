package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentloop/store"

	"github.com/jackc/pgx/v5"
)

// CreateSession stores a login session.
func (db *DB) CreateSession(ctx context.Context, s store.Session) error {
	if s.ID == "" {
		return errors.New("store: create session: empty id")
	}
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO login_sessions (id, created_at, expires_at) VALUES ($1, $2, $3)`,
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
	err := db.pool.QueryRow(ctx, `SELECT created_at, expires_at FROM login_sessions WHERE id = $1`, id).Scan(&created, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
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
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM login_sessions WHERE id = $1`, id)
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
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM login_sessions WHERE expires_at <= $1`, now.UnixNano())
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: delete expired sessions: %w", err)
	}
	return int(n), nil
}
