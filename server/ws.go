package server

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/api"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
)

// wsConn is one WebSocket-mode connection: a reader (the handler's
// goroutine) that queues creates in FIFO order on their lanes, and the
// lanes (lanes.go), each of which runs its creates one at a time and owns
// its connection cache (its latest response).
type wsConn struct {
	e      *Engine
	c      *websocket.Conn
	out    *batchConn      // c's socket, on which the engine writes its event frames: a tick's share one write(2)
	ctx    context.Context // cancelled when the client goes away
	cancel context.CancelFunc
	lanes  *lanes

	queued      atomic.Int64 // creates waiting with a body
	queuedBytes atomic.Int64
	writing     *atomic.Int64 // unix nanos when the current write(2) began, 0 when idle (batchConn stamps it)
	endOnce     sync.Once

	session string      // the inspector's and the drills' session key
	scope   string      // the upgrade's drill scope header (drill.go)
	client  *api.Client // who opened the connection
	stack   api.Stack   // the modelled API stack, chosen at the upgrade
	proto   bool        // the upgrade asked for the prototype (prototype.go)
}

type wsEntry struct {
	body    []byte
	started time.Time
	reply   *api.Error // answered in its turn instead of being run
	stream  string     // the stream_id its error frame names, if any
}

func (e *Engine) handleWebSocket(c echo.Context) error {
	r := c.Request()
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return api.Errorf(http.StatusUpgradeRequired, "", api.CodeWebSocketUpgradeRequired,
			"GET /responses opens a WebSocket: send an Upgrade: websocket request.")
	}
	if aerr := e.upgradeDrill(r); aerr != nil {
		return aerr
	}
	if e.isClosing() {
		return api.Errorf(http.StatusServiceUnavailable, "", api.CodeServerError, "The server is shutting down.")
	}
	// The upgrade request's stack holds for the whole connection.
	stack, aerr := e.stackOf(r)
	if aerr != nil {
		return aerr
	}
	hj := &batchHijacker{ResponseWriter: c.Response(), writing: new(atomic.Int64)}
	conn, err := websocket.Accept(hj, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil // Accept has written the HTTP error
	}
	conn.SetReadLimit(e.cfg.WSReadLimit)
	// The connection outlives the handler's request context.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	wc := &wsConn{e: e, c: conn, out: hj.conn, writing: hj.writing, ctx: ctx, cancel: cancel,
		stack: stack, proto: isPrototype(r), session: newWSSession(), client: clientOf(r), scope: r.Header.Get(api.HeaderScope)}
	wc.lanes = newLanes(wc, newQueueBound(max(4*e.cfg.WSQueue, 16)))
	if !e.track(wc) {
		conn.Close(websocket.StatusGoingAway, "server shutting down")
		cancel()
		return nil
	}
	defer e.untrack(wc)
	// The connection is live for the inspector until the handler returns,
	// after its lanes have ended and reported their last turns.
	defer e.observeOpen(wc.session)()
	defer cancel()
	defer conn.CloseNow()
	// Ending the connection's context closes the socket, which ends a
	// write in progress.
	stopClosing := context.AfterFunc(ctx, func() { conn.CloseNow() })
	defer stopClosing()
	e.sh.Metrics.connOpened()
	defer e.sh.Metrics.connClosed()
	lifetime := time.AfterFunc(e.cfg.WSLifetime, func() { wc.end(endExpired) })
	defer lifetime.Stop()
	wc.read()
	wc.end(endGone)
	return nil
}

// read reads frames until the connection ends. It never runs a request: it
// only queues, so that pings are answered while a response streams.
func (wc *wsConn) read() {
	defer wc.cancel()
	cfg := wc.e.cfg
	for {
		typ, r, err := wc.c.Reader(wc.ctx)
		if err != nil {
			return
		}
		started := time.Now()
		body, err := io.ReadAll(r)
		if err != nil {
			return // over the read limit the library closes with 1009
		}
		ent := wsEntry{started: started}
		l := wc.lanes.def
		switch {
		case typ != websocket.MessageText:
			ent.reply = api.BadRequest("", api.CodeInvalidMessage, "Binary frames are not supported: send each message as one JSON object in a text frame.")
		default:
			// The queue bounds hold per connection, over all its lanes.
			if l, ent.stream, ent.reply = wc.lanes.route(body); ent.reply != nil {
				break
			}
			if wc.queued.Load() >= int64(cfg.WSQueue) || wc.queuedBytes.Load()+int64(len(body)) > cfg.WSQueueBytes {
				ent.reply = api.Errorf(http.StatusTooManyRequests, "", api.CodeWebSocketQueueFull,
					"Too many queued response.create messages on this connection (limit %d creates or %d bytes). Wait for responses to finish before sending more.",
					cfg.WSQueue, cfg.WSQueueBytes)
				break
			}
			ent.body = body
			wc.queued.Add(1)
			wc.queuedBytes.Add(int64(len(body)))
		}
		if !wc.lanes.push(l, ent) { // blocks past the hard bound: TCP backpressure
			return
		}
	}
}

