package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/api"
	"agentloop/store"
)

// Store is what the inspector keeps sessions in. *sqlite.DB implements it
// (checked in app).
type Store interface {
	SaveInspect(ctx context.Context, sessions []store.InspectSession, turns []store.InspectTurn) error
	ListInspectSessions(ctx context.Context, limit int) ([]store.InspectSession, error)
	LoadInspectSession(ctx context.Context, id string) (*store.InspectSession, []store.InspectTurn, error)
}

// Options bound the inspector; zero fields take the defaults.
type Options struct {
	// Queue is how many traces may wait; beyond it they are dropped.
	Queue int
	// Sessions and Turns bound what stays in memory: the most recently
	// active sessions, and the latest turns of each.
	Sessions, Turns int
	// FlushEvery is how often batches go to the store, and Pending how
	// many turns may wait for it; beyond that, turns stay in memory only.
	FlushEvery time.Duration
	Pending    int
}

func (o Options) withDefaults() Options {
	o.Queue = cmp.Or(o.Queue, 4096)
	o.Sessions = cmp.Or(o.Sessions, 128)
	o.Turns = cmp.Or(o.Turns, 200)
	o.FlushEvery = cmp.Or(o.FlushEvery, 250*time.Millisecond)
	o.Pending = cmp.Or(o.Pending, 8192)
	return o
}

// Inspector groups traces into sessions. It implements server.Observer.
type Inspector struct {
	store Store // nil keeps sessions in memory only
	log   *slog.Logger
	opts  Options

	queue   chan *api.Trace
	dropped atomic.Int64
	unsaved atomic.Int64  // turns recorded that the store missed
	changed chan struct{} // signalled, coalescing, after traces are grouped
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	mu    sync.Mutex
	byKey map[string]*session
	byID  map[string]*session
	seq   uint64 // grows with every turn recorded
	ref   reference
	dirty map[*session]struct{} // to write at the next flush
	turns []store.InspectTurn   // to write at the next flush

	// opened counts, per session key, the connections open and the turns
	// in flight (ObserveOpen, ObserveClose): a session is live while it has
	// one. liveChanged holds the keys that went live or idle since run last
	// gave their sessions a new version (signalled on liveSignal). Its own
	// lock, never held while recording, so that the engine never waits.
	openMu      sync.Mutex
	opened      map[string]int
	liveChanged map[string]struct{}
	liveSignal  chan struct{}
}

// session is a Session being recorded.
type session struct {
	Session
	prev *Turn // the previous answered turn, for the estimate
}

// New starts an inspector. Close stops it.
func New(st Store, log *slog.Logger, o Options) *Inspector {
	in := newInspector(st, log, o)
	go in.run()
	return in
}

func newInspector(st Store, log *slog.Logger, o Options) *Inspector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o = o.withDefaults()
	in := &Inspector{store: st, log: log, opts: o, queue: make(chan *api.Trace, o.Queue), changed: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), byKey: map[string]*session{}, byID: map[string]*session{},
		dirty: map[*session]struct{}{}, opened: map[string]int{}, liveChanged: map[string]struct{}{},
		liveSignal: make(chan struct{}, 1)}
	return in
}

// ObserveTrace queues a finished request's trace. It never blocks: with
// the queue full, the trace is dropped and counted.
func (in *Inspector) ObserveTrace(t *api.Trace) {
	select {
	case in.queue <- t:
	default:
		in.dropped.Add(1)
	}
}

// ObserveOpen counts a connection opened, or a turn begun, in a session.
// It never waits on recording.
func (in *Inspector) ObserveOpen(key string) { in.count(key, 1) }

// ObserveClose counts one closed, or ended.
func (in *Inspector) ObserveClose(key string) { in.count(key, -1) }

func (in *Inspector) count(key string, d int) {
	in.openMu.Lock()
	n := in.opened[key] + d
	if n > 0 {
		in.opened[key] = n
	} else {
		delete(in.opened, key)
	}
	changed := (n > 0) != (n-d > 0)
	if changed {
		in.liveChanged[key] = struct{}{}
	}
	in.openMu.Unlock()
	if changed {
		select {
		case in.liveSignal <- struct{}{}:
		default:
		}
	}
}

// isOpen says whether a session has a connection open or a turn in flight.
func (in *Inspector) isOpen(key string) bool {
	in.openMu.Lock()
	defer in.openMu.Unlock()
	return in.opened[key] > 0
}

// applyLive gives each session in memory that went live or idle a new
// version, so that the live feeds send it again.
func (in *Inspector) applyLive() {
	in.openMu.Lock()
	keys := in.liveChanged
	in.liveChanged = map[string]struct{}{}
	in.openMu.Unlock()
	in.mu.Lock()
	bumped := false
	for key := range keys {
		if s := in.byKey[key]; s != nil {
			in.seq++
			s.Version = in.seq
			bumped = true
		}
	}
	in.mu.Unlock()
	if bumped {
		select {
		case in.changed <- struct{}{}:
		default:
		}
	}
}

