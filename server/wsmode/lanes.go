package wsmode

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/api"
	"agentloop/server/core"
)

// Lanes (docs/protocol.md, "`stream_id` lanes"). A response.create's stream_id names a FIFO
// lane of its connection; without one it joins the default lane. Each lane
// runs its creates one at a time, in order, on a goroutine of its own (the
// default lane's only while it has entries, so that an idle connection
// costs its reader alone), and keeps its own connection cache:
// its latest response. A continuation finds its own lane's latest response
// there, or forks another lane's (parentFor); anything else is the store's,
// or previous_response_not_found. Lanes run concurrently, at most
// api.MaxActiveResponses responses at once per connection; a connection
// may name at most api.MaxNamedStreams lanes over its life. The queue
// bounds (count and bytes) hold per connection, over all its lanes; the
// queues themselves (wsQueue, at the end of this file) belong to the lanes
// and live here. A lane's request takes the same pipeline as any other: lanes change only
// which requests may overlap, never the work a request does.

// lane is one FIFO of a connection. A request running on it sees the
// connection through it (it implements core.Conn).
type lane struct {
	id    string // "" for the default lane
	ls    *lanes
	queue *wsQueue
	cache *core.ChainState // the lane's latest response; under lanes.mu
	held  *core.HeldState  // cache's place in the state budget; under lanes.mu
	// dropped is the id of the latest response the state budget dropped
	// from cache, until the lane keeps another; under lanes.mu.
	dropped string
	out     laneSink
}

// lanes is a connection's lanes and what they share.
type lanes struct {
	ctx    context.Context // the connection's: it ends when the connection does
	sock   socket
	proto  bool // a prototype connection: one lane, the default
	handle func(*lane, wsEntry)
	states *core.StateBudget // the process's budget for connection state; nil: none
	def    *lane
	bound  *queueBound   // the hard bound on entries queued over all lanes
	active chan struct{} // one token per running response

	// The connection's soft queue bounds: creates waiting with a body,
	// and their bytes, over all its lanes.
	queued      atomic.Int64
	queuedBytes atomic.Int64

	mu      sync.Mutex
	named   map[string]*lane
	stopped bool           // no lane starts anything new
	stop    chan struct{}  // closed when stopped
	wg      sync.WaitGroup // the lanes' goroutines
}

// socket is what the lanes need of their connection (wsConn, ws.go): to
// write the lanes' frames and to drop it. Each call is one frame (or one
// batch) whole, under the socket's one lock, so lanes share it without a
// lock of their own.
type socket interface {
	named(b []byte, stream string) error // frames an event into the batch flush sends, with stream's stream_id when not ""
	flush() error                        // sends the batch
	write(b []byte) error                // sends one frame at once
	drop()                               // closes the socket at once
}

// newLanes returns a connection's lanes, which run each queued entry with
// handle, on the lane's goroutine.
func newLanes(ctx context.Context, sock socket, proto bool, bound *queueBound, states *core.StateBudget, handle func(*lane, wsEntry)) *lanes {
	ls := &lanes{ctx: ctx, sock: sock, proto: proto, handle: handle, bound: bound, states: states,
		active: make(chan struct{}, api.MaxActiveResponses), stop: make(chan struct{})}
	ls.def = ls.newLane("")
	ls.def.queue.onDemand = true
	return ls
}

func (ls *lanes) newLane(id string) *lane {
	return &lane{id: id, ls: ls, queue: newWSQueue(ls.bound), out: laneSink{sock: ls.sock, id: id}}
}

// reserve counts a create of n body bytes against the connection's queue
// bounds; false when it is over them (the create is refused, not queued).
func (ls *lanes) reserve(n int, maxCreates int, maxBytes int64) bool {
	if ls.queued.Load() >= int64(maxCreates) || ls.queuedBytes.Load()+int64(n) > maxBytes {
		return false
	}
	ls.queued.Add(1)
	ls.queuedBytes.Add(int64(n))
	return true
}

// dequeued releases a taken entry's share of the queue bounds.
func (ls *lanes) dequeued(ent wsEntry) {
	if ent.body != nil {
		ls.queued.Add(-1)
		ls.queuedBytes.Add(-int64(len(ent.body)))
	}
}

