package server

import (
	"bytes"
	"encoding/json"
	"maps"
	"sync"

	"agentloop/api"
)

// Lanes (PROTOCOL.md §7.6). A response.create's stream_id names a FIFO
// lane of its connection; without one it joins the default lane. Each lane
// runs its creates one at a time, in order, on a goroutine of its own (the
// default lane's only while it has entries, so that an idle connection
// costs its reader alone), and keeps its own connection cache:
// its latest response. A continuation finds its own lane's latest response
// there, or forks another lane's (parentFor); anything else is the store's,
// or previous_response_not_found. Lanes run concurrently, at most
// api.MaxActiveResponses responses at once per connection; a connection
// may name at most api.MaxNamedStreams lanes over its life. The queue
// bounds (count and bytes) hold per connection, over all its lanes. A
// lane's turn is the same pipeline as any other: lanes change only which
// turns may overlap, never the work a turn does.

// lane is one FIFO of a connection.
type lane struct {
	id    string // "" for the default lane
	queue *wsQueue
	cache *chainState // the lane's latest response; under lanes.mu
	out   laneSink
}

// lanes is a connection's lanes and what they share.
type lanes struct {
	wc     *wsConn
	def    *lane
	bound  *queueBound   // the hard bound on entries queued over all lanes
	active chan struct{} // one token per running response

	mu      sync.Mutex
	named   map[string]*lane
	stopped bool           // no lane starts anything new
	stop    chan struct{}  // closed when stopped
	wg      sync.WaitGroup // the lanes' goroutines

	writeMu sync.Mutex // one lane writes to the socket at a time
}

func newLanes(wc *wsConn, bound *queueBound) *lanes {
	ls := &lanes{wc: wc, bound: bound, active: make(chan struct{}, api.MaxActiveResponses), stop: make(chan struct{})}
	ls.def = ls.newLane("")
	ls.def.queue.onDemand = true
	return ls
}

func (ls *lanes) newLane(id string) *lane {
	return &lane{id: id, queue: newWSQueue(ls.bound), out: laneSink{ls: ls, id: id}}
}

// push queues ent on lane l, waiting past the hard bound (TCP
// backpressure); it reports false if the connection ended first. An entry
// for the default lane starts its goroutine when it has none.
func (ls *lanes) push(l *lane, ent wsEntry) bool {
	ok, start := l.queue.push(ls.wc.ctx, ent)
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
	if !named || ls.wc.proto {
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
	wc := ls.wc
	for {
		select {
		case <-wc.ctx.Done():
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
			case <-wc.ctx.Done():
			case <-ls.stop:
			case <-l.queue.added:
			}
			continue
		}
		wc.dequeued(ent)
		create := ent.reply == nil
		if create {
			// A create waits for one of the connection's response slots;
			// lanes get them in the order they began to wait.
			select {
			case ls.active <- struct{}{}:
			case <-wc.ctx.Done():
				return
			case <-ls.stop:
				return
			}
		}
		wc.handle(l, ent) // ent is not used after: its body can go once parsed
		if create {
			<-ls.active
		}
	}
}

// admit is the parse-stage rule of a create on lane l: the transport's
// message rules (inner), the lane it must name, and its connection-cache
// parent, set on fl as the request's previous_response_id asks (see
// parentFor). taken is set when fl took l's own latest response.
func (ls *lanes) admit(l *lane, fl *flight, inner func(*api.CreateRequest) *api.Error, taken **chainState) func(*api.CreateRequest) *api.Error {
	return func(req *api.CreateRequest) *api.Error {
		fl.cached, *taken = ls.parentFor(l, req.PreviousResponseID)
		if err := inner(req); err != nil {
			return err
		}
		return l.named(req)
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

// parentFor is the connection cache's answer to a create on lane l that
// continues id (PROTOCOL.md §7.5, §7.6):
//   - l's own latest response, taken out of the cache for the turn: the
//     turn extends it in place, then replaces it with its own response, or
//     on failure leaves it evicted;
//   - another lane's latest response, as a fork: a copy whose call ids and
//     tokens the turn extends without touching the other lane's, which
//     keeps its parent whatever the fork's outcome;
//   - otherwise l's latest response, not taken, which the turn only
//     compares against id (a miss: the store, or previous_response_not_found).
func (ls *lanes) parentFor(l *lane, id string) (cached, taken *chainState) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if id == "" {
		return l.cache, nil
	}
	if c := l.cache; c != nil && c.id == id {
		l.cache = nil
		return c, c
	}
	if c := ls.def.cache; l != ls.def && c != nil && c.id == id {
		return c.fork(), nil
	}
	for _, o := range ls.named {
		if c := o.cache; o != l && c != nil && c.id == id {
			return c.fork(), nil
		}
	}
	return l.cache, nil
}

// keep makes s lane l's latest response; nil leaves the cache as it is.
func (ls *lanes) keep(l *lane, s *chainState) {
	if s == nil {
		return
	}
	ls.mu.Lock()
	l.cache = s
	ls.mu.Unlock()
}

// fork copies a cached response for a continuation on another lane: the
// turn adds to its call ids and appends to its tokens, which must not
// reach the original, still its own lane's latest response.
func (p *chainState) fork() *chainState {
	c := *p
	c.tokens = p.tokens[:len(p.tokens):len(p.tokens)]
	c.callIDs = maps.Clone(p.callIDs)
	return &c
}

// laneSink is a lane's sink: it writes the lane's events to the socket,
// one lane at a time, each event of a named lane with its stream_id.
type laneSink struct {
	ls  *lanes
	id  string
	buf []byte // the event with its stream_id, reused
}

func (s *laneSink) event(typ string, b []byte) error {
	if s.id != "" {
		s.buf = api.AppendWithStreamID(s.buf[:0], b, s.id)
		b = s.buf
		if cap(s.buf) > 64<<10 {
			s.buf = nil // an idle lane keeps no large snapshot's buffer
		}
	}
	s.ls.writeMu.Lock()
	defer s.ls.writeMu.Unlock()
	return s.ls.wc.event(typ, b)
}

func (s *laneSink) flush() error {
	s.ls.writeMu.Lock()
	defer s.ls.writeMu.Unlock()
	return s.ls.wc.flush()
}

// sendError writes a request-level error frame, naming stream when it is
// not empty.
func (ls *lanes) sendError(e *api.Error, stream string) {
	b := api.AppendWSError(nil, e, stream)
	ls.writeMu.Lock()
	defer ls.writeMu.Unlock()
	_ = ls.wc.write(b)
}
