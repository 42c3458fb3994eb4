package wsmode

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/server/core"
	"agentloop/server/request"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
)

// wsConn is one WebSocket-mode connection: a reader (the handler's
// goroutine) that queues creates in FIFO order on their lanes, and the
// lanes (lanes.go), each of which runs its creates one at a time and owns
// its connection cache (its latest response).
type wsConn struct {
	s      *Server
	e      *core.Engine
	c      *websocket.Conn
	out    *batchConn      // c's socket, on which the engine writes its event frames: a tick's share one write(2)
	ctx    context.Context // cancelled when the client goes away
	cancel context.CancelFunc
	lanes  *lanes

	writing *atomic.Int64 // unix nanos when the current write(2) began, 0 when idle (batchConn stamps it)
	endOnce sync.Once

	sessionKey string         // the connection's client-session key (server/request/request.go), for the inspector and the drills
	scope      string         // the upgrade's X-Agentloop-Scope header
	client     *api.Client    // who opened the connection
	stack      apistack.Stack // the modelled API stack, chosen at the upgrade
	proto      bool           // the upgrade asked for the prototype (server/core/prototype.go)
	limitErr   *api.Error     // the error frame a shorter limit ends the connection with (limit.go); nil: the lifetime's
	steers     steerTargets   // its responses in flight, for response.steer (steer.go)
}

// Server is one engine's WebSocket mode: GET /responses, its open
// connections and their write-stall watchdog.
type Server struct {
	e     *core.Engine
	conns *connSet
	limit ConnLimit // a shorter limit for some connections (limit.go); nil: none
}

// New returns engine e's WebSocket mode.
func New(e *core.Engine) *Server {
	return &Server{e: e, conns: newConnSet(e.Config().WriteStall)}
}

// Handle is GET /responses: it opens a WebSocket-mode connection and
// serves it until it ends.
func (s *Server) Handle(c echo.Context) error {
	e := s.e
	cfg := e.Config()
	r := c.Request()
	if !request.IsUpgrade(r) {
		return api.Errorf(http.StatusUpgradeRequired, "", api.CodeWebSocketUpgradeRequired,
			"GET /responses opens a WebSocket: send an Upgrade: websocket request.")
	}
	if s.conns.isClosing() {
		return api.Errorf(http.StatusServiceUnavailable, "", api.CodeServerError, "The server is shutting down.")
	}
	// The upgrade request's stack holds for the whole connection.
	stack, aerr := apistack.FromRequest(r, cfg.Stack)
	if aerr != nil {
		return aerr
	}
	hj := &batchHijacker{ResponseWriter: c.Response(), writing: new(atomic.Int64)}
	conn, err := websocket.Accept(hj, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil // Accept has written the HTTP error
	}
	conn.SetReadLimit(cfg.WSReadLimit)
	// The connection outlives the handler's request context.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	wc := &wsConn{s: s, e: e, c: conn, out: hj.conn, writing: hj.writing, ctx: ctx, cancel: cancel,
		stack: stack, proto: isPrototype(r), sessionKey: request.NewWSClientSessionKey(), client: request.ClientOf(r), scope: api.AgentloopHeader(r, api.HeaderScope)}
	wc.lanes = newLanes(ctx, wc, wc.proto, newQueueBound(max(4*cfg.WSQueue, 16)), e.Shared().States, wc.handle)
	if !s.track(wc) {
		conn.Close(websocket.StatusGoingAway, "server shutting down")
		cancel()
		return nil
	}
	defer s.conns.remove(wc)
	// The connection is live for the inspector until the handler returns,
	// after its lanes have ended and reported their last requests.
	defer e.ObserveOpen(wc.sessionKey)()
	defer cancel()
	defer conn.CloseNow()
	// Ending the connection's context closes the socket, which ends a
	// write in progress.
	stopClosing := context.AfterFunc(ctx, func() { conn.CloseNow() })
	defer stopClosing()
	e.Shared().Metrics.ConnOpened()
	defer e.Shared().Metrics.ConnClosed()
	defer wc.startLimit(cfg.WSLifetime)()
	wc.read()
	wc.end(endGone)
	wc.lanes.releaseStates() // the lanes have halted: nothing takes or keeps state now
	return nil
}

// read reads frames until the connection ends. It never runs a request: it
// only queues, so that pings are answered while a response streams.
func (wc *wsConn) read() {
	defer wc.cancel()
	cfg := wc.e.Config()
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
		if typ == websocket.MessageText && api.IsSteer(body) {
			wc.steer(body) // it steers a response in flight: never queued
			continue
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
			if !wc.lanes.reserve(len(body), cfg.WSQueue, cfg.WSQueueBytes) {
				ent.reply = api.Errorf(http.StatusTooManyRequests, "", api.CodeWebSocketQueueFull,
					"Too many queued response.create messages on this connection (limit %d creates or %d bytes). Wait for responses to finish before sending more.",
					cfg.WSQueue, cfg.WSQueueBytes)
				break
			}
			ent.body = body
		}
		if !wc.lanes.push(l, ent) { // blocks past the hard bound: TCP backpressure
			return
		}
	}
}

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

func (wc *wsConn) limitReached() {
	err := wc.limitErr
	if err == nil {
		err = ConnectionLimitReached(wc.e.Config().WSLifetime)
	}
	_ = wc.write(api.AppendWSError(nil, err, ""))
	wc.c.Close(websocket.StatusNormalClosure, "connection lifetime reached")
}

