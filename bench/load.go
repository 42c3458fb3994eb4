package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"agentloop/api"

	"github.com/coder/websocket"
)

// LoadConfig says what load to put on an engine.
type LoadConfig struct {
	BaseURL   string // http://host:port of the engine
	Path      string // API prefix; default "/v1"
	Transport string // "ws" (repeated creates on one WebSocket) or "sse" (HTTP keep-alive)
	Conns     int    // concurrent clients, each with one connection and one stream at a time
	Model     string // sent as "model"; for agentloop, the profile
	// Duration is how long clients keep starting streams; streams in
	// flight at its end run to their terminal event.
	Duration time.Duration
	// Ramp spreads the clients' first creates evenly over this time, so
	// that the run does not open with every prefill at once.
	Ramp         time.Duration
	OutputTokens int    // max_output_tokens with ignore_eos: every reply has exactly this many
	Input        string // the prompt; default a short request for a story
	// TargetTPS is the per-stream rate the 95 % target is measured
	// against; 0 takes the rate the model name stands for
	// (api.ModelDecodeTPS), which is 0 (no target) for instant.
	TargetTPS float64
	Header    http.Header // sent with every request, e.g. Authorization
	// SharedProcess says the engine runs in this process, so its process
	// metrics include the clients.
	SharedProcess bool
	// EngineTraces reads each stream's engine trace after the run (an
	// agentloop server's /api/traces), to compare the rate on the wire with
	// the rate the engine released tokens at.
	EngineTraces bool
}

// LatencySummary is a latency distribution in milliseconds.
type LatencySummary struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// RateSummary is a distribution of per-stream rates, lowest first.
type RateSummary struct {
	Min float64 `json:"min"`
	P1  float64 `json:"p1"`
	P5  float64 `json:"p5"`
	P50 float64 `json:"p50"`
}