// Why a connection ends.
type connEnd int

const (
	endGone    connEnd = iota // the client went away
	endDrained                // the server drains the connection
	endExpired                // the connection's lifetime is over
)

// end ends the connection, once, for the first reason given: each lane
// finishes the response it is running and starts no other; then a drained
// connection closes with 1001, and one whose lifetime is over is told so
// and closes with 1000. A later call returns once the connection has
// ended. Draining and the lifetime call it on a goroutine of their own, so
// an idle connection parks none to wait for them.
func (wc *wsConn) end(why connEnd) {
	wc.endOnce.Do(func() {
		wc.lanes.halt()
		switch why {
		case endDrained:
			wc.c.Close(websocket.StatusGoingAway, "server shutting down")
		case endExpired:
			wc.limitReached()
		}
		wc.cancel() // the reader may be waiting past the hard bound rather than on the socket
	})
}

// dequeued releases a taken entry's share of the queue bounds.
func (wc *wsConn) dequeued(ent wsEntry) {
	if ent.body != nil {
		wc.queued.Add(-1)
		wc.queuedBytes.Add(-int64(len(ent.body)))
	}
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
func (q *wsQueue) pop() (wsEntry, bool) { return q.next(false) }

// take is pop for the goroutine running the queue: finding an on-demand
// queue empty, that goroutine lets it go and must end (the next push
// starts another).
func (q *wsQueue) take() (wsEntry, bool) { return q.next(true) }

func (q *wsQueue) next(running bool) (wsEntry, bool) {
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

func (wc *wsConn) limitReached() {
	_ = wc.write(api.AppendWSError(nil, connectionLimitReached(wc.e.cfg.WSLifetime), ""))
	wc.c.Close(websocket.StatusNormalClosure, "connection lifetime reached")
}

// connectionLimitReached is the error a connection gets when its lifetime
// ends, or when the connection-limit drill fires, in OpenAI's words.
func connectionLimitReached(lifetime time.Duration) *api.Error {
	return api.BadRequest("", api.CodeWebSocketConnectionLimitReached,
		"Responses websocket connection limit reached (%s). Create a new websocket connection to continue.", lifetimeText(lifetime))
}

// lifetimeText says a lifetime as the limit message does: whole minutes
// as "60 minutes", anything else as a Go duration ("300ms").
func lifetimeText(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "1 minute"
	case d > time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " minutes"
	}
	return d.String()
}

// handle runs one entry of lane l: a reply decided when it was read, or a
// create through the pipeline. Every frame of a named lane names it.
func (wc *wsConn) handle(l *lane, ent wsEntry) {
	e := wc.e
	fl := &flight{trace: e.newTrace("websocket", ent.started), body: ent.body}
	fl.trace.Session, fl.trace.Client, fl.trace.scope = wc.session, wc.client, wc.scope
	var aerr *api.Error
	defer func() { e.observe(fl.trace, aerr) }()
	if ent.reply != nil {
		aerr = ent.reply
		e.sh.Metrics.rejected("websocket", e.cfg.Name, ent.reply.Status)
		wc.lanes.sendError(ent.reply, ent.stream)
		return
	}
	release, aerr := e.sh.Budget.acquire(len(ent.body))
	if aerr != nil {
		e.sh.Metrics.rejected("websocket", e.cfg.Name, aerr.Status)
		wc.lanes.sendError(aerr, l.id)
		return
	}
	defer release()
	inner := admitMessage
	if wc.proto {
		inner, fl.proto = admitPrototype, wc
	}
	var taken *chainState // the lane's latest response, when fl continues it
	fl.admit = wc.lanes.admit(l, fl, inner, &taken)
	e.useStack(fl, wc.stack)
	aerr = e.prepare(wc.ctx, fl)
	if aerr == errProcessed {
		wc.lanes.keep(l, taken)
		return
	}
	if aerr != nil {
		// A failed continuation evicts its parent: a taken one stays out.
		e.sh.Metrics.rejected("websocket", e.cfg.Name, aerr.Status)
		wc.lanes.sendError(aerr, l.id)
		return
	}
	if aerr = wc.limitDrill(l, fl); aerr != nil {
		return
	}
	res := e.generate(wc.ctx, fl, &l.out)
	wc.lanes.keep(l, res.state) // without a state, a taken parent stays out
}

// errProcessed ends the pipeline for a response.processed message, which
// gets no reply.
var errProcessed = &api.Error{Status: http.StatusNoContent, Message: "response.processed gets no reply."}

// admitMessage applies the WebSocket message rules to a decoded envelope:
// its type, and what this transport does not support.
func admitMessage(req *api.CreateRequest) *api.Error {
	switch req.Type {
	case api.ClientResponseCreate:
	case api.ClientResponseProcessed:
		return errProcessed
	case "":
		return api.BadRequest("type", api.CodeMissingRequiredParameter, "Missing required parameter: 'type'.")
	default:
		return api.BadRequest("type", api.CodeInvalidValue, "Invalid value: '%s'. Supported values are: 'response.create' and 'response.processed'.", req.Type)
	}
	if req.Background != nil && *req.Background {
		return api.BadRequest("background", api.CodeUnsupportedParameter, "'background' is not supported over WebSocket.")
	}
	if req.Model == "" {
		return api.MissingParameter("model")
	}
	return nil
}

// event frames one event into the batch that flush sends.
func (wc *wsConn) event(_ string, b []byte) error {
	return wc.out.text(b)
}

// flush sends the batch's frames in one write; the stall watchdog aborts a
// write that hangs. A failed write leaves a frame cut short, after which
// nothing more can go on the connection: it is closed.
func (wc *wsConn) flush() error {
	err := wc.out.release()
	if err != nil {
		wc.cancel()
		wc.c.CloseNow()
	}
	return err
}

// write sends one frame outside a stream's batch, at once, with anything
// still gathered before it.
func (wc *wsConn) write(b []byte) error {
	if err := wc.out.text(b); err != nil {
		return err
	}
	return wc.out.release()
}

// track registers a connection; it fails once the engine is closing.
func (e *Engine) track(wc *wsConn) bool {
	e.connsMu.Lock()
	defer e.connsMu.Unlock()
	if e.closing {
		return false
	}
	e.conns[wc] = struct{}{}
	e.stalls.start(e)
	return true
}

func (e *Engine) untrack(wc *wsConn) {
	e.connsMu.Lock()
	delete(e.conns, wc)
	e.connsMu.Unlock()
}

func (e *Engine) isClosing() bool {
	e.connsMu.Lock()
	defer e.connsMu.Unlock()
	return e.closing
}

// Connections reports how many WebSocket connections are open.
func (e *Engine) Connections() int {
	e.connsMu.Lock()
	defer e.connsMu.Unlock()
	return len(e.conns)
}

// CloseConnections is the WebSocket part of graceful shutdown: it refuses
// new connections, lets each connection finish the response in flight
// (within ctx), then closes them all with 1001.
func (e *Engine) CloseConnections(ctx context.Context) {
	e.connsMu.Lock()
	e.closing = true
	conns := make([]*wsConn, 0, len(e.conns))
	for wc := range e.conns {
		conns = append(conns, wc)
	}
	e.connsMu.Unlock()
	for _, wc := range conns {
		go wc.end(endDrained)
	}
	defer e.stalls.stop()
	if e.waitConnections(ctx.Done()) {
		return
	}
	// Grace is over: end what is still generating with a terminal event;
	// each connection then closes itself with 1001.
	e.StopGenerating()
	if e.waitConnectionsAfter(2 * time.Second) {
		return
	}
	e.connsMu.Lock()
	for wc := range e.conns {
		wc.cancel()
		wc.c.CloseNow()
	}
	e.connsMu.Unlock()
}

func (e *Engine) waitConnectionsAfter(d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return e.waitConnections(ctx.Done())
}

// waitConnections waits until every connection is gone (true) or until
// stop fires (false).
func (e *Engine) waitConnections(stop <-chan struct{}) bool {
	for e.Connections() > 0 {
		select {
		case <-stop:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// stallWatch is the one write-stall watchdog of an engine: it aborts any
// connection whose current write has not finished within the stall limit.
// A stalled socket cannot take a close frame, so it is closed outright.
type stallWatch struct {
	limit time.Duration
	once  sync.Once
	done  chan struct{}
	stops sync.Once
}

func newStallWatch(limit time.Duration) *stallWatch {
	return &stallWatch{limit: limit, done: make(chan struct{})}
}

func (s *stallWatch) start(e *Engine) {
	if s.limit <= 0 {
		return
	}
	s.once.Do(func() {
		tick := min(max(s.limit/4, 10*time.Millisecond), time.Second)
		go func() {
			t := time.NewTicker(tick)
			defer t.Stop()
			for {
				select {
				case <-s.done:
					return
				case now := <-t.C:
					e.abortStalled(now, s.limit)
				}
			}
		}()
	})
}

func (s *stallWatch) stop() { s.stops.Do(func() { close(s.done) }) }

func (e *Engine) abortStalled(now time.Time, limit time.Duration) {
	e.connsMu.Lock()
	defer e.connsMu.Unlock()
	for wc := range e.conns {
		if since := wc.writing.Load(); since != 0 && now.Sub(time.Unix(0, since)) > limit {
			e.sh.Log.Warn("websocket write stalled; aborting connection", "stalled_for", now.Sub(time.Unix(0, since)))
			e.sh.Metrics.stallAborted()
			wc.cancel()
			wc.c.CloseNow()
		}
	}
}

// Close stops the engine's background work.
func (e *Engine) Close() { e.stalls.stop() }
