package core

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"agentloop/api"
	"agentloop/store"
)

// Background responses (docs/protocol.md "Background responses"): a
// create with background:true is prepared while its request waits (so a
// bad one gets its 400), then queued, and answered at once; it runs
// later, under its own context (an Outliving sink), against the same
// scheduler slots and in-flight budget as any response. Its state, cancel
// flag and events live in the store, so any replica answers a poll, a
// cancel or a resumed stream; the replica running it marks it alive
// (heartbeat) and reads its cancel flag every heartbeatEvery, and a
// response whose replica stopped is marked failed, with a snapshot
// written whole when it was queued.

// BackgroundStore is what background responses need of the store; every
// backend implements it (store.Backend).
type BackgroundStore interface {
	CreateBackground(ctx context.Context, b *store.Background, maxQueued int) error
	GetBackground(ctx context.Context, id string) (*store.Background, error)
	UpdateBackground(ctx context.Context, id, status string, snapshot, failedSnapshot []byte) error
	AppendBackgroundEvents(ctx context.Context, id string, events []store.BackgroundEvent) error
	BackgroundEvents(ctx context.Context, id string, after, limit int) ([]store.BackgroundEvent, error)
	RequestCancel(ctx context.Context, id string) (*store.Background, error)
	DeleteBackground(ctx context.Context, id string) error
	BackgroundHeartbeat(ctx context.Context, replica string, ids []string, now time.Time) (cancelled []string, err error)
	MarkBackgroundFailed(ctx context.Context, replica string, staleBefore time.Time) (int, error)
}

const (
	// heartbeatEvery is how often the running replica marks its
	// background responses alive and reads their cancel flags; a replica
	// that is not running one reads the store as often for a resumed
	// stream or a cancel.
	heartbeatEvery = 250 * time.Millisecond
	// staleAfter is how old a heartbeat is when its replica is taken for
	// dead and its responses are marked failed.
	staleAfter = 40 * heartbeatEvery
	// eventsPage is how many events a resumed stream reads from the store
	// at once.
	eventsPage = 512
)

// stoppedMessage is a background response's error when its replica
// stopped before it ended.
const stoppedMessage = "The server stopped before the background response finished."

// queuedStart is what a background response's queue gives its flight:
// its id and time, and the sequence number its generation continues
// from (response.created and response.queued went out when it queued).
type queuedStart struct {
	id        string
	createdAt int64
	seq       int
}

// newResponse is the response a flight generates: a new id, or the one
// its background response was queued under.
func (fl *Flight) newResponse() *api.Response {
	if q := fl.queued; q != nil {
		return api.NewResponse(q.id, q.createdAt, fl.parsed.req)
	}
	return api.NewResponse(api.NewID("resp"), time.Now().Unix(), fl.parsed.req)
}

// resume continues a queued response's events in st.
func (q *queuedStart) resume(st *streamer) {
	if q != nil {
		st.seq, st.wasQueued = q.seq, true
	}
}

// Backgrounds runs one engine's background responses.
type Backgrounds struct {
	e  *Engine
	st BackgroundStore // nil: the store keeps none, and background is refused

	mu       sync.Mutex
	running  int
	queue    []*BackgroundRun          // waiting to run, oldest first
	runs     map[string]*BackgroundRun // queued or running here
	watching bool                      // the heartbeat loop runs
	closed   bool                      // Close has begun: no more are queued
}

// NewBackgrounds returns engine e's background responses.
func NewBackgrounds(e *Engine) *Backgrounds {
	st, _ := e.sh.Store.(BackgroundStore)
	return &Backgrounds{e: e, st: st, runs: map[string]*BackgroundRun{}}
}

// BackgroundRun is one background response on the replica that runs it:
// its events as they are made, and the sink its generation writes to.
type BackgroundRun struct {
	b        *Backgrounds
	fl       *Flight
	id       string
	queued   *api.Response // as it was queued
	snapshot []byte        // queued's JSON
	failed   []byte        // what it becomes if its replica stops first
	finished func(*api.Error)

	ctx    context.Context // the response's own life: a cancel ends it
	cancel context.CancelFunc

	mu      sync.Mutex
	events  []store.BackgroundEvent // events[i].Seq == i
	changed chan struct{}           // closed when events grow or the run ends
	ended   chan struct{}           // closed once the final state is stored
	final   []byte                  // the final snapshot, once ended

	persistMu sync.Mutex    // one writer of events at a time
	persisted int           // events[:persisted] are in the store
	wake      chan struct{} // asks the persister to write what is new
}

