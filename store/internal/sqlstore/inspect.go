package sqlstore

import (
	"context"
	"fmt"

	"agentloop/store"
)

// SaveInspect writes one batch of the inspector's records in one
// transaction: each session is inserted or rewritten, each turn inserted
// once (a turn already stored is kept as it is).
func (s *Store) SaveInspect(ctx context.Context, sessions []store.InspectSession, turns []store.InspectTurn) error {
	if len(sessions)+len(turns) == 0 {
		return nil
	}
	stmts := make([]Stmt, 0, len(sessions)+len(turns))
	upsertSession := s.q(`INSERT INTO inspect_sessions (` + inspectColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET transport = excluded.transport, user_agent = excluded.user_agent,
		originator = excluded.originator, beta = excluded.beta, race = excluded.race, updated_at = excluded.updated_at,
		turns = excluded.turns, summary = excluded.summary`)
	for _, ses := range sessions {
		stmts = append(stmts, Stmt{SQL: upsertSession, Args: []any{ses.ID, ses.Key, ses.Transport, ses.UserAgent,
			ses.Originator, ses.Beta, ses.Race, ses.CreatedAt.UnixNano(), ses.UpdatedAt.UnixNano(), ses.Turns, ses.Summary}})
	}
	insertTurn := s.q(`INSERT INTO inspect_turns (session_id, idx, response_id, created_at, turn)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id, idx) DO NOTHING`)
	for _, t := range turns {
		stmts = append(stmts, Stmt{SQL: insertTurn, Args: []any{t.SessionID, t.Index, t.ResponseID, t.CreatedAt.UnixNano(), t.Turn}})
	}
	err := s.c.Write(ctx, func(c Conn) error { return c.Batch(ctx, stmts) })
	if err != nil {
		return fmt.Errorf("store: save inspected sessions: %w", err)
	}
	return nil
}

// ListInspectSessions returns up to limit sessions (50 by default, at most
// 1000), the most recently active first.
func (s *Store) ListInspectSessions(ctx context.Context, limit int) ([]store.InspectSession, error) {
	rows, err := s.c.Reader.Query(ctx, s.q(`SELECT `+inspectColumns+` FROM inspect_sessions
		ORDER BY updated_at DESC, id`+s.c.Dialect.Bytewise+` DESC LIMIT ?`), clamp(limit, 50, 1000))
	out, err := collect(rows, err, scanInspectSession)
	if err != nil {
		return nil, fmt.Errorf("store: list inspected sessions: %w", s.c.Dialect.Classify(err))
	}
	return out, nil
}

// LoadInspectSession loads a session and its turns in order.
func (s *Store) LoadInspectSession(ctx context.Context, id string) (*store.InspectSession, []store.InspectTurn, error) {
	var (
		sess  store.InspectSession
		turns []store.InspectTurn
	)
	err := s.c.Read(ctx, func(c Conn) error {
		var err error
		sess, err = scanInspectSession(c.QueryRow(ctx, s.q(`SELECT `+inspectColumns+` FROM inspect_sessions WHERE id = ?`), id))
		if s.isNoRows(err) {
			return notFound("session " + id)
		}
		if err != nil {
			return err
		}
		rows, err := c.Query(ctx, s.q(`SELECT session_id, idx, response_id, created_at, turn
			FROM inspect_turns WHERE session_id = ? ORDER BY idx`), id)
		turns, err = collect(rows, err, func(row Row) (store.InspectTurn, error) {
			var t store.InspectTurn
			var created int64
			err := row.Scan(&t.SessionID, &t.Index, &t.ResponseID, &created, &t.Turn)
			t.CreatedAt = unixNano(created)
			return t, err
		})
		return err
	})
	if err != nil {
		return nil, nil, wrap("load inspected session "+id, err)
	}
	return &sess, turns, nil
}

const inspectColumns = `id, session, transport, user_agent, originator, beta, race, created_at, updated_at, turns, summary`

func scanInspectSession(row Row) (store.InspectSession, error) {
	var s store.InspectSession
	var created, updated int64
	err := row.Scan(&s.ID, &s.Key, &s.Transport, &s.UserAgent, &s.Originator, &s.Beta, &s.Race, &created, &updated, &s.Turns, &s.Summary)
	s.CreatedAt, s.UpdatedAt = unixNano(created), unixNano(updated)
	return s, err
}
