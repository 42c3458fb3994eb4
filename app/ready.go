package app

import (
	"context"
	"errors"
	"sync"
	"time"

	"agentloop/store"
)

// readyProbeEvery is how long /readyz reuses its last write probe: a load
// balancer polling every second costs the store two small writes every
// two seconds, not two a poll.
const readyProbeEvery = 2 * time.Second

// writeProbe says whether the store takes writes, as /readyz asks: it
// stores and deletes a login no cookie can name (its id is not hex, and it
// has expired when written), at most once per readyProbeEvery, and answers
// the last result in between.
type writeProbe struct {
	db LoginStore
	id string

	mu  sync.Mutex
	at  time.Time
	err error
}

func newWriteProbe(db LoginStore, replica string) *writeProbe {
	return &writeProbe{db: db, id: "readyz-probe:" + replica}
}

// check returns the last probe's error, probing again once it is stale.
func (p *writeProbe) check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && time.Since(p.at) < readyProbeEvery {
		return p.err
	}
	p.err = p.write(ctx)
	p.at = time.Now()
	return p.err
}

func (p *writeProbe) write(ctx context.Context) error {
	now := time.Now()
	s := store.Session{ID: p.id, CreatedAt: now, ExpiresAt: now}
	err := p.db.CreateSession(ctx, s)
	if errors.Is(err, store.ErrExists) { // an earlier probe's delete failed
		if err = p.db.DeleteSession(ctx, p.id); err == nil {
			err = p.db.CreateSession(ctx, s)
		}
	}
	if err != nil {
		return err
	}
	return p.db.DeleteSession(ctx, p.id)
}