// Dropped is how many traces a full queue dropped.
func (in *Inspector) Dropped() int64 { return in.dropped.Load() }

// Unsaved is how many recorded turns the store missed: written while it
// was too far behind, or in a batch it refused.
func (in *Inspector) Unsaved() int64 { return in.unsaved.Load() }

// turnsPerTx is how many turns one transaction writes.
const turnsPerTx = 256

// Changed is signalled after new turns are recorded; one signal may stand
// for many turns.
func (in *Inspector) Changed() <-chan struct{} { return in.changed }

// Close records what is queued, writes the last batch and stops.
func (in *Inspector) Close(ctx context.Context) {
	in.once.Do(func() { close(in.stop) })
	select {
	case <-in.done:
	case <-ctx.Done():
	}
}

func (in *Inspector) run() {
	defer close(in.done)
	tick := time.NewTicker(in.opts.FlushEvery)
	defer tick.Stop()
	for {
		select {
		case t := <-in.queue:
			in.record(t)
		case <-in.liveSignal:
			in.applyLive()
		case <-tick.C:
			in.flush()
		case <-in.stop:
			in.drain()
			in.flush()
			return
		}
	}
}

// drain records what is queued.
func (in *Inspector) drain() {
	for {
		select {
		case t := <-in.queue:
			in.record(t)
		default:
			return
		}
	}
}

// record groups one trace into its session.
func (in *Inspector) record(t *api.Trace) {
	in.mu.Lock()
	s := in.byKey[t.Session]
	if s == nil {
		s = in.open(t)
	}
	tu := turnOf(t, s.Summary.Turns)
	http := s.Transport == TransportHTTP
	if t.Transport == TransportWebSocket {
		in.ref.observe(&tu)
	}
	if http {
		tu.Estimate = estimateTurn(&tu, s.prev, &in.ref)
	}
	s.Summary.add(&tu, http)
	if t.Client != nil {
		s.Client = *t.Client
		if t.Client.Race != "" {
			s.Race = t.Client.Race
		}
	}
	// Real times only: a turn never moves its session past the moment it
	// was recorded, whatever its spans say.
	s.UpdatedUnixNS = max(s.UpdatedUnixNS, min(t.StartedUnixNS+tu.DurationNS, time.Now().UnixNano()))
	s.Turns = append(s.Turns, tu)
	if len(s.Turns) > in.opts.Turns {
		drop := len(s.Turns) - in.opts.Turns
		s.Turns = slices.Delete(s.Turns, 0, drop)
		s.TurnsOmitted += drop
	}
	if tu.Error == "" {
		s.prev = &tu
	}
	in.seq++
	s.Version = in.seq
	in.dirty[s] = struct{}{}
	if in.store != nil && len(in.turns) >= in.opts.Pending {
		// The store is behind: this turn stays in memory only.
		in.unsaved.Add(1)
	} else if in.store != nil {
		if b, err := json.Marshal(tu); err == nil {
			in.turns = append(in.turns, store.InspectTurn{SessionID: s.ID, Index: tu.Index, ResponseID: tu.ResponseID,
				CreatedAt: time.Unix(0, tu.StartedUnixNS), Turn: b})
		}
	}
	in.mu.Unlock()
	select {
	case in.changed <- struct{}{}:
	default:
	}
}

// open starts the session of t, evicting the least recently active one
// when memory is full (it stays in the store).
func (in *Inspector) open(t *api.Trace) *session {
	if len(in.byKey) >= in.opts.Sessions {
		var old *session
		for _, s := range in.byKey {
			if old == nil || s.UpdatedUnixNS < old.UpdatedUnixNS {
				old = s
			}
		}
		delete(in.byKey, old.Key)
		delete(in.byID, old.ID)
	}
	s := &session{Session: Session{ID: api.NewID("sess"), Key: t.Session, Transport: t.Transport,
		StartedUnixNS: t.StartedUnixNS, UpdatedUnixNS: t.StartedUnixNS}}
	in.byKey[s.Key] = s
	in.byID[s.ID] = s
	return s
}