// handle runs one entry of lane l, then the successors its steering
// hands over to (steer.go), one after another.
func (wc *wsConn) handle(l *lane, ent wsEntry) {
	var from *succession
	for {
		if from = wc.handleOne(l, ent, from); from == nil {
			return
		}
		if wc.lanes.ending() {
			wc.successionFailed(l, from, api.Errorf(http.StatusServiceUnavailable, "", api.CodeServerError, "The connection is closing."))
			return
		}
		ent = successorEntry(from)
	}
}

// handleOne runs one entry of lane l: a reply decided when it was read, or
// a create through the pipeline (from: a successor's). Every frame of a
// named lane names it. It returns the successor the response handed over
// to, if any.
func (wc *wsConn) handleOne(l *lane, ent wsEntry, from *succession) *succession {
	e := wc.e
	fl := e.NewFlight("websocket", ent.started, ent.body)
	fl.Trace.Session, fl.Trace.Client = wc.sessionKey, wc.client
	fl.Trace.SetScope(wc.scope)
	var aerr *api.Error
	defer func() {
		if aerr != core.ErrProcessed { // response.processed gets no reply, and is no request
			e.Observe(fl.Trace, aerr)
		}
	}()
	if ent.reply != nil {
		aerr = ent.reply
		e.Rejected("websocket", ent.reply.Status)
		wc.lanes.sendError(ent.reply, ent.stream)
		return nil
	}
	release, aerr := e.Shared().Budget.Acquire(len(ent.body))
	if aerr != nil {
		e.Rejected("websocket", aerr.Status)
		if from == nil {
			wc.lanes.sendError(aerr, l.id)
		}
		wc.successionFailed(l, from, aerr)
		return nil
	}
	defer release()
	fl.Via = core.Via{Admit: wc.rulesOn(l), Conn: l, Prototype: wc.proto}
	parked := wc.steerable(l, fl, from)
	e.UseStack(fl, wc.stack)
	aerr = e.Prepare(wc.ctx, fl)
	if aerr == core.ErrProcessed {
		return nil
	}
	if aerr != nil {
		// A failed continuation evicts its parent: one the parent step
		// took stays out, and one a failed parse never reached goes now.
		if req := fl.Request(); req != nil {
			l.forget(req.PreviousResponseID)
		}
		e.Rejected("websocket", aerr.Status)
		if from == nil { // a successor's create is the server's: its input comes back instead
			wc.lanes.sendError(aerr, l.id)
		}
		wc.successionFailed(l, from, aerr)
		wc.successionFailed(l, parked, aerr)
		if aerr.Code == api.CodeWebSocketConnectionLimitReached {
			// The connection's limit is reached (the connection-limit
			// drill): the connection closes with 1000.
			wc.c.Close(websocket.StatusNormalClosure, "connection limit reached")
			wc.cancel()
		}
		return nil
	}
	res := e.Generate(wc.ctx, fl, &l.out)
	wc.lanes.remember(l, res.State) // without a state, a taken parent stays out
	return wc.steered(l, fl, res)
}

// rulesOn is the parse-stage rule of a create on lane l: the connection's
// message rules (the prototype's on a prototype connection), then the lane
// the frame must name.
func (wc *wsConn) rulesOn(l *lane) func(*api.CreateRequest) *api.Error {
	rules := admitMessage
	if wc.proto {
		rules = admitPrototype
	}
	return func(req *api.CreateRequest) *api.Error {
		if err := rules(req); err != nil {
			return err
		}
		return l.named(req)
	}
}

// drop closes the socket at once, with no close frame.
func (wc *wsConn) drop() {
	wc.cancel()
	wc.c.CloseNow()
}

// named frames one event into the batch that flush sends, with stream's
// stream_id when it is not "".
func (wc *wsConn) named(b []byte, stream string) error {
	return wc.out.text(b, stream)
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
	if err := wc.out.text(b, ""); err != nil {
		return err
	}
	return wc.out.release()
}

// track registers a connection; it fails once the engine is closing.
func (s *Server) track(wc *wsConn) bool {
	if !s.conns.add(wc) {
		return false
	}
	s.conns.stalls.start(s.abortStalled)
	return true
}

// Connections reports how many WebSocket connections are open.
func (s *Server) Connections() int { return s.conns.count() }

// CloseConnections is the WebSocket part of graceful shutdown: it refuses
// new connections, lets each connection finish the response in flight
// (within ctx), then closes them all with 1001.
func (s *Server) CloseConnections(ctx context.Context) {
	for _, c := range s.conns.closeAll() {
		go c.end(endDrained)
	}
	defer s.conns.stalls.stop()
	if s.conns.wait(ctx.Done()) {
		return
	}
	// Grace is over: end what is still generating with a terminal event;
	// each connection then closes itself with 1001.
	s.e.StopGenerating()
	if s.conns.waitFor(2 * time.Second) {
		return
	}
	s.conns.dropAll()
}

// abortStalled aborts every connection whose current write began more than
// the stall limit before now. A stalled socket cannot take a close frame,
// so it is closed outright.
func (s *Server) abortStalled(now time.Time, limit time.Duration) {
	s.conns.each(func(c liveConn) {
		if since := c.writingSince(); since != 0 && now.Sub(time.Unix(0, since)) > limit {
			s.e.Shared().Log.Warn("websocket write stalled; aborting connection", "stalled_for", now.Sub(time.Unix(0, since)))
			s.e.Shared().Metrics.StallAborted()
			c.drop()
		}
	})
}

// Close stops the engine's background work.
func (s *Server) Close() { s.conns.stalls.stop() }

// writingSince is when the current write(2) began, in unix nanos; 0 when
// the socket is idle.
func (wc *wsConn) writingSince() int64 { return wc.writing.Load() }
