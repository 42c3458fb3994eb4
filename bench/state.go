package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"agentloop/api"

	"github.com/coder/websocket"
)

// StateConfig says how many agent sessions to hold idle on an engine, each
// one WebSocket connection that sent one response.create: instructions
// every session shares (an agent's) and an input of its own.
type StateConfig struct {
	BaseURL      string
	Path         string // API prefix; default "/v1"
	Sessions     int
	SharedTokens int // the instructions, the same for every session
	UniqueTokens int // each session's own input
	Model        string
	Header       http.Header
	// Parallel is how many sessions open at once (default 4).
	Parallel int
	// Settle is how long the idle sessions' RSS must not fall by more
	// than 1% for it to count as settled (default 5 s; at most
	// rssSettleMax): an engine returns a burst's memory to the system a
	// moment after the burst, and its collection takes seconds on a busy
	// machine.
	Settle time.Duration
	// SharedProcess says the engine runs in this process.
	SharedProcess bool
	// HeapAfterGC, when set (an engine in this process), reads the live
	// heap after a collection; the report's heap figures come from it.
	HeapAfterGC func() uint64
	// Held, when set, is called once every session is open and idle, before
	// anything is closed (a heap profile is written there).
	Held func()
}

// StateReport is what holding the sessions cost the engine.
type StateReport struct {
	Sessions     int      `json:"sessions"`
	Opened       int      `json:"opened"` // sessions whose create completed
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	SharedTokens int      `json:"shared_tokens_requested"`
	UniqueTokens int      `json:"unique_tokens_requested"`
	// InputTokens is the engine's usage.input_tokens of one session's
	// create (the first's): the tokens its state caches.
	InputTokens   int     `json:"input_tokens"`
	OpenSeconds   float64 `json:"open_seconds"`
	SharedProcess bool    `json:"shared_process"`

	// Per session. Heap figures are after a collection and need an engine
	// in this process; RSS and state bytes come from the engine's metrics.
	HeapPerSession  float64 `json:"heap_bytes_per_session,omitempty"`
	FreedPerSession float64 `json:"heap_freed_on_close_bytes_per_session,omitempty"`
	RSSPerSession   float64 `json:"rss_bytes_per_session"`
	// StatePerSession is the engine's own count of the connection state
	// it holds (agentloop_connection_state_bytes), per session open.
	StatePerSession float64 `json:"state_bytes_per_session"`
	StateBytes      float64 `json:"state_bytes"`
	StateBudget     float64 `json:"state_budget_bytes"`
	RSSBefore       float64 `json:"rss_before_bytes"`
	// RSSOpened is the RSS once every state is held, just after the burst
	// of opening; RSSHeld is the RSS of the idle sessions once it has
	// settled (StateConfig.Settle), which RSSPerSession divides.
	RSSOpened  float64 `json:"rss_opened_bytes"`
	RSSHeld    float64 `json:"rss_held_bytes"`
	RSSSettled float64 `json:"rss_settled_seconds"`
	// Drops are the sessions whose state the budget dropped
	// (agentloop_connection_state_drops_total).
	Drops float64 `json:"drops"`

	// The continuations at the end: the newest session's (which the
	// budget never drops) and the oldest's (the first a budget drops).
	Newest Continuation `json:"newest"`
	Oldest Continuation `json:"oldest"`
}

// Continuation is one session's next create after the hold.
type Continuation struct {
	Session int `json:"session"`
	// Result is "continued" (the connection cache answered),
	// "previous_response_not_found" (its state was dropped) or an error.
	Result string `json:"result"`
	// PreInference is the median of continuationRepeats continuations'
	// pre-inference time, the first's cached and input tokens beside it.
	PreInference float64 `json:"pre_inference_ms"`
	CachedTokens int     `json:"cached_tokens"`
	InputTokens  int     `json:"input_tokens"`
	// Recovered: after previous_response_not_found, the session resent
	// its full context on the same connection and got a response.
	Recovered bool `json:"recovered,omitempty"`
}

// stateSession is one open session, as its client keeps it.
type stateSession struct {
	conn   *websocket.Conn
	index  int               // its number: its input is stateTexts.unique(index), made again when needed
	prev   string            // its response's id
	output []json.RawMessage // its response's output items, for a full resend
}

