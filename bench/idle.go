package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// IdleConfig says how many idle WebSocket connections to hold, and for how
// long.
type IdleConfig struct {
	BaseURL       string
	Path          string // API prefix; default "/v1"
	Conns         int
	Hold          time.Duration // how long the connections sit idle before memory is read
	Model         string        // of the request that proves each connection still works
	Header        http.Header
	SharedProcess bool
}

// IdleReport is the engine's cost of idle connections, from its metrics.
type IdleReport struct {
	Conns  int `json:"conns"`
	Opened int `json:"opened"`
	// Held counts connections that, after the hold, still answered a
	// one-token request.
	Held         int      `json:"held"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	// GaugeDelta is the engine's own count of the connections opened.
	GaugeDelta float64 `json:"engine_connections_delta"`
	// Per connection, from the deltas of the engine's metrics.
	RSSPerConn      float64 `json:"rss_bytes_per_conn"`
	HeapPerConn     float64 `json:"heap_inuse_bytes_per_conn"`
	StackPerConn    float64 `json:"stack_inuse_bytes_per_conn"`
	GoroutinesPer   float64 `json:"goroutines_per_conn"`
	RSSBefore       float64 `json:"rss_before_bytes"`
	RSSHeld         float64 `json:"rss_held_bytes"`
	SharedProcess   bool    `json:"shared_process"`
	HoldSeconds     float64 `json:"hold_seconds"`
	OpenSeconds     float64 `json:"open_seconds"`
	VerifiedSeconds float64 `json:"verify_seconds"`
}

// Idle opens cfg.Conns WebSocket connections, leaves them idle for the hold,
// reads the engine's memory, then proves each is still open by running a
// one-token request on it.
func Idle(ctx context.Context, cfg IdleConfig) (*IdleReport, error) {
	if cfg.Path == "" {
		cfg.Path = "/v1"
	}
	if cfg.Conns < 1 {
		return nil, errors.New("idle: need conns ≥ 1")
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	url := "ws" + strings.TrimPrefix(base, "http") + cfg.Path + "/responses"
	mc := &http.Client{Timeout: 30 * time.Second}
	before, err := settledMetrics(ctx, mc, base+"/metrics", cfg.Header)
	if err != nil {
		return nil, fmt.Errorf("idle: engine metrics: %w", err)
	}
	rep := &IdleReport{Conns: cfg.Conns, SharedProcess: cfg.SharedProcess, RSSBefore: before.get("process_resident_memory_bytes")}
	fail := failureCounter(&rep.Errors, &rep.ErrorSamples)
	conns := make([]*websocket.Conn, cfg.Conns)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.CloseNow()
			}
		}
	}()
	opened := time.Now()
	eachConn(cfg.Conns, 32, func(i int) {
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: cfg.Header, CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			fail(fmt.Errorf("dial: %w", err))
			return
		}
		c.SetReadLimit(64 << 20)
		conns[i] = c
	})
	rep.OpenSeconds = time.Since(opened).Seconds()
	for _, c := range conns {
		if c != nil {
			rep.Opened++
		}
	}
	pause(ctx, cfg.Hold)
	rep.HoldSeconds = cfg.Hold.Seconds()
	// The engine counts a connection once its handler runs, a moment after
	// the client's dial returns: give the gauge up to 2 s to catch up.
	var held metricsSample
	for deadline := time.Now().Add(2 * time.Second); ; {
		held, err = scrapeMetrics(ctx, mc, base+"/metrics", cfg.Header)
		if err != nil {
			return nil, fmt.Errorf("idle: engine metrics: %w", err)
		}
		gauge := "agentloop_active_websocket_connections"
		if held.get(gauge)-before.get(gauge) >= float64(rep.Opened) || time.Now().After(deadline) {
			break
		}
		pause(ctx, 20*time.Millisecond)
	}
	rep.RSSHeld = held.get("process_resident_memory_bytes")
	rep.GaugeDelta = held.get("agentloop_active_websocket_connections") - before.get("agentloop_active_websocket_connections")
	if n := float64(rep.Opened); n > 0 {
		rep.RSSPerConn = (rep.RSSHeld - rep.RSSBefore) / n
		rep.HeapPerConn = (held.get("go_memstats_heap_inuse_bytes") - before.get("go_memstats_heap_inuse_bytes")) / n
		rep.StackPerConn = (held.get("go_memstats_stack_inuse_bytes") - before.get("go_memstats_stack_inuse_bytes")) / n
		rep.GoroutinesPer = (held.get("go_goroutines") - before.get("go_goroutines")) / n
	}

	body := fmt.Appendf(nil, `{"type":"response.create","model":%q,"input":"Still there?","max_output_tokens":1,"ignore_eos":true,"store":false}`, cfg.Model)
	var ok atomic.Int64
	verified := time.Now()
	eachConn(cfg.Conns, 64, func(i int) {
		c := conns[i]
		if c == nil {
			return
		}
		vctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := c.Write(vctx, websocket.MessageText, body); err != nil {
			fail(fmt.Errorf("held connection %d: %w", i, err))
			return
		}
		if _, err := readUntilTerminal(vctx, c); err != nil {
			fail(fmt.Errorf("held connection %d: %w", i, err))
			return
		}
		ok.Add(1)
	})
	rep.VerifiedSeconds = time.Since(verified).Seconds()
	rep.Held = int(ok.Load())
	return rep, nil
}

// eachConn runs f(0..n-1) on at most par goroutines.
func eachConn(n, par int, f func(i int)) {
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(par, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// FormatIdle prints an idle report as text.
func FormatIdle(w io.Writer, r *IdleReport) {
	who := "engine"
	if r.SharedProcess {
		who = "engine+clients (one process)"
	}
	fmt.Fprintf(w, "idle WebSocket connections: %d opened of %d in %.1f s, held %.0f s; %d still answered a request (%d errors)\n",
		r.Opened, r.Conns, r.OpenSeconds, r.HoldSeconds, r.Held, r.Errors)
	for _, s := range r.ErrorSamples {
		fmt.Fprintf(w, "  e.g. %s\n", s)
	}
	fmt.Fprintf(w, "  engine gauge of open connections rose by %.0f\n", r.GaugeDelta)
	fmt.Fprintf(w, "  %s per connection: RSS %.1f KiB, heap in use %.1f KiB, stacks %.1f KiB, %.2f goroutines\n",
		who, r.RSSPerConn/1024, r.HeapPerConn/1024, r.StackPerConn/1024, r.GoroutinesPer)
	fmt.Fprintf(w, "  RSS %.1f → %.1f MiB\n", r.RSSBefore/(1<<20), r.RSSHeld/(1<<20))
}

// settledMetrics samples the engine once its goroutine count has held
// still for 250 ms (or after 5 s): an engine just started, or winding down
// what it just served, sheds goroutines, and a fall while the connections
// open would hide theirs (a test read −0.10 goroutines a connection so).
func settledMetrics(ctx context.Context, c *http.Client, url string, header http.Header) (metricsSample, error) {
	s, err := scrapeMetrics(ctx, c, url, header)
	still, deadline := time.Now(), time.Now().Add(5*time.Second)
	for err == nil && time.Since(still) < 250*time.Millisecond && time.Now().Before(deadline) && ctx.Err() == nil {
		pause(ctx, 50*time.Millisecond)
		var next metricsSample
		if next, err = scrapeMetrics(ctx, c, url, header); err == nil {
			if next.get("go_goroutines") != s.get("go_goroutines") {
				still = time.Now()
			}
			s = next
		}
	}
	return s, err
}