// flush writes the sessions and turns recorded since the last flush in
// one batch.
func (in *Inspector) flush() {
	in.mu.Lock()
	if in.store == nil || len(in.dirty) == 0 {
		clear(in.dirty)
		in.mu.Unlock()
		return
	}
	sessions := make([]store.InspectSession, 0, len(in.dirty))
	for s := range in.dirty {
		summary, _ := json.Marshal(s.Summary)
		sessions = append(sessions, store.InspectSession{ID: s.ID, Key: s.Key, Transport: s.Transport,
			UserAgent: s.Client.UserAgent, Originator: s.Client.Originator, Beta: s.Client.Beta, Race: s.Race,
			CreatedAt: time.Unix(0, s.StartedUnixNS), UpdatedAt: time.Unix(0, s.UpdatedUnixNS),
			Turns: s.Summary.Turns, Summary: summary})
	}
	turns := in.turns
	clear(in.dirty)
	in.turns = nil
	in.mu.Unlock()
	// Small transactions, so that the engine's own writes (stored
	// responses, the ledger) never wait long for the one writer. The
	// sessions go first: their turns refer to them.
	for first := true; first || len(turns) > 0; first = false {
		n := min(len(turns), turnsPerTx)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := in.store.SaveInspect(ctx, sessions, turns[:n])
		cancel()
		if err != nil {
			// The sessions stay in memory; the store misses these turns.
			in.unsaved.Add(int64(len(turns)))
			in.log.Error("inspector: save sessions", "sessions", len(sessions), "turns", len(turns), "err", err)
			return
		}
		sessions, turns = nil, turns[n:]
	}
}

// Since returns the sessions in memory changed after seq, without their
// turns, most recent first, and the sequence to ask from next.
func (in *Inspector) Since(seq uint64) ([]Session, uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []Session
	now := time.Now().UnixNano()
	for _, s := range in.byKey {
		if s.Version > seq {
			out = append(out, in.summaryOf(s, now))
		}
	}
	sortRecent(out)
	return out, in.seq
}

// Tail returns a session in memory with its turns from index from on.
func (in *Inspector) Tail(id string, from int) (Session, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	s, ok := in.byID[id]
	if !ok {
		return Session{}, false
	}
	out := in.summaryOf(s, time.Now().UnixNano())
	first := max(from-s.TurnsOmitted, 0)
	if first < len(s.Turns) {
		out.Turns = slices.Clone(s.Turns[first:])
	}
	return out, true
}

func (in *Inspector) summaryOf(s *session, now int64) Session {
	c := s.Session
	c.Turns = nil
	c.Live = in.isOpen(s.Key)
	if c.Summary.Estimate != nil {
		e := *c.Summary.Estimate
		c.Summary.Estimate = &e
	}
	return c
}

// Sessions lists up to limit sessions, live and recent from memory, then
// older ones from the store, the most recently active first.
func (in *Inspector) Sessions(ctx context.Context, limit int) ([]Session, error) {
	limit = min(cmp.Or(limit, 50), 1000)
	out, _ := in.Since(0)
	if in.store != nil {
		stored, err := in.store.ListInspectSessions(ctx, limit)
		if err != nil {
			return nil, err
		}
		seen := make(map[string]bool, len(out))
		for _, s := range out {
			seen[s.ID] = true
		}
		for _, r := range stored {
			if !seen[r.ID] {
				s := sessionOf(&r)
				s.Live = in.isOpen(s.Key)
				out = append(out, s)
			}
		}
	}
	sortRecent(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Session returns a session with all its turns: from memory while it holds
// them all, else from the store. A session neither has is store.ErrNotFound.
func (in *Inspector) Session(ctx context.Context, id string) (*Session, error) {
	if s, ok := in.Tail(id, 0); ok && (s.TurnsOmitted == 0 || in.store == nil) {
		return &s, nil
	}
	if in.store == nil {
		return nil, store.ErrNotFound
	}
	r, rows, err := in.store.LoadInspectSession(ctx, id)
	if err != nil {
		return nil, err
	}
	s := sessionOf(r)
	s.Turns = make([]Turn, 0, len(rows))
	for _, row := range rows {
		var t Turn
		if err := json.Unmarshal(row.Turn, &t); err != nil {
			return nil, errors.New("inspect: session " + id + ": unreadable turn")
		}
		s.Turns = append(s.Turns, t)
	}
	// The stored rows are the truth; a batch the store missed is not counted.
	s.Summary = Summarize(s.Turns, s.Transport == TransportHTTP)
	s.Live = in.isOpen(s.Key)
	if live, ok := in.Tail(id, 0); ok {
		s.Version = live.Version
	}
	return &s, nil
}

// sessionOf reads a stored session without its turns.
func sessionOf(r *store.InspectSession) Session {
	s := Session{ID: r.ID, Key: r.Key, Transport: r.Transport, Race: r.Race,
		Client:        api.Client{UserAgent: r.UserAgent, Originator: r.Originator, Beta: r.Beta, Race: r.Race},
		StartedUnixNS: r.CreatedAt.UnixNano(), UpdatedUnixNS: r.UpdatedAt.UnixNano()}
	if len(r.Summary) > 0 && json.Unmarshal(r.Summary, &s.Summary) != nil {
		s.Summary = Summary{Turns: r.Turns}
	}
	return s
}

func sortRecent(s []Session) {
	slices.SortFunc(s, func(a, b Session) int {
		return cmp.Or(cmp.Compare(b.UpdatedUnixNS, a.UpdatedUnixNS), cmp.Compare(a.ID, b.ID))
	})
}