// State opens cfg.Sessions sessions, leaves them idle, reads the engine's
// memory, continues the newest and the oldest, then closes them all and,
// with an engine in this process, reads what closing freed.
func State(ctx context.Context, cfg StateConfig) (*StateReport, error) {
	if cfg.Path == "" {
		cfg.Path = "/v1"
	}
	if cfg.Sessions < 1 || cfg.UniqueTokens < 1 || cfg.SharedTokens < 0 {
		return nil, errors.New("state: need sessions ≥ 1, unique tokens ≥ 1 and shared tokens ≥ 0")
	}
	if cfg.Model == "" {
		cfg.Model = api.DefaultModel
	}
	if cfg.Parallel < 1 {
		cfg.Parallel = 4
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	url := "ws" + strings.TrimPrefix(base, "http") + cfg.Path + "/responses"
	mc := &http.Client{Timeout: 30 * time.Second}
	texts, err := newStateTexts(cfg.SharedTokens, cfg.UniqueTokens)
	if err != nil {
		return nil, err
	}
	before, err := scrapeMetrics(ctx, mc, base+"/metrics", cfg.Header)
	if err != nil {
		return nil, fmt.Errorf("state: engine metrics: %w", err)
	}
	var heapBefore uint64
	if cfg.HeapAfterGC != nil {
		heapBefore = cfg.HeapAfterGC()
	}
	rep := &StateReport{Sessions: cfg.Sessions, SharedTokens: cfg.SharedTokens, UniqueTokens: cfg.UniqueTokens,
		SharedProcess: cfg.SharedProcess, RSSBefore: before.get("process_resident_memory_bytes")}
	fail := failureCounter(&rep.Errors, &rep.ErrorSamples)
	var mu sync.Mutex // guards rep.Opened and rep.InputTokens
	sessions := make([]*stateSession, cfg.Sessions)
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.conn.CloseNow()
			}
		}
	}()
	opened := time.Now()
	// Sessions open in order, a few at once, so that "oldest" means the
	// first ones.
	eachConn(cfg.Sessions, cfg.Parallel, func(i int) {
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: cfg.Header, CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			fail(fmt.Errorf("dial: %w", err))
			return
		}
		c.SetReadLimit(64 << 20)
		s := &stateSession{conn: c, index: i}
		sessions[i] = s
		input := []json.RawMessage{userMessage(texts.unique(i))}
		res, err := s.create(ctx, cfg.Model, texts.shared, "", input)
		if err != nil {
			fail(fmt.Errorf("session %d: %w", i, err))
			return
		}
		s.prev, s.output = res.ID, res.Output
		mu.Lock()
		rep.Opened++
		if i == 0 {
			rep.InputTokens = res.Usage.InputTokens
		}
		mu.Unlock()
	})
	rep.OpenSeconds = time.Since(opened).Seconds()
	if rep.Opened == 0 {
		return rep, fmt.Errorf("state: no session opened: %v", rep.ErrorSamples)
	}
	// The engine keeps a response's state just after its terminal event:
	// give it up to 2 s to hold (or drop) every session's.
	var held metricsSample
	for deadline := time.Now().Add(2 * time.Second); ; pause(ctx, 20*time.Millisecond) {
		held, err = scrapeMetrics(ctx, mc, base+"/metrics", cfg.Header)
		if err != nil {
			return nil, fmt.Errorf("state: engine metrics: %w", err)
		}
		drops := held.get("agentloop_connection_state_drops_total") - before.get("agentloop_connection_state_drops_total")
		settled := held.get("agentloop_connection_states") - before.get("agentloop_connection_states") + drops
		if !held.has("agentloop_connection_states") || settled >= float64(rep.Opened) || time.Now().After(deadline) {
			break
		}
	}
	n := float64(rep.Opened)
	if cfg.HeapAfterGC != nil {
		rep.HeapPerSession = (float64(cfg.HeapAfterGC()) - float64(heapBefore)) / n
	}
	if cfg.Held != nil {
		cfg.Held()
	}
	rep.RSSOpened = held.get("process_resident_memory_bytes")
	rep.RSSHeld, rep.RSSSettled = settledRSS(ctx, mc, base+"/metrics", cfg.Header, rep.RSSOpened, cfg.Settle)
	rep.RSSPerSession = (rep.RSSHeld - rep.RSSBefore) / n
	rep.StateBytes = held.get("agentloop_connection_state_bytes")
	rep.StateBudget = held.get("agentloop_connection_state_budget_bytes")
	rep.StatePerSession = (rep.StateBytes - before.get("agentloop_connection_state_bytes")) / n
	rep.Drops = held.get("agentloop_connection_state_drops_total") - before.get("agentloop_connection_state_drops_total")

	last, first := -1, -1
	for i, s := range sessions {
		if s != nil && s.prev != "" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	rep.Newest = sessions[last].continueAfterHold(ctx, mc, base, cfg, texts)
	if first != last {
		rep.Oldest = sessions[first].continueAfterHold(ctx, mc, base, cfg, texts)
	}
	if cfg.HeapAfterGC != nil {
		held := cfg.HeapAfterGC()
		for i, s := range sessions {
			if s != nil {
				s.conn.Close(websocket.StatusNormalClosure, "")
				sessions[i] = nil
			}
		}
		// The engine lets a connection's state go once its handler has
		// returned: wait for its gauge of open connections to fall.
		gauge := "agentloop_active_websocket_connections"
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); pause(ctx, 20*time.Millisecond) {
			m, err := scrapeMetrics(ctx, mc, base+"/metrics", cfg.Header)
			if err == nil && m.get(gauge) <= before.get(gauge) {
				break
			}
		}
		rep.FreedPerSession = (float64(held) - float64(cfg.HeapAfterGC())) / n
	}
	return rep, nil
}

