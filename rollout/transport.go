package rollout

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/workload"

	"github.com/coder/websocket"
)

// Request is one turn as the agent sees it: the whole conversation so far,
// the items that are new since the last response, and that response's id.
// Each transport decides what it really sends.
type Request struct {
	Tools    json.RawMessage
	History  []json.RawMessage // every item so far, new ones included
	New      []json.RawMessage // items since the previous response
	Previous string            // previous response id ("" on the first turn)
	Model    string
	CacheKey string
	Seed     int64
	// Reply, when set, is a replayed workload turn's reply, sent as
	// metadata (workload.ReplyKey) for the engine's workload policy.
	Reply string
	// Reasoning, when set, makes every request a reasoning client's
	// (Config.Reasoning).
	Reasoning *RaceReasoning
	// CompactThreshold, when set, asks for compaction (Config.CompactThreshold).
	CompactThreshold int
}

// Result is what came back, with client-side timings.
type Result struct {
	Response   *api.Response
	Sent       time.Time
	FirstEvent time.Time
	FirstToken time.Time
	LastToken  time.Time
	Done       time.Time
	BytesSent  int64
	BytesRecv  int64
	NewConn    bool // this request paid for a new connection
	// Started is the response id response.created announced, for a
	// stream that drops before its terminal event.
	Started string
}

// Transport is one lane's way of talking to the engine.
type Transport interface {
	// Open prepares the lane (the WebSocket dials and warms up here).
	Open(ctx context.Context, first Request) error
	Turn(ctx context.Context, req Request) (*Result, error)
	Close()
}