// push queues ent on lane l, waiting past the hard bound (TCP
// backpressure); it reports false if the connection ended first. An entry
// for the default lane starts its goroutine when it has none.
func (ls *lanes) push(l *lane, ent wsEntry) bool {
	ok, start := l.queue.push(ls.ctx, ent)
	if start {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		if !ls.stopped { // else the connection is ending: the entry never runs
			ls.spawn(l)
		}
	}
	return ok
}

// spawn runs lane l on a goroutine of its own. It is called under ls.mu
// while the lanes are not stopped, so that halt waits for the goroutine.
func (ls *lanes) spawn(l *lane) {
	ls.wg.Add(1)
	go func() {
		defer ls.wg.Done()
		ls.run(l)
	}()
}

// route finds the lane of a frame, opening a named lane on first use. It
// also returns the stream_id the frame's error reply must carry, and the
// error when the frame cannot join the lane it names: an invalid id, or
// one id too many (both are answered on the default lane). A frame that
// cannot be read, or whose stream_id is not a string, joins the default
// lane, whose parse stage reports the problem as it does for any frame.
func (ls *lanes) route(body []byte) (*lane, string, *api.Error) {
	id, named := peekStreamID(body)
	if !named || ls.proto {
		return ls.def, "", nil // the prototype refuses stream_id in its parse stage
	}
	if !api.ValidStreamID(id) {
		return ls.def, "", api.InvalidStreamID()
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l, ok := ls.named[id]; ok {
		return l, id, nil
	}
	if len(ls.named) >= api.MaxNamedStreams {
		return ls.def, id, api.StreamLimitReached()
	}
	if ls.stopped {
		// The connection is ending: nothing queued from now on runs, and
		// the default lane holds it like any other late frame.
		return ls.def, id, nil
	}
	if ls.named == nil {
		ls.named = make(map[string]*lane)
	}
	l := ls.newLane(id)
	ls.named[id] = l
	ls.spawn(l)
	return l, id, nil
}

var streamIDKey = []byte(`"stream_id"`)

// peekStreamID reads a frame's stream_id before the frame is queued. Most
// frames carry none, and a byte search tells so without decoding; a frame
// that may carry one has that one field decoded. named is false for a
// frame without a readable string stream_id.
func peekStreamID(body []byte) (id string, named bool) {
	if !bytes.Contains(body, streamIDKey) {
		return "", false
	}
	var env struct {
		StreamID *string `json:"stream_id"`
	}
	if json.Unmarshal(body, &env) != nil || env.StreamID == nil {
		return "", false
	}
	return *env.StreamID, true
}

// halt stops every lane from starting anything new and waits until each
// has finished the response it was running.
func (ls *lanes) halt() {
	ls.mu.Lock()
	if !ls.stopped {
		ls.stopped = true
		close(ls.stop)
	}
	ls.mu.Unlock()
	ls.wg.Wait()
}

// run takes lane l's entries in order until the connection ends or the
// lanes halt; the default lane's run also ends when its queue is empty (the
// next entry starts another). Ending comes before the next entry, never in
// the middle of one.
func (ls *lanes) run(l *lane) {
	for {
		select {
		case <-ls.ctx.Done():
			return
		case <-ls.stop:
			return
		default:
		}
		ent, ok := l.queue.take()
		if !ok {
			if l.queue.onDemand {
				return
			}
			select {
			case <-ls.ctx.Done():
			case <-ls.stop:
			case <-l.queue.added:
			}
			continue
		}
		ls.dequeued(ent)
		create := ent.reply == nil
		if create {
			// A create waits for one of the connection's response slots;
			// lanes get them in the order they began to wait.
			select {
			case ls.active <- struct{}{}:
			case <-ls.ctx.Done():
				return
			case <-ls.stop:
				return
			}
		}
		ls.handle(l, ent) // ent is not used after: its body can go once parsed
		if create {
			<-ls.active
		}
	}
}

// named checks that a frame names lane l: a named lane's frames name it,
// the default lane's name none. They differ only when the stream_id key is
// spelled in a way the router's byte search does not see (escaped, or in
// other letter case).
func (l *lane) named(req *api.CreateRequest) *api.Error {
	id := ""
	if req.StreamID != nil {
		id = *req.StreamID
	}
	switch {
	case id == l.id:
		return nil
	case req.StreamID != nil && !api.ValidStreamID(id):
		return api.InvalidStreamID()
	default:
		return api.BadRequest("stream_id", api.CodeInvalidStreamID, "The 'stream_id' key must be written exactly as \"stream_id\", unescaped, to name a lane.")
	}
}

// ParentFor is the connection cache's answer to a create on lane l that
// continues id (docs/protocol.md, "WebSocket mode", "`stream_id` lanes"):
//   - l's own latest response, taken out of the cache (and out of the
//     state budget) for the request: the request extends it in place,
//     then replaces it with its own response, or on failure leaves it
//     evicted;
//   - another lane's latest response, as a fork: a copy whose call ids and
//     tokens the request extends without touching the other lane's, which
//     keeps its parent whatever the fork's outcome;
//   - otherwise nil: a miss (the store, or previous_response_not_found).
//
// held says whether there was a response to compare against: l's own, or
// the fork's, or one the state budget dropped; dropped says the budget
// dropped the response id names (docs/capacity.md, "The cost of state").
func (l *lane) ParentFor(id string) (parent *core.ChainState, held, dropped bool) {
	ls := l.ls
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if id == "" {
		return nil, l.cache != nil, false
	}
	if c := l.cache; c != nil && c.ID() == id {
		ls.states.Release(l.held)
		l.cache, l.held = nil, nil
		return c, true, false
	}
	for _, o := range ls.all() {
		if c := o.cache; o != l && c != nil && c.ID() == id {
			ls.states.Touch(o.held)
			return c.Fork(), true, false
		}
	}
	for _, o := range ls.all() {
		if o.dropped == id {
			return nil, true, true
		}
	}
	return nil, l.cache != nil, false
}

// all is the connection's lanes, the default first; under ls.mu.
func (ls *lanes) all() []*lane {
	out := make([]*lane, 0, 1+len(ls.named))
	out = append(out, ls.def)
	for _, o := range ls.named {
		out = append(out, o)
	}
	return out
}

// forget evicts l's latest response if a failed continuation named it
// (docs/protocol.md, "WebSocket mode"): a request that failed before its parent was looked
// up (in parse, on the transport's rules) evicts it as one that failed
// later does, whose ParentFor took it out already.
func (l *lane) forget(id string) {
	l.ls.mu.Lock()
	defer l.ls.mu.Unlock()
	if c := l.cache; id != "" && c != nil && c.ID() == id {
		l.ls.states.Release(l.held)
		l.cache, l.held = nil, nil
	}
}

// remember makes s lane l's latest response, packed and held in the
// state budget; nil leaves the cache as it is. Holding s may drop other
// idle states (s's too, when s alone is over the budget): the budget
// drops them through dropIdle, outside both locks.
func (ls *lanes) remember(l *lane, s *core.ChainState) {
	if s == nil {
		return
	}
	s.Pack() // idle from now on: its compact form (server/core/statepack.go)
	ls.mu.Lock()
	ls.states.Release(l.held)
	l.cache, l.held, l.dropped = s, nil, ""
	ls.mu.Unlock()
	h := ls.states.Hold(s, func() bool { return ls.dropIdle(l, s) })
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.cache == s {
		l.held = h
	} else {
		ls.states.Release(h) // taken or dropped meanwhile
	}
}

// dropIdle is the state budget dropping s from lane l: only if l still
// keeps it idle (a continuation that took it runs on).
func (ls *lanes) dropIdle(l *lane, s *core.ChainState) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.cache != s {
		return false
	}
	l.cache, l.held, l.dropped = nil, nil, s.ID()
	return true
}