// LoadReport is what one run measured, counted as docs/decisions.md,
// "Load-test counting", says.
type LoadReport struct {
	Transport    string   `json:"transport"`
	Conns        int      `json:"conns"`
	Model        string   `json:"model"`
	OutputTokens int      `json:"output_tokens"`
	WallSeconds  float64  `json:"wall_seconds"` // first create to last terminal event
	Streams      int      `json:"streams"`      // streams that completed
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`

	Tokens int64 `json:"tokens"`
	Deltas int64 `json:"deltas"`
	// CoalescedTokens rode in multi-token deltas (tokens - deltas).
	CoalescedTokens int64 `json:"coalesced_tokens"`
	// TokensPerSecond counts all tokens over the wall time, ramp and drain
	// included; SteadyTokensPerSecond only those that arrived between the
	// end of the ramp and the end of Duration.
	TokensPerSecond       float64 `json:"tokens_per_second"`
	SteadyTokensPerSecond float64 `json:"steady_tokens_per_second"`

	StreamTPS       RateSummary `json:"stream_tokens_per_second"`
	TargetTPS       float64     `json:"target_tokens_per_second"`
	StreamsAtTarget int         `json:"streams_at_95pct_target"`
	// StreamsAtTargetShare is StreamsAtTarget over Streams (0 without a
	// target rate).
	StreamsAtTargetShare float64 `json:"streams_at_95pct_target_share"`

	// CPU per token, in µs: the engine's process CPU (from its /metrics)
	// and the load generator's own (getrusage), each over the tokens the
	// clients received. With the engine in this process both are the same
	// process's figure.
	EngineCPUPerToken float64 `json:"engine_cpu_us_per_token"`
	ClientCPUPerToken float64 `json:"client_cpu_us_per_token"`

	TTFT LatencySummary `json:"ttft"`
	Gap  LatencySummary `json:"inter_token_gap"`
	// GapP999 shows the tail beyond p99.
	GapP999 float64 `json:"inter_token_gap_p999_ms"`

	Engine EngineUsage `json:"engine"`
	Host   HostUsage   `json:"host"`
	// WireVsEngine is each stream's rate on the wire divided by the rate
	// at which the engine released its tokens (from its trace), when
	// EngineTraces was on and the server keeps traces.
	WireVsEngine *RateSummary `json:"wire_vs_engine_rate,omitempty"`
	// StreamsAt95Engine counts streams whose wire rate reached 95 % of the
	// engine-released rate.
	StreamsAt95Engine int `json:"streams_at_95pct_engine_rate,omitempty"`
	TracedStreams     int `json:"traced_streams,omitempty"`
}

// clientStats is one client's record; each client owns its own, so the
// hot path takes no locks.
type clientStats struct {
	gaps         latencyHistogram
	ttft         []time.Duration
	streams      []streamResult
	tokens       int64
	deltas       int64
	steadyTokens float64
	errors       int
	errSamples   []string
}

type streamResult struct {
	id     string
	tokens int
	rate   float64
}

func (s *clientStats) fail(err error) {
	s.errors++
	if len(s.errSamples) < 3 {
		s.errSamples = append(s.errSamples, err.Error())
	}
}

// loadRun is one run in progress.
type loadRun struct {
	cfg        LoadConfig
	body       []byte
	steadyFrom time.Time
	deadline   time.Time
	windowEnd  time.Time
}

// terminalEvent is decoded with encoding/json: once per stream, not per
// token.
type terminalEvent struct {
	Type     string `json:"type"`
	Response *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Usage  *struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// endStream records a stream's terminal event.
func (r *loadRun) endStream(st *clientStats, clk *streamClock, raw []byte) {
	var ev terminalEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		st.fail(fmt.Errorf("terminal event: %w", err))
		return
	}
	switch {
	case ev.Type == "error":
		msg := ev.Message
		if ev.Error != nil {
			msg = ev.Error.Code + ": " + ev.Error.Message
		}
		st.fail(fmt.Errorf("error event: %s", msg))
		return
	case ev.Response == nil:
		st.fail(fmt.Errorf("%s without a response", ev.Type))
		return
	case ev.Type == "response.failed":
		msg := ev.Response.Status
		if ev.Response.Error != nil {
			msg = ev.Response.Error.Code + ": " + ev.Response.Error.Message
		}
		st.fail(fmt.Errorf("response.failed: %s", msg))
		return
	}
	usage := -1
	if ev.Response.Usage != nil {
		usage = ev.Response.Usage.OutputTokens
	}
	tokens := clk.finish(usage, &st.gaps)
	st.tokens += int64(tokens)
	st.deltas += int64(clk.deltas)
	if clk.deltas > 0 {
		st.ttft = append(st.ttft, clk.first.Sub(clk.sent))
		if extra := tokens - clk.deltas; extra > 0 {
			// Coalesced tokens arrived with the deltas; share them out in
			// proportion to the deltas that fell inside the steady window.
			st.steadyTokens += float64(extra) * float64(clk.steadyDeltas) / float64(clk.deltas)
		}
	}
	st.streams = append(st.streams, streamResult{id: ev.Response.ID, tokens: tokens, rate: clk.rate(tokens)})
}

func (r *loadRun) delta(st *clientStats, clk *streamClock, now time.Time) {
	clk.delta(now, &st.gaps)
	if !now.Before(r.steadyFrom) && now.Before(r.windowEnd) {
		clk.steadyDeltas++
		st.steadyTokens++
	}
}

// Load runs one load test and reports what the clients saw and what the
// engine's metrics say it used.
func Load(ctx context.Context, cfg LoadConfig) (*LoadReport, error) {
	if cfg.Path == "" {
		cfg.Path = "/v1"
	}
	if cfg.Input == "" {
		cfg.Input = "Write a long story about a lighthouse keeper and the sea."
	}
	if cfg.Conns < 1 || cfg.OutputTokens < 1 || cfg.Duration <= 0 {
		return nil, errors.New("load: need conns ≥ 1, output tokens ≥ 1 and a positive duration")
	}
	if cfg.Transport != "ws" && cfg.Transport != "sse" {
		return nil, fmt.Errorf("load: transport %q: want ws or sse", cfg.Transport)
	}
	if cfg.TargetTPS == 0 {
		cfg.TargetTPS = api.ModelDecodeTPS(cfg.Model)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	body := map[string]any{"model": cfg.Model, "input": cfg.Input, "max_output_tokens": cfg.OutputTokens,
		"ignore_eos": true, "store": false}
	if cfg.Transport == "ws" {
		body["type"] = "response.create"
	} else {
		body["stream"] = true
	}
	raw, _ := json.Marshal(body)

	mc := &http.Client{Timeout: 30 * time.Second}
	before, err := scrapeMetrics(ctx, mc, base+"/metrics", cfg.Header)
	if err != nil {
		return nil, fmt.Errorf("load: engine metrics: %w", err)
	}
	hostBefore := readHostCPU()
	start := time.Now()
	r := &loadRun{cfg: cfg, body: raw, steadyFrom: start.Add(cfg.Ramp), deadline: start.Add(cfg.Duration)}
	r.windowEnd = r.deadline
	if !r.steadyFrom.Before(r.deadline) {
		r.steadyFrom = start
	}
	// A stream that never ends must not hold the run forever.
	runCtx, cancel := context.WithDeadline(ctx, r.deadline.Add(2*time.Minute))
	defer cancel()

	var transport *http.Transport
	if cfg.Transport == "sse" {
		transport = &http.Transport{MaxIdleConns: cfg.Conns, MaxIdleConnsPerHost: cfg.Conns, DisableCompression: true,
			IdleConnTimeout: time.Minute, ForceAttemptHTTP2: false}
		defer transport.CloseIdleConnections()
	}
	stats := make([]*clientStats, cfg.Conns)
	var wg sync.WaitGroup
	for i := range cfg.Conns {
		st := &clientStats{}
		stats[i] = st
		at := start.Add(cfg.Ramp * time.Duration(i) / time.Duration(cfg.Conns))
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The label lets a CPU profile of a shared process tell the
			// clients from the engine (pprof -tagignore).
			pprof.Do(runCtx, pprof.Labels("agentloop_bench", "client"), func(ctx context.Context) {
				if d := time.Until(at); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return
					}
				}
				if cfg.Transport == "ws" {
					r.runWS(ctx, base, st)
				} else {
					r.runSSE(ctx, base, &http.Client{Transport: transport}, st)
				}
			})
		}()
	}
	// The engine's memory is read while the load is at its height.
	var under metricsSample
	underDone := make(chan struct{})
	go func() {
		defer close(underDone)
		select {
		case <-time.After(time.Until(r.deadline.Add(-min(cfg.Duration/10, time.Second)))):
		case <-runCtx.Done():
			return
		}
		under, _ = scrapeMetrics(runCtx, mc, base+"/metrics", cfg.Header)
	}()
	wg.Wait()
	end := time.Now()
	<-underDone
	hostAfter := readHostCPU()
	after, err := scrapeMetrics(ctx, mc, base+"/metrics", cfg.Header)
	if err != nil {
		return nil, fmt.Errorf("load: engine metrics after the run: %w", err)
	}
	if under.values == nil {
		under = after
	}

	rep := &LoadReport{Transport: cfg.Transport, Conns: cfg.Conns, Model: cfg.Model, OutputTokens: cfg.OutputTokens,
		WallSeconds: end.Sub(start).Seconds(), TargetTPS: cfg.TargetTPS,
		Engine: engineUsage(before, under, after, cfg.SharedProcess), Host: hostUsage(hostBefore, hostAfter)}
	var gaps latencyHistogram
	var ttft []time.Duration
	var streams []streamResult
	var steady float64
	for _, st := range stats {
		gaps.merge(&st.gaps)
		ttft = append(ttft, st.ttft...)
		streams = append(streams, st.streams...)
		rep.Tokens += st.tokens
		rep.Deltas += st.deltas
		steady += st.steadyTokens
		rep.Errors += st.errors
		for _, s := range st.errSamples {
			if len(rep.ErrorSamples) < 5 {
				rep.ErrorSamples = append(rep.ErrorSamples, s)
			}
		}
	}
	rep.Streams = len(streams)
	rep.CoalescedTokens = rep.Tokens - rep.Deltas
	if rep.WallSeconds > 0 {
		rep.TokensPerSecond = float64(rep.Tokens) / rep.WallSeconds
	}
	if w := r.windowEnd.Sub(r.steadyFrom).Seconds(); w > 0 {
		rep.SteadyTokensPerSecond = steady / w
	}
	rates := make([]float64, 0, len(streams))
	for _, s := range streams {
		rates = append(rates, s.rate)
		if s.rate >= 0.95*cfg.TargetTPS {
			rep.StreamsAtTarget++
		}
	}
	rep.StreamTPS = summarizeRates(rates)
	if cfg.TargetTPS > 0 && rep.Streams > 0 {
		rep.StreamsAtTargetShare = float64(rep.StreamsAtTarget) / float64(rep.Streams)
	}
	if rep.Tokens > 0 {
		rep.EngineCPUPerToken = rep.Engine.CPUSeconds / float64(rep.Tokens) * 1e6
		rep.ClientCPUPerToken = rep.Host.ClientCPUSeconds / float64(rep.Tokens) * 1e6
	}
	rep.TTFT = summarizeDurations(ttft)
	rep.Gap = LatencySummary{P50: ms(gaps.quantile(0.5)), P99: ms(gaps.quantile(0.99)), Max: ms(gaps.max)}
	rep.GapP999 = ms(gaps.quantile(0.999))
	if cfg.EngineTraces {
		r.compareTraces(ctx, base, streams, rep)
	}
	return rep, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func summarizeRates(v []float64) RateSummary {
	if len(v) == 0 {
		return RateSummary{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(q float64) float64 { return s[int(q*float64(len(s)-1))] }
	return RateSummary{Min: s[0], P1: at(0.01), P5: at(0.05), P50: at(0.5)}
}

func summarizeDurations(v []time.Duration) LatencySummary {
	if len(v) == 0 {
		return LatencySummary{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(q float64) float64 { return ms(s[int(q*float64(len(s)-1)+0.5)]) }
	return LatencySummary{P50: at(0.5), P99: at(0.99), Max: ms(s[len(s)-1])}
}

// runWS sends creates one after another on one WebSocket, reading each
// stream to its terminal event.
func (r *loadRun) runWS(ctx context.Context, base string, st *clientStats) {
	url := "ws" + strings.TrimPrefix(base, "http") + r.cfg.Path + "/responses"
	var conn *websocket.Conn
	var stop func() bool
	defer func() {
		if conn != nil {
			stop()
			conn.CloseNow()
		}
	}()
	// Reads and writes use a context without a Done channel: with one,
	// every call would register a cancel hook. Cancelling ctx closes the
	// connection instead, which ends any read or write in progress.
	bg := context.Background()
	buf := make([]byte, 0, 8<<10)
	for time.Now().Before(r.deadline) && ctx.Err() == nil {
		if conn == nil {
			c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: r.cfg.Header,
				CompressionMode: websocket.CompressionDisabled})
			if err != nil {
				st.fail(fmt.Errorf("dial: %w", err))
				pause(ctx, 100*time.Millisecond)
				continue
			}
			c.SetReadLimit(64 << 20)
			conn = c
			stop = context.AfterFunc(ctx, func() { c.CloseNow() })
		}
		clk := streamClock{sent: time.Now()}
		err := conn.Write(bg, websocket.MessageText, r.body)
		for err == nil {
			var rd io.Reader
			if _, rd, err = conn.Reader(bg); err != nil {
				break
			}
			if buf, err = readMessage(buf[:0], rd); err != nil {
				break
			}
			now := time.Now()
			typ, _ := eventType(buf)
			if isDelta(typ) {
				r.delta(st, &clk, now)
				continue
			}
			if isTerminalType(typ) {
				r.endStream(st, &clk, buf)
				break
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				st.fail(fmt.Errorf("websocket: %w", err))
			}
			stop()
			conn.CloseNow()
			conn = nil
		}
	}
	if conn != nil {
		conn.Close(websocket.StatusNormalClosure, "")
	}
}

// readMessage reads one message into buf's spare room, growing it as needed.
func readMessage(buf []byte, rd io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// runSSE posts streaming creates one after another over one keep-alive
// connection.
func (r *loadRun) runSSE(ctx context.Context, base string, hc *http.Client, st *clientStats) {
	url := base + r.cfg.Path + "/responses"
	br := bufio.NewReaderSize(nil, 32<<10)
	var data []byte
	for time.Now().Before(r.deadline) && ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(r.body))
		for k, v := range r.cfg.Header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		clk := streamClock{sent: time.Now()}
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				st.fail(fmt.Errorf("POST: %w", err))
				pause(ctx, 100*time.Millisecond)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			st.fail(fmt.Errorf("POST: %s: %s", resp.Status, bytes.TrimSpace(msg)))
			pause(ctx, 100*time.Millisecond)
			continue
		}
		br.Reset(resp.Body)
		ended := false
		var evType []byte
		for !ended {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				// A long data line (a response snapshot): gather it whole.
				data = append(data[:0], line...)
				for errors.Is(err, bufio.ErrBufferFull) {
					line, err = br.ReadSlice('\n')
					data = append(data, line...)
				}
				line = data
			}
			if err != nil {
				if ctx.Err() == nil {
					st.fail(fmt.Errorf("SSE stream ended without a terminal event: %w", err))
				}
				break
			}
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				evType = evType[:0]
			case bytes.HasPrefix(line, []byte("event:")):
				evType = append(evType[:0], bytes.TrimSpace(line[len("event:"):])...)
			case bytes.HasPrefix(line, []byte("data:")):
				now := time.Now()
				payload := bytes.TrimSpace(line[len("data:"):])
				typ := evType
				if len(typ) == 0 {
					typ, _ = eventType(payload)
				}
				if isDelta(typ) {
					r.delta(st, &clk, now)
				} else if isTerminalType(typ) {
					r.endStream(st, &clk, payload)
					ended = true
				}
			}
		}
		// Drain so the connection goes back to the pool.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// compareTraces reads each stream's engine trace and compares the rate on
// the wire with the rate at which the engine released the stream's tokens.
func (r *loadRun) compareTraces(ctx context.Context, base string, streams []streamResult, rep *LoadReport) {
	// Evenly spaced, at most 4000: enough for a p1 without a long tail of
	// requests after the run.
	step := max(1, len(streams)/4000)
	hc := &http.Client{Timeout: 10 * time.Second}
	var mu sync.Mutex
	var ratios []float64
	var wg sync.WaitGroup
	work := make(chan streamResult)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				engineRate, ok := r.engineRate(ctx, hc, base, s.id)
				if !ok || engineRate <= 0 || s.rate <= 0 {
					continue
				}
				mu.Lock()
				ratios = append(ratios, s.rate/engineRate)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < len(streams); i += step {
		if streams[i].id != "" {
			work <- streams[i]
		}
	}
	close(work)
	wg.Wait()
	if len(ratios) == 0 {
		return
	}
	sum := summarizeRates(ratios)
	rep.WireVsEngine = &sum
	rep.TracedStreams = len(ratios)
	for _, q := range ratios {
		if q >= 0.95 {
			rep.StreamsAt95Engine++
		}
	}
}

func (r *loadRun) engineRate(ctx context.Context, hc *http.Client, base, id string) (float64, bool) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/traces/"+id, nil)
	if err != nil {
		return 0, false
	}
	for k, v := range r.cfg.Header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	var tr api.Trace
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return 0, false
	}
	if s, ok := tr.Span(api.StageGenerate); ok && s.Tokens > 1 && s.DurationNS > 0 {
		return float64(s.Tokens-1) / (float64(s.DurationNS) / 1e9), true
	}
	return 0, false
}

// FormatLoad prints a report as text.
func FormatLoad(w io.Writer, r *LoadReport) {
	fmt.Fprintf(w, "%s, %d conns, model %s, %d tokens per stream, %.1f s\n", r.Transport, r.Conns, r.Model, r.OutputTokens, r.WallSeconds)
	fmt.Fprintf(w, "  streams      %d completed, %d errors\n", r.Streams, r.Errors)
	for _, s := range r.ErrorSamples {
		fmt.Fprintf(w, "               e.g. %s\n", s)
	}
	fmt.Fprintf(w, "  tokens       %d total in %d deltas (%d coalesced); %.0f tok/s overall, %.0f tok/s steady\n",
		r.Tokens, r.Deltas, r.CoalescedTokens, r.TokensPerSecond, r.SteadyTokensPerSecond)
	if r.TargetTPS > 0 {
		fmt.Fprintf(w, "  per stream   min %.0f  p1 %.0f  p5 %.0f  p50 %.0f tok/s; %d/%d streams (%.2f%%) ≥ 95%% of %.0f tok/s\n",
			r.StreamTPS.Min, r.StreamTPS.P1, r.StreamTPS.P5, r.StreamTPS.P50, r.StreamsAtTarget, r.Streams,
			100*r.StreamsAtTargetShare, r.TargetTPS)
	} else {
		fmt.Fprintf(w, "  per stream   min %.0f  p1 %.0f  p5 %.0f  p50 %.0f tok/s; no target rate (the model is unpaced)\n",
			r.StreamTPS.Min, r.StreamTPS.P1, r.StreamTPS.P5, r.StreamTPS.P50)
	}
	if r.WireVsEngine != nil {
		fmt.Fprintf(w, "  vs engine    wire/released rate min %.3f  p1 %.3f  p50 %.3f; %d/%d traced streams ≥ 0.95\n",
			r.WireVsEngine.Min, r.WireVsEngine.P1, r.WireVsEngine.P50, r.StreamsAt95Engine, r.TracedStreams)
	}
	fmt.Fprintf(w, "  TTFT         p50 %.1f ms  p99 %.1f ms  max %.1f ms\n", r.TTFT.P50, r.TTFT.P99, r.TTFT.Max)
	fmt.Fprintf(w, "  token gap    p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  max %.1f ms\n", r.Gap.P50, r.Gap.P99, r.GapP999, r.Gap.Max)
	if r.Engine.EngineGapP99 > 0 {
		fmt.Fprintf(w, "  engine gap   p99 %.2f ms as written (%.2f%% within 5 ms), from its metrics\n", r.Engine.EngineGapP99, 100*r.Engine.EngineGapWithin5)
	}
	who := "engine"
	if r.Engine.SharedProcess {
		who = "engine+clients (one process)"
	}
	if r.Engine.SharedProcess {
		fmt.Fprintf(w, "  CPU/token    %.2f µs engine+clients (one process)\n", r.EngineCPUPerToken)
	} else {
		fmt.Fprintf(w, "  CPU/token    %.2f µs engine, %.2f µs load generator\n", r.EngineCPUPerToken, r.ClientCPUPerToken)
	}
	fmt.Fprintf(w, "  %s  CPU %.2f cores (%.1f s); RSS %.1f → %.1f MiB under load; heap %.1f MiB, stacks %.1f MiB, %0.f goroutines, %.0f GCs\n",
		who, r.Engine.CPUCores, r.Engine.CPUSeconds, r.Engine.RSSBefore/(1<<20), r.Engine.RSSUnderLoad/(1<<20),
		r.Engine.HeapUnderLoad/(1<<20), r.Engine.StackUnder/(1<<20), r.Engine.Goroutines, r.Engine.GCCycles)
	formatHost(w, r.Host, r.Engine)
}

func formatHost(w io.Writer, h HostUsage, e EngineUsage) {
	if h.MachineCores == 0 {
		return
	}
	if e.SharedProcess {
		fmt.Fprintf(w, "  machine      %.2f of %.1f cores busy: this process %.2f, everything else %.2f; hypervisor steal %.2f\n",
			h.MachineBusyCores, h.MachineCores, h.ClientCores, max(h.MachineBusyCores-h.ClientCores, 0), h.StealCores)
		return
	}
	fmt.Fprintf(w, "  machine      %.2f of %.1f cores busy: engine %.2f, load generator %.2f, everything else %.2f; hypervisor steal %.2f\n",
		h.MachineBusyCores, h.MachineCores, e.CPUCores, h.ClientCores, max(h.MachineBusyCores-e.CPUCores-h.ClientCores, 0), h.StealCores)
}
