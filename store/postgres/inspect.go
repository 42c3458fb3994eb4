package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentloop/store"

	"github.com/jackc/pgx/v5"
)

// SaveInspect writes one batch of the inspector's records in one
// transaction: each session is inserted or rewritten, each turn inserted
// once (a turn already stored is kept as it is).
func (db *DB) SaveInspect(ctx context.Context, sessions []store.InspectSession, turns []store.InspectTurn) error {
	if len(sessions)+len(turns) == 0 {
		return nil
	}
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, s := range sessions {
			b.Queue(`INSERT INTO inspect_sessions
				(id, session, transport, user_agent, originator, beta, race, created_at, updated_at, turns, summary)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
				ON CONFLICT (id) DO UPDATE SET transport = excluded.transport, user_agent = excluded.user_agent,
				originator = excluded.originator, beta = excluded.beta, race = excluded.race, updated_at = excluded.updated_at,
				turns = excluded.turns, summary = excluded.summary`,
				s.ID, s.Key, s.Transport, s.UserAgent, s.Originator, s.Beta, s.Race,
				s.CreatedAt.UnixNano(), s.UpdatedAt.UnixNano(), s.Turns, s.Summary)
		}
		for _, t := range turns {
			b.Queue(`INSERT INTO inspect_turns (session_id, idx, response_id, created_at, turn)
				VALUES ($1, $2, $3, $4, $5) ON CONFLICT (session_id, idx) DO NOTHING`,
				t.SessionID, t.Index, t.ResponseID, t.CreatedAt.UnixNano(), t.Turn)
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("store: save inspected sessions: %w", err)
	}
	return nil
}

// ListInspectSessions returns up to limit sessions (50 by default, at most
// 1000), the most recently active first.
func (db *DB) ListInspectSessions(ctx context.Context, limit int) ([]store.InspectSession, error) {
	switch {
	case limit <= 0:
		limit = 50
	case limit > 1000:
		limit = 1000
	}
	rows, err := db.pool.Query(ctx, `SELECT `+inspectColumns+` FROM inspect_sessions
		ORDER BY updated_at DESC, id COLLATE "C" DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: list inspected sessions: %w", classify(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.InspectSession, error) { return scanInspectSession(r) })
	if err != nil {
		return nil, fmt.Errorf("store: list inspected sessions: %w", classify(err))
	}
	return out, nil
}

// LoadInspectSession loads a session and its turns in order.
func (db *DB) LoadInspectSession(ctx context.Context, id string) (*store.InspectSession, []store.InspectTurn, error) {
	var (
		sess  store.InspectSession
		turns []store.InspectTurn
	)
	err := db.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		sess, err = scanInspectSession(tx.QueryRow(ctx, `SELECT `+inspectColumns+` FROM inspect_sessions WHERE id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: session %s", store.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT session_id, idx, response_id, created_at, turn
			FROM inspect_turns WHERE session_id = $1 ORDER BY idx`, id)
		if err != nil {
			return err
		}
		turns, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.InspectTurn, error) {
			var t store.InspectTurn
			var created int64
			err := r.Scan(&t.SessionID, &t.Index, &t.ResponseID, &created, &t.Turn)
			t.CreatedAt = time.Unix(0, created)
			return t, err
		})
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("store: load inspected session %s: %w", id, err)
	}
	return &sess, turns, nil
}

const inspectColumns = `id, session, transport, user_agent, originator, beta, race, created_at, updated_at, turns, summary`

func scanInspectSession(r interface{ Scan(...any) error }) (store.InspectSession, error) {
	var s store.InspectSession
	var created, updated int64
	err := r.Scan(&s.ID, &s.Key, &s.Transport, &s.UserAgent, &s.Originator, &s.Beta, &s.Race, &created, &updated, &s.Turns, &s.Summary)
	s.CreatedAt, s.UpdatedAt = time.Unix(0, created), time.Unix(0, updated)
	return s, err
}