// releaseStates takes every lane's state out of the state budget: the
// connection has ended, and its lanes with it.
func (ls *lanes) releaseStates() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range ls.all() {
		ls.states.Release(l.held)
		l.cache, l.held = nil, nil
	}
}

// laneSink is a lane's sink: it frames the lane's events into the
// socket's batch, each event of a named lane with its stream_id written
// as it is framed (no copy of its own, and no lock but the socket's).
type laneSink struct {
	sock socket
	id   string
}

func (s *laneSink) Event(_ string, b []byte) error { return s.sock.named(b, s.id) }

func (s *laneSink) Flush() error { return s.sock.flush() }

// sendError writes a request-level error frame, naming stream when it is
// not empty.
func (ls *lanes) sendError(e *api.Error, stream string) {
	_ = ls.sock.write(api.AppendWSError(nil, e, stream))
}

// The rest of core.Conn: what the drills and the prototype ask of the
// connection a request runs on.

// Drop closes the socket at once, with no close frame: every lane of the
// connection goes with it (drop-mid-stream).
func (l *lane) Drop() { l.ls.sock.drop() }

// SendError writes a request-level error frame on l.
func (l *lane) SendError(err *api.Error) { l.ls.sendError(err, l.id) }

// NextMessage waits for the next message queued on l, for a paused
// prototype response (which runs on the default lane, the prototype's
// only one).
func (l *lane) NextMessage(ctx, stop context.Context, expired <-chan time.Time) (core.Message, core.WaitEnd) {
	for {
		if ent, ok := l.queue.pop(); ok {
			l.ls.dequeued(ent)
			return core.Message{Body: ent.body, Started: ent.started, Reply: ent.reply}, core.WaitMessage
		}
		select {
		case <-ctx.Done():
			return core.Message{}, core.WaitGone
		case <-stop.Done():
			return core.Message{}, core.WaitStopped
		case <-expired:
			return core.Message{}, core.WaitExpired
		case <-l.queue.added:
		}
	}
}