// Accept queues a prepared background create and stores its state;
// finished is called once, when it has ended however it ended (at once,
// with the error, when it is refused). client is who the queued cap
// counts against.
func (b *Backgrounds) Accept(ctx context.Context, fl *Flight, client string, finished func(*api.Error)) (*BackgroundRun, *api.Error) {
	r, aerr := b.accept(ctx, fl, client)
	if aerr != nil {
		finished(aerr)
		return nil, aerr
	}
	r.finished = finished
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		r.end("failed", r.failed, shuttingDown())
		return nil, shuttingDown()
	}
	b.runs[r.id] = r
	b.queue = append(b.queue, r)
	b.startLocked()
	b.watchLocked()
	b.mu.Unlock()
	return r, nil
}

func (b *Backgrounds) accept(ctx context.Context, fl *Flight, client string) (*BackgroundRun, *api.Error) {
	if b.st == nil {
		return nil, api.BadRequest("background", api.CodeUnsupportedParameter, "This server keeps no store, so it runs no background responses.")
	}
	req := fl.parsed.req
	if !req.Stored() {
		return nil, api.BackgroundNeedsStore()
	}
	now := time.Now()
	id := api.NewID("resp")
	fl.queued = &queuedStart{id: id, createdAt: now.Unix(), seq: 2}
	resp := api.NewResponse(id, now.Unix(), req)
	resp.Status = "queued"
	snapshot := api.MarshalResponse(resp)
	failed := *resp
	fail(&failed, stoppedMessage)
	failedSnapshot := api.MarshalResponse(&failed)
	row := &store.Background{ID: id, CreatedAt: now, Replica: b.e.sh.Replica, Client: client, Status: "queued",
		Heartbeat: now, Snapshot: snapshot, FailedSnapshot: failedSnapshot}
	maxQueued := b.e.cfg.BackgroundQueued
	err := b.st.CreateBackground(ctx, row, maxQueued)
	if errors.Is(err, store.ErrTooMany) {
		return nil, api.TooManyQueued(maxQueued)
	}
	if err != nil {
		b.e.sh.Log.Error("queue background response", "id", id, "err", err)
		return nil, api.StoreError(err, "The background response could not be queued")
	}
	r := &BackgroundRun{b: b, fl: fl, id: id, queued: resp, snapshot: snapshot, failed: failedSnapshot, changed: make(chan struct{}),
		ended: make(chan struct{}), wake: make(chan struct{}, 1)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for seq, typ := range []string{api.EventCreated, api.EventQueued} {
		r.events = append(r.events, store.BackgroundEvent{Seq: seq, Type: typ, Data: api.AppendResponseEvent(nil, typ, seq, snapshot)})
	}
	r.persist()
	return r, nil
}

// ID is the response's id.
func (r *BackgroundRun) ID() string { return r.id }

// Snapshot is the response as it was queued: a create's answer.
func (r *BackgroundRun) Snapshot() []byte { return r.snapshot }

// Close ends this engine's background responses, as a shutdown ends any
// stream: the running ones with response.failed (the engine stops
// generating), the queued ones failed; it returns once their final
// states are stored, or after storeTimeout.
func (b *Backgrounds) Close() {
	b.mu.Lock()
	b.closed = true
	queued := b.queue
	b.queue = nil
	runs := make([]*BackgroundRun, 0, len(b.runs))
	for _, r := range b.runs {
		runs = append(runs, r)
	}
	b.mu.Unlock()
	if len(runs) == 0 {
		return
	}
	b.e.StopGenerating()
	for _, r := range queued {
		r.cancel()
		r.end("failed", r.failed, shuttingDown())
	}
	deadline := time.NewTimer(storeTimeout)
	defer deadline.Stop()
	for _, r := range runs {
		select {
		case <-r.ended:
		case <-deadline.C:
			return
		}
	}
}

// startLocked starts queued responses while there is room; under mu.
func (b *Backgrounds) startLocked() {
	for (b.running < b.e.cfg.BackgroundRunning || b.e.cfg.BackgroundRunning <= 0) && len(b.queue) > 0 {
		r := b.queue[0]
		b.queue = b.queue[1:]
		b.running++
		go r.run()
	}
}

// run generates the response and stores how it ended.
func (r *BackgroundRun) run() {
	b := r.b
	defer func() {
		b.mu.Lock()
		b.running--
		b.startLocked()
		b.mu.Unlock()
	}()
	if r.ctx.Err() != nil { // cancelled while it was being started
		r.endUnrun()
		return
	}
	inProgress := *r.queued
	inProgress.Status = "in_progress"
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	err := b.st.UpdateBackground(ctx, r.id, "in_progress", api.MarshalResponse(&inProgress), nil)
	cancel()
	if err != nil {
		b.e.sh.Log.Error("start background response", "id", r.id, "err", err)
	}
	stop := make(chan struct{})
	go r.persistLoop(stop)
	res := b.e.Generate(r.ctx, r.fl, r)
	close(stop)
	r.end(res.Response.Status, res.Snapshot, res.Err)
}

// endUnrun ends a response cancelled before it ran.
func (r *BackgroundRun) endUnrun() {
	c := *r.queued
	c.Status = "cancelled"
	r.end(c.Status, api.MarshalResponse(&c), nil)
}

// end stores the final state, after every event, and lets waiters go.
func (r *BackgroundRun) end(status string, snapshot []byte, aerr *api.Error) {
	b := r.b
	r.persist()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := b.st.UpdateBackground(ctx, r.id, status, snapshot, nil); err != nil {
		b.e.sh.Log.Error("end background response", "id", r.id, "status", status, "err", err)
	}
	b.mu.Lock()
	delete(b.runs, r.id)
	b.mu.Unlock()
	r.mu.Lock()
	r.final = snapshot
	close(r.changed)
	r.mu.Unlock()
	close(r.ended)
	r.cancel()
	r.finished(aerr)
}

// Event keeps one event of the generation (the sink of an Outliving
// response: it never fails, so the response runs on whoever reads).
func (r *BackgroundRun) Event(typ string, b []byte) error {
	r.mu.Lock()
	r.events = append(r.events, store.BackgroundEvent{Seq: len(r.events), Type: typ, Data: append([]byte(nil), b...)})
	r.mu.Unlock()
	return nil
}

// Flush wakes the readers and the persister.
func (r *BackgroundRun) Flush() error {
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// Outlive runs the response under its own context, not its request's.
func (r *BackgroundRun) Outlive(context.Context) context.Context { return r.ctx }

var _ Outliving = (*BackgroundRun)(nil)

// persistLoop writes new events as they come, a batch per write, until
// stop.
func (r *BackgroundRun) persistLoop(stop <-chan struct{}) {
	for {
		select {
		case <-r.wake:
			r.persist()
		case <-stop:
			return
		}
	}
}

// persist writes the events not yet in the store.
func (r *BackgroundRun) persist() {
	r.persistMu.Lock()
	defer r.persistMu.Unlock()
	r.mu.Lock()
	batch := r.events[r.persisted:]
	r.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.b.st.AppendBackgroundEvents(ctx, r.id, batch); err != nil {
		r.b.e.sh.Log.Error("keep background events", "id", r.id, "err", err)
		return
	}
	r.persisted += len(batch)
}

// watchLocked starts the heartbeat loop unless it runs; under mu.
func (b *Backgrounds) watchLocked() {
	if !b.watching {
		b.watching = true
		go b.watch()
	}
}

// watch marks this replica's background responses alive, cancels those
// whose cancel flag another replica set, and marks failed those of
// replicas that stopped; it ends when none is left here.
func (b *Backgrounds) watch() {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for range t.C {
		b.mu.Lock()
		ids := make([]string, 0, len(b.runs))
		for id := range b.runs {
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			b.watching = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		now := time.Now()
		cancelled, err := b.st.BackgroundHeartbeat(ctx, b.e.sh.Replica, ids, now)
		if err == nil {
			_, err = b.st.MarkBackgroundFailed(ctx, "", now.Add(-staleAfter))
		}
		cancel()
		if err != nil {
			b.e.sh.Log.Warn("background heartbeat", "err", err)
		}
		for _, id := range cancelled {
			b.cancelHere(id)
		}
	}
}

// cancelHere cancels a response this replica holds: a queued one ends at
// once, a running one at its generation's next step. It returns the run,
// nil when this replica does not hold it.
func (b *Backgrounds) cancelHere(id string) *BackgroundRun {
	b.mu.Lock()
	r := b.runs[id]
	i := slices.Index(b.queue, r)
	if i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1)
	}
	b.mu.Unlock()
	if r == nil {
		return nil
	}
	r.cancel()
	if i >= 0 {
		r.endUnrun()
	}
	return r
}

// Get is a background response's state, a stale one marked failed first;
// store.ErrNotFound when it is none.
func (b *Backgrounds) Get(ctx context.Context, id string) (*store.Background, error) {
	if b.st == nil {
		return nil, store.ErrNotFound
	}
	row, err := b.st.GetBackground(ctx, id)
	if err != nil || !row.Open() || time.Since(row.Heartbeat) < staleAfter {
		return row, err
	}
	if _, err := b.st.MarkBackgroundFailed(ctx, "", time.Now().Add(-staleAfter)); err != nil {
		return nil, err
	}
	return b.st.GetBackground(ctx, id)
}

// Delete deletes a background response's state and events (its stored
// response is the caller's), cancelling it first if it is open, so that
// it does not come back stored; store.ErrNotFound when it is none.
func (b *Backgrounds) Delete(ctx context.Context, id string) error {
	if b.st == nil {
		return store.ErrNotFound
	}
	if row, err := b.st.GetBackground(ctx, id); err == nil && row.Open() {
		if _, _, aerr := b.Cancel(ctx, id); aerr != nil {
			return aerr
		}
	}
	return b.st.DeleteBackground(ctx, id)
}

// Cancel cancels a background response and returns its final snapshot:
// a finished one's as it is (a cancel is idempotent), a running one's
// once it has ended, on whichever replica runs it. ok is false when no
// background response has that id.
func (b *Backgrounds) Cancel(ctx context.Context, id string) (snapshot []byte, ok bool, aerr *api.Error) {
	if b.st == nil {
		return nil, false, nil
	}
	row, err := b.st.RequestCancel(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, api.StoreError(err, "The response could not be cancelled")
	}
	if !row.Open() {
		return row.Snapshot, true, nil
	}
	if r := b.cancelHere(id); r != nil {
		select {
		case <-r.ended:
			return r.final, true, nil
		case <-ctx.Done():
			return nil, true, clientGone()
		}
	}
	// Another replica runs it: it sees the flag at its next heartbeat.
	t := time.NewTicker(heartbeatEvery / 2)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, true, clientGone()
		}
		row, err := b.Get(ctx, id)
		if err != nil {
			return nil, true, api.StoreError(err, "The response could not be read")
		}
		if !row.Open() {
			return row.Snapshot, true, nil
		}
	}
}