// rssSettleMax bounds the watch for idle sessions' RSS to settle: an
// engine returns a burst's memory to the system a moment after it
// (server/core, StateBudget), and an idle server is what the figure is of.
const rssSettleMax = 30 * time.Second

// settledRSS reads the engine's RSS until it has not fallen by more than
// 1% in settle (default 5 s), or rssSettleMax has passed, from opened; it
// returns the last reading and the seconds it took.
func settledRSS(ctx context.Context, mc *http.Client, url string, h http.Header, opened float64, settle time.Duration) (float64, float64) {
	if settle <= 0 {
		settle = 5 * time.Second
	}
	rssSettle := min(settle, rssSettleMax)
	start := time.Now()
	last, low, since := opened, opened, start
	for time.Since(start) < rssSettleMax && time.Since(since) < rssSettle {
		pause(ctx, 250*time.Millisecond)
		m, err := scrapeMetrics(ctx, mc, url, h)
		if err != nil || ctx.Err() != nil {
			break
		}
		if last = m.get("process_resident_memory_bytes"); last < low*0.99 {
			low, since = last, time.Now()
		}
	}
	return last, time.Since(start).Seconds()
}

// continueAfterHold sends session i's next create: a short new item after
// its response. If the engine dropped its state, the session recovers as
// a correct client does, resending its full context without
// previous_response_id.
func (s *stateSession) continueAfterHold(ctx context.Context, mc *http.Client, base string, cfg StateConfig, texts *stateTexts) Continuation {
	c := Continuation{Session: s.index}
	shared := texts.shared
	next := userMessage("Run the tests again and report what changed.")
	res, err := s.create(ctx, cfg.Model, shared, s.prev, []json.RawMessage{next})
	var aerr *api.Error
	if errors.As(err, &aerr) && aerr.Code == api.CodePreviousResponseNotFound {
		c.Result = aerr.Code
		full := append([]json.RawMessage{userMessage(texts.unique(s.index))}, s.output...)
		if _, err := s.create(ctx, cfg.Model, shared, "", append(full, next)); err == nil {
			c.Recovered = true
		}
		return c
	}
	if err != nil {
		c.Result = err.Error()
		return c
	}
	c.Result = "continued"
	c.CachedTokens, c.InputTokens = res.Usage.InputTokensDetails.CachedTokens, res.Usage.InputTokens
	// One continuation's time is noisy on a shared machine: the session
	// continues a few more times, each from the one before, and the
	// median is reported.
	oc := &overheadClient{cfg: OverheadConfig{BaseURL: base}, http: mc}
	var times []time.Duration
	for k := 0; ; k++ {
		if d, err := oc.preInference(ctx, res.ID); err == nil {
			times = append(times, d)
		}
		if k == continuationRepeats-1 {
			break
		}
		if res, err = s.create(ctx, cfg.Model, shared, res.ID, []json.RawMessage{next}); err != nil {
			break
		}
	}
	c.PreInference = ms(Median(times))
	return c
}

// continuationRepeats is how many continuations a session's pre-inference
// time is the median of.
const continuationRepeats = 5

// stateResponse is what a session keeps of a terminal event.
type stateResponse struct {
	ID     string            `json:"id"`
	Output []json.RawMessage `json:"output"`
	Usage  struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

// create sends one response.create and reads its events to the terminal
// one; an error frame comes back as its *api.Error.
func (s *stateSession) create(ctx context.Context, model, instructions, prev string, input []json.RawMessage) (*stateResponse, error) {
	body := map[string]any{"type": "response.create", "model": model, "store": false, "input": input,
		"max_output_tokens": 8, "ignore_eos": true}
	if instructions != "" {
		body["instructions"] = instructions
	}
	if prev != "" {
		body["previous_response_id"] = prev
	}
	b, _ := json.Marshal(body)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := s.conn.Write(cctx, websocket.MessageText, b); err != nil {
		return nil, err
	}
	for {
		_, msg, err := s.conn.Read(cctx)
		if err != nil {
			return nil, err
		}
		ev, err := api.DecodeEvent(msg)
		if err != nil {
			return nil, err
		}
		if e := ev.AsError(); e != nil {
			return nil, e
		}
		if !api.IsTerminal(ev.Type) {
			continue
		}
		var t struct {
			Response stateResponse `json:"response"`
		}
		if err := json.Unmarshal(msg, &t); err != nil {
			return nil, err
		}
		if ev.Type != api.EventCompleted {
			return nil, fmt.Errorf("response %s ended %s", t.Response.ID, ev.Type)
		}
		return &t.Response, nil
	}
}

func userMessage(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "message", "role": "user",
		"content": []map[string]string{{"type": "input_text", "text": text}}})
	return b
}

