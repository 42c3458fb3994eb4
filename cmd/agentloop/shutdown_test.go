package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/internal/wait"

	"github.com/coder/websocket"
)

// startBinary starts the built binary's serve on a free port, and returns
// its URL and the process, for a test that signals it.
func startBinary(t *testing.T, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "s.db")}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go io.Copy(io.Discard, out)
			return u, cmd
		}
	}
	t.Fatal("the server did not start")
	return "", nil
}

// scrapeMetric reads the sample of /metrics named name whose labels hold
// label (the replica label aside); false when it is absent.
func scrapeMetric(t *testing.T, base, name, label string) (string, bool) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) {
			return line[strings.LastIndexByte(line, ' ')+1:], true
		}
	}
	return "", false
}

// A SIGTERM reaches a request waiting in a modelled stack stage: when the
// grace is over, an SSE client waiting in stack_classify gets a 503
// server_error with Retry-After (response.created was never sent), and a
// WebSocket client waiting in stack_sprint_hops gets an error frame and
// then close 1001. Before, the SSE client got no bytes and the WebSocket
// client a bare EOF. A stream waiting in stack_billing, after finalize
// settled and stored its response, gets that response's terminal event at
// once.
func TestShutdownAnswersRequestsWaitingInAModelledStage(t *testing.T) {
	base, cmd := startBinary(t, "--grace", "1s")
	create := `{"model":"instant","store":false,"stream":true,"input":"Read main.go and say what it does."}`

	// waitIn waits until n requests wait in a stage: a state, never a moment.
	waitIn := func(stage, n string) {
		t.Helper()
		wait.Until(t, n+" requests to wait in "+stage, func() bool {
			v, _ := scrapeMetric(t, base, "agentloop_stack_stage_waiting", `stage="`+stage+`"`)
			return v == n
		})
	}
	type httpAnswer struct {
		status int
		retry  string
		body   []byte
		err    error
	}
	post := func(stack string) chan httpAnswer {
		done := make(chan httpAnswer, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/responses", strings.NewReader(create))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(api.HeaderStack, stack)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- httpAnswer{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			done <- httpAnswer{status: resp.StatusCode, retry: resp.Header.Get("Retry-After"), body: b, err: err}
		}()
		return done
	}

	// The WebSocket client, on /baseline/v1: 100 sprint hops of 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sprint := `{"preset":"hosted","hop_ms":10000,"config_hops":0,"sprint_hops":100}`
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/baseline/v1/responses?" + api.QueryStack + "=" + url.QueryEscape(sprint)
	c, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create",`+create[1:])); err != nil {
		t.Fatal(err)
	}
	waitIn(api.StageStackSprintHops, "1")
	// A stream whose only wait is 100 billing hops of 10 s, after finalize.
	billed := post(`{"preset":"hosted","hop_ms":10000,"config_hops":0,"classify_tps":0,"billing_hops":100}`)
	waitIn(api.StageStackBilling, "1")
	// The SSE client: one 10 s hop to the classifier, far beyond the grace.
	httpDone := post(`{"preset":"hosted","hop_ms":10000,"config_hops":0}`)
	waitIn(api.StageStackClassify, "1")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	// The WebSocket client: an error frame, then close 1001.
	_, frame, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("the WebSocket client got no error frame: %v", err)
	}
	var ef struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
		Error  struct {
			Type    string            `json:"type"`
			Headers map[string]string `json:"headers"`
		} `json:"error"`
	}
	if err := json.Unmarshal(frame, &ef); err != nil || ef.Type != "error" || ef.Status != 503 || ef.Error.Type != "server_error" ||
		ef.Error.Headers["Retry-After"] == "" {
		t.Fatalf("WebSocket frame %s (%v), want a 503 server_error frame with Retry-After", frame, err)
	}
	_, _, err = c.Read(ctx)
	if status := websocket.CloseStatus(err); status != websocket.StatusGoingAway {
		t.Fatalf("after the error frame: %v (status %d), want close 1001", err, status)
	}

	// The SSE client: a 503 server_error with Retry-After, before any event.
	a := <-httpDone
	if a.err != nil {
		t.Fatalf("the SSE client: %v", a.err)
	}
	var body struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if a.status != http.StatusServiceUnavailable || a.retry == "" || json.Unmarshal(a.body, &body) != nil || body.Error.Type != "server_error" {
		t.Fatalf("the SSE client got %d, Retry-After %q, %s; want a 503 server_error with Retry-After", a.status, a.retry, a.body)
	}

	// The billed stream: its settled terminal event, the last one.
	b := <-billed
	events := strings.Split(strings.TrimSpace(string(b.body)), "\n\n")
	if b.err != nil || b.status != http.StatusOK || !strings.HasPrefix(events[len(events)-1], "event: "+api.EventCompleted+"\n") {
		t.Fatalf("the stream in stack_billing: %v %d, last event %q; want response.completed", b.err, b.status, events[len(events)-1])
	}

	// And the process exits cleanly.
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("the server exited with %v", err)
	}
}