// Stream writes a background response's events after sequence number
// after to out, and goes on as they are made until the response ends or
// ctx does. A response run elsewhere is read from the store.
func (b *Backgrounds) Stream(ctx context.Context, id string, after int, out Sink) error {
	b.mu.Lock()
	r := b.runs[id]
	b.mu.Unlock()
	if r != nil {
		return r.tail(ctx, after, out)
	}
	return b.tailStore(ctx, id, after, out)
}

// tail streams events from memory, live.
func (r *BackgroundRun) tail(ctx context.Context, after int, out Sink) error {
	for {
		r.mu.Lock()
		events, changed, done := r.events, r.changed, r.final != nil
		r.mu.Unlock()
		for _, ev := range events[min(after+1, len(events)):] {
			if err := out.Event(ev.Type, ev.Data); err != nil {
				return err
			}
			after = ev.Seq
		}
		if err := out.Flush(); err != nil || done {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tailStore streams events from the store, reading it every heartbeat
// while the response is open. A response marked failed when its replica
// stopped ends with the response.failed event that replica never sent.
func (b *Backgrounds) tailStore(ctx context.Context, id string, after int, out Sink) error {
	t := time.NewTicker(heartbeatEvery / 2)
	defer t.Stop()
	last := ""
	for {
		row, err := b.Get(ctx, id)
		if err != nil {
			return err
		}
		// Events are stored before the final state: once the state is
		// final, one more read has every event.
		for {
			events, err := b.st.BackgroundEvents(ctx, id, after, eventsPage)
			if err != nil {
				return err
			}
			for _, ev := range events {
				if err := out.Event(ev.Type, ev.Data); err != nil {
					return err
				}
				after, last = ev.Seq, ev.Type
			}
			if len(events) < eventsPage {
				break
			}
		}
		if !row.Open() {
			if row.Status == "failed" && !slices.Contains(api.TerminalEvents, last) {
				if err := out.Event(api.EventFailed, api.AppendResponseEvent(nil, api.EventFailed, after+1, row.Snapshot)); err != nil {
					return err
				}
			}
			return out.Flush()
		}
		if err := out.Flush(); err != nil {
			return err
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