// NewTransport returns the transport of a lane. base is the engine's base
// URL as the lane reaches it (through the proxy); tlsConf is set when the
// engine's listener speaks TLS; stack is the modelled API stack every
// request asks for; scope, when set, is the drill scope every request
// names (X-Agentloop-Scope), so that the race's drills hit this lane only;
// race, when set, tags every request as the race's (X-Agentloop-Race).
func NewTransport(lane, base string, d *dialer, tlsConf *tls.Config, apiKey string, stack apistack.Stack, scope, race string) (Transport, error) {
	var rt http.RoundTripper = &http.Transport{DialContext: d.DialContext, TLSClientConfig: tlsConf,
		MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	if apiKey != "" {
		rt = bearer{key: apiKey, next: rt}
	}
	// Every request of the lane names the race's stack: each HTTP request,
	// and the WebSocket's upgrade request, which holds for the connection.
	rt = headerRoundTripper{name: api.HeaderStack, value: stack.String(), next: rt}
	if scope != "" {
		rt = headerRoundTripper{name: api.HeaderScope, value: scope, next: rt}
	}
	if race != "" {
		rt = headerRoundTripper{name: api.HeaderRace, value: race, next: rt}
	}
	hc := &http.Client{Transport: rt}
	switch lane {
	case LaneHTTP:
		return &httpTransport{client: hc, d: d, url: base + "/baseline/v1/responses"}, nil
	case LaneHTTPOptimized:
		return &httpTransport{client: hc, d: d, url: base + "/v1/responses"}, nil
	case LaneHTTPChained:
		return &httpTransport{client: hc, d: d, url: base + "/v1/responses", chained: true}, nil
	case LaneWS:
		return &wsTransport{client: hc, d: d, url: "ws" + strings.TrimPrefix(base, "http") + "/v1/responses"}, nil
	case LanePrototype:
		return &protoTransport{wsTransport{client: hc, d: d, url: "ws" + strings.TrimPrefix(base, "http") + "/v1/responses"}, "", 0}, nil
	}
	return nil, fmt.Errorf("unknown lane %q", lane)
}

func createBody(req Request, stored bool, items []json.RawMessage, previous string) map[string]any {
	body := map[string]any{
		"model": req.Model, "input": items, "tools": req.Tools, "tool_choice": "auto", "parallel_tool_calls": false,
		"store": stored, "stream": true, "prompt_cache_key": req.CacheKey,
		"metadata": map[string]string{"agentloop_seed": fmt.Sprint(req.Seed)},
	}
	if req.Reply != "" {
		body["metadata"].(map[string]string)[workload.ReplyKey] = req.Reply
	}
	if previous != "" {
		body["previous_response_id"] = previous
	}
	if req.Reasoning != nil {
		req.Reasoning.addTo(body)
	}
	if cm := contextManagement(req.CompactThreshold); cm != nil {
		body["context_management"] = cm
	}
	return body
}

// collector turns events into a Result.
type collector struct {
	res *Result
	// paused: response.done (the prototype's paused response) also ends
	// the turn.
	paused bool
}

func (c *collector) event(b []byte) (done bool, err error) {
	now := time.Now()
	if c.res.FirstEvent.IsZero() {
		c.res.FirstEvent = now
	}
	ev, err := api.DecodeEvent(b)
	if err != nil {
		return false, fmt.Errorf("bad event %q: %w", truncate(string(b), 200), err)
	}
	switch ev.Type {
	case api.EventCreated:
		if ev.Response != nil {
			c.res.Started = ev.Response.ID
		}
	case api.EventOutputTextDelta, api.EventArgumentsDelta:
		if c.res.FirstToken.IsZero() {
			c.res.FirstToken = now
		}
		c.res.LastToken = now
	case api.EventError:
		return true, ev.AsError()
	}
	if api.IsTerminal(ev.Type) || (c.paused && ev.Type == api.EventDone) {
		if ev.Type == api.EventDone {
			c.res.Done, c.res.Response = now, ev.Response
			return true, nil
		}
		c.res.Done = now
		c.res.Response = ev.Response
		if ev.Response.Status != "completed" {
			msg := ev.Response.Status
			if ev.Response.Error != nil {
				msg += ": " + ev.Response.Error.Message
			}
			return true, fmt.Errorf("response %s", msg)
		}
		return true, nil
	}
	return false, nil
}

// truncate cuts s to at most n bytes, at a character boundary.
func truncate(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// httpTransport is the stateless lanes (full input, store:false) and the
// chained lane (previous_response_id, store:true), over SSE.
type httpTransport struct {
	client  *http.Client
	d       *dialer
	url     string
	chained bool
}

func (t *httpTransport) Open(context.Context, Request) error { return nil }
func (t *httpTransport) Close()                              { t.client.CloseIdleConnections() }

func (t *httpTransport) Turn(ctx context.Context, req Request) (*Result, error) {
	var body map[string]any
	if t.chained {
		body = createBody(req, true, req.New, req.Previous)
		if req.Previous == "" {
			body["input"] = req.History
		}
	} else {
		body = createBody(req, false, req.History, "")
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { res.NewConn = !info.Reused }}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), "POST", t.url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	sent0, recv0 := t.d.sent.Load(), t.d.received.Load()
	res.Sent = time.Now()
	resp, err := t.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &droppedError{cause: err} // the connection failed: retried like a drop
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("POST %s: %w", t.url, httpError(resp, b))
	}
	c := collector{res: res}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		done, err := c.event(line[len("data: "):])
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &droppedError{responseID: res.Started, cause: err}
	}
	if res.Response == nil {
		return nil, &droppedError{responseID: res.Started}
	}
	// The engine ends the body right after the terminal event; reading to
	// EOF lets the keep-alive connection be reused for the next turn.
	io.Copy(io.Discard, resp.Body)
	res.BytesSent, res.BytesRecv = t.d.sent.Load()-sent0, t.d.received.Load()-recv0
	return res, nil
}

// wsTransport is WebSocket mode: one connection, a warmup, then
// previous_response_id with only the new items, store:false.
type wsTransport struct {
	client  *http.Client
	d       *dialer
	url     string
	conn    *websocket.Conn
	newConn bool
}

func (t *wsTransport) Open(ctx context.Context, first Request) error {
	return t.dial(ctx, nil)
}