// wsEntry is one frame read from the connection, queued on its lane.
type wsEntry struct {
	body    []byte
	started time.Time
	reply   *api.Error // answered in order instead of being run
	stream  string     // the stream_id its error frame names, if any
}

// wsQueue is one lane's FIFO of creates. It grows only while creates
// wait, so an idle connection holds no queue memory: a channel of the hard
// bound's size was the largest part of an idle connection's heap.
type wsQueue struct {
	mu       sync.Mutex
	entries  []wsEntry
	head     int
	onDemand bool          // its goroutine runs only while it has entries (the default lane's)
	worked   bool          // an on-demand queue's goroutine is running; under mu
	bound    *queueBound   // shared by the connection's lanes
	added    chan struct{} // 1-buffered: an entry was pushed
}

// queueBound is the hard bound on the entries queued on one connection,
// over all its lanes; beyond it the reader waits. Only the connection's
// reader pushes, so checking and then counting cannot overshoot.
type queueBound struct {
	n     atomic.Int64
	limit int64
	taken chan struct{} // 1-buffered: an entry was popped
}

func newQueueBound(limit int) *queueBound {
	return &queueBound{limit: int64(limit), taken: make(chan struct{}, 1)}
}

func newWSQueue(bound *queueBound) *wsQueue {
	return &wsQueue{bound: bound, added: make(chan struct{}, 1)}
}

// push appends ent, waiting while the connection is at its hard bound. It
// reports false if ctx ended first, and start when the queue is on demand
// and has no goroutine running it: the caller starts one.
func (q *wsQueue) push(ctx context.Context, ent wsEntry) (ok, start bool) {
	for q.bound.n.Load() >= q.bound.limit {
		select {
		case <-q.bound.taken:
		case <-ctx.Done():
			return false, false
		}
	}
	q.bound.n.Add(1)
	q.mu.Lock()
	q.entries = append(q.entries, ent)
	if start = q.onDemand && !q.worked; start {
		q.worked = true
	}
	q.mu.Unlock()
	signalOne(q.added)
	return true, start
}

// pop takes the next entry, if any.
func (q *wsQueue) pop() (wsEntry, bool) { return q.dequeue(false) }

// take is pop for the goroutine running the queue: finding an on-demand
// queue empty, that goroutine lets it go and must end (the next push
// starts another).
func (q *wsQueue) take() (wsEntry, bool) { return q.dequeue(true) }

func (q *wsQueue) dequeue(running bool) (wsEntry, bool) {
	q.mu.Lock()
	if q.head == len(q.entries) {
		if running {
			q.worked = false
		}
		q.mu.Unlock()
		return wsEntry{}, false
	}
	ent := q.entries[q.head]
	q.entries[q.head] = wsEntry{}
	q.head++
	if q.head == len(q.entries) {
		q.entries, q.head = nil, 0 // let the backing array go
	}
	q.mu.Unlock()
	q.bound.n.Add(-1)
	signalOne(q.bound.taken)
	return ent, true
}

func signalOne(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