// stateTexts makes the sessions' texts: code-like lines of about a known
// token count, the shared instructions once, each session's input with its
// number in every line so no two sessions share a line.
type stateTexts struct {
	shared       string
	perLine      int
	uniqueTokens int
}

// stateLine is one line of a text; every line of every label of the same
// length tokenizes to about the same count.
func stateLine(label string, i int) string {
	return fmt.Sprintf("%s %05d: func (s *Service) handle%05d(ctx context.Context, req *Request) error { return s.store.Put(ctx, %q, req.ID) }\n", label, i, i, label)
}

func newStateTexts(shared, unique int) (*stateTexts, error) {
	tok, err := o200k()
	if err != nil {
		return nil, err
	}
	count := func(s string) int { n, _ := tok.Count(s); return n }
	t := &stateTexts{perLine: max(count(stateLine(sessionLabel(0), 0)), 1), uniqueTokens: unique}
	if shared > 0 {
		per := max(count(stateLine("agent-inst", 0)), 1)
		var sb strings.Builder
		for i := range max(shared/per, 1) {
			sb.WriteString(stateLine("agent-inst", i))
		}
		t.shared = sb.String()
	}
	return t, nil
}

func sessionLabel(i int) string { return fmt.Sprintf("sess%06d", i) }

// unique is session i's own input.
func (t *stateTexts) unique(i int) string {
	var sb strings.Builder
	label := sessionLabel(i)
	for j := range max(t.uniqueTokens/t.perLine, 1) {
		sb.WriteString(stateLine(label, j))
	}
	return sb.String()
}

// FormatState prints a state report as text.
func FormatState(w io.Writer, r *StateReport) {
	who := "engine"
	if r.SharedProcess {
		who = "engine+clients (one process)"
	}
	fmt.Fprintf(w, "sessions: %d opened of %d in %.1f s (%d errors), each %d input tokens (%d shared instructions + %d own, requested)\n",
		r.Opened, r.Sessions, r.OpenSeconds, r.Errors, r.InputTokens, r.SharedTokens, r.UniqueTokens)
	for _, s := range r.ErrorSamples {
		fmt.Fprintf(w, "  e.g. %s\n", s)
	}
	perTok := func(v float64) float64 { return v / float64(max(r.InputTokens, 1)) }
	if r.HeapPerSession != 0 {
		fmt.Fprintf(w, "  %s heap after GC per session: %.1f KiB (%.2f bytes per cached token)\n", who, r.HeapPerSession/1024, perTok(r.HeapPerSession))
	}
	fmt.Fprintf(w, "  %s RSS per idle session: %.1f KiB (%.2f bytes per cached token); RSS %.1f → %.1f MiB (%.1f MiB just after opening, settled in %.1f s)\n",
		who, r.RSSPerSession/1024, perTok(r.RSSPerSession), r.RSSBefore/(1<<20), r.RSSHeld/(1<<20), r.RSSOpened/(1<<20), r.RSSSettled)
	fmt.Fprintf(w, "  connection state (engine's count): %.1f KiB per session, %.1f MiB in all, budget %.1f MiB, %.0f sessions' state dropped\n",
		r.StatePerSession/1024, r.StateBytes/(1<<20), r.StateBudget/(1<<20), r.Drops)
	for _, c := range []struct {
		name string
		c    Continuation
	}{{"newest", r.Newest}, {"oldest", r.Oldest}} {
		if c.c.Result == "" {
			continue
		}
		fmt.Fprintf(w, "  %s session (%d) continues: %s", c.name, c.c.Session, c.c.Result)
		if c.c.Result == "continued" {
			fmt.Fprintf(w, ", pre-inference %.3f ms (median of %d continuations), cached %d of %d input tokens", c.c.PreInference, continuationRepeats, c.c.CachedTokens, c.c.InputTokens)
		}
		if c.c.Result == api.CodePreviousResponseNotFound {
			fmt.Fprintf(w, "; resent its full context: recovered %v", c.c.Recovered)
		}
		fmt.Fprintln(w)
	}
	if r.FreedPerSession != 0 {
		fmt.Fprintf(w, "  closing the sessions freed %.1f KiB of heap per session\n", r.FreedPerSession/1024)
	}
}