func (t *wsTransport) dial(ctx context.Context, header http.Header) error {
	conn, resp, err := websocket.Dial(ctx, t.url, &websocket.DialOptions{HTTPClient: t.client, HTTPHeader: header,
		CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUpgradeRequired {
			return &upgradeError{status: resp.StatusCode, drill: resp.Header.Get(api.HeaderDrill)}
		}
		return err
	}
	conn.SetReadLimit(64 << 20)
	t.conn, t.newConn = conn, true
	return nil
}

// Warmup sends generate:false with the first items and returns its id.
func (t *wsTransport) Warmup(ctx context.Context, req Request) (*Result, error) {
	body := createBody(req, false, req.History, "")
	body["generate"] = false
	return t.send(ctx, body)
}

func (t *wsTransport) Turn(ctx context.Context, req Request) (*Result, error) {
	items := req.New
	if req.Previous == "" {
		items = req.History
	}
	return t.send(ctx, createBody(req, false, items, req.Previous))
}

func (t *wsTransport) send(ctx context.Context, body map[string]any) (*Result, error) {
	body["type"] = "response.create"
	return t.exchange(ctx, body, false)
}

// exchange sends one message and reads the events up to the end of the
// turn: the terminal event, or with paused also response.done.
func (t *wsTransport) exchange(ctx context.Context, body map[string]any, paused bool) (*Result, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	res := &Result{NewConn: t.newConn}
	t.newConn = false
	sent0, recv0 := t.d.sent.Load(), t.d.received.Load()
	res.Sent = time.Now()
	if err := t.conn.Write(ctx, websocket.MessageText, payload); err != nil {
		return nil, &droppedError{cause: err}
	}
	c := collector{res: res, paused: paused}
	for {
		_, b, err := t.conn.Read(ctx)
		if err != nil {
			return nil, &droppedError{responseID: res.Started, cause: err}
		}
		done, err := c.event(b)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	res.BytesSent, res.BytesRecv = t.d.sent.Load()-sent0, t.d.received.Load()-recv0
	return res, nil
}

// reconnect replaces the connection with a new one, which holds no
// cached response.
func (t *wsTransport) reconnect(ctx context.Context) error {
	if t.conn != nil {
		t.conn.CloseNow()
		t.conn = nil
	}
	return t.dial(ctx, nil)
}

// httpFallback is where a lane goes when the upgrade is refused: the same
// engine over HTTP, stateless with the full context, store:false.
func (t *wsTransport) httpFallback() Transport {
	return &httpTransport{client: t.client, d: t.d, url: "http" + strings.TrimPrefix(t.url, "ws")}
}

func (t *wsTransport) Close() {
	if t.conn != nil {
		t.conn.Close(websocket.StatusNormalClosure, "")
	}
}

// protoTransport is the prototype lane: one WebSocket opened with the
// legacy beta header and one long-running response. The first turn sends
// response.create; each later turn sends response.append with the tool
// outputs and resumes the same response. A turn ends at response.done (the
// response paused after a function call) or at the terminal event.
type protoTransport struct {
	wsTransport
	id   string // the response every turn belongs to
	seen int    // output items returned by earlier turns
}

func (t *protoTransport) Open(ctx context.Context, _ Request) error {
	return t.dial(ctx, http.Header{"OpenAI-Beta": {api.OpenAIBetaPrototype}})
}

func (t *protoTransport) Turn(ctx context.Context, req Request) (*Result, error) {
	var body map[string]any
	if t.id == "" {
		body = createBody(req, false, req.History, "")
		body["type"] = api.ClientResponseCreate
	} else {
		body = map[string]any{"type": api.ClientResponseAppend, "input": req.New}
	}
	res, err := t.exchange(ctx, body, true)
	if err != nil {
		return nil, err
	}
	if t.id == "" {
		t.id = res.Response.ID
	} else if res.Response.ID != t.id {
		return nil, fmt.Errorf("response.append resumed %s, want %s", res.Response.ID, t.id)
	}
	// The response carries its whole output so far; the turn is what this
	// segment added.
	r := *res.Response
	if t.seen > len(r.Output) {
		return nil, fmt.Errorf("response %s lost output items: %d after %d", r.ID, len(r.Output), t.seen)
	}
	r.Output = r.Output[t.seen:]
	t.seen += len(r.Output)
	res.Response = &r
	return res, nil
}

// bearer adds the API key to every request, the WebSocket handshake included.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

func (b bearer) CloseIdleConnections() {
	if c, ok := b.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// headerRoundTripper sends one of agentloop's headers (X-Agentloop-Stack,
// X-Agentloop-Scope, X-Agentloop-Race) on every request, the WebSocket
// handshake included (websocket.Dial goes through the same client).
type headerRoundTripper struct {
	name, value string
	next        http.RoundTripper
}

func (h headerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.next.RoundTrip(r)
}

func (h headerRoundTripper) CloseIdleConnections() {
	if c, ok := h.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
