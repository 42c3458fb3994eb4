package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/internal/wait"
	"agentloop/server/enginetest"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
)

func unmodelled(c *enginetest.Config) { c.Unmodelled = true }

func TestBadInputGetsClearErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	manyItems := make([]string, 10000)
	for i := range manyItems {
		manyItems[i] = fmt.Sprintf(`{"role":"user","content":"item %d"}`, i)
	}
	props := make([]string, 5000)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string","description":"property %d"}`, i, i)
	}
	hugeSchema := `{"model":"x","input":"call the giant tool","tools":[{"type":"function","name":"giant","parameters":{"type":"object","properties":{` + strings.Join(props, ",") + `}}}]}`
	cases := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"invalid utf-8", "{\"model\":\"x\",\"input\":\"\xff\xfe\"}", 400, "invalid_json"},
		{"nested 10000 deep", `{"model":"x","input":"hi","metadata":` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat("}", 10000) + `}`, 400, "invalid_json"},
		{"nested arrays in input", `{"model":"x","input":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, 400, "invalid_json"},
		{"10000 items", `{"model":"instant","input":[` + strings.Join(manyItems, ",") + `]}`, 200, ""},
		{"huge tool schema", hugeSchema, 200, ""},
		{"max_output_tokens too big", `{"model":"x","input":"hi","max_output_tokens":100000000}`, 400, "integer_above_max_value"},
		{"null body", `null`, 400, "invalid_json"},
		{"string for input items", `{"input":[1,2,3]}`, 400, "invalid_type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := h.post("/v1/responses", c.body)
			if status != c.status {
				t.Fatalf("status %d: %.300s", status, body)
			}
			if c.code != "" {
				if e := decodeError(t, body); e.Code != c.code || e.Message == "" {
					t.Fatalf("error %+v", e)
				}
			}
		})
	}
	// The same over WebSocket: an error frame, and the socket survives.
	c := h.rawWS("/v1/responses")
	for _, body := range []string{"{\"type\":\"response.create\",\"input\":\"\xff\"}", strings.Repeat("[", 10001), `{"type":"response.create","input":5}`} {
		send(t, c, body)
		if e := readEvent(t, c).AsError(); e == nil || e.Status != 400 {
			t.Fatalf("bad frame %.40q not answered with a 400 error frame", body)
		}
	}
	send(t, c, `{"type":"response.create","model":"x","input":"still there?"}`)
	if evs := readResponse(t, c); evs[len(evs)-1].Type != api.EventCompleted {
		t.Fatal("socket unusable after bad frames")
	}
}

// fuzzEngine is one app with modelled costs off, shared by a fuzz run; it
// returns the app's URL.
func fuzzEngine(f *testing.F) string {
	return newHarness(f, unmodelled).url
}

func FuzzHTTPCreate(f *testing.F) {
	for _, s := range []string{
		`{"model":"spark","input":"hi","stream":true}`,
		`{"model":"spark","input":[{"role":"user","content":"weather in Paris?"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}]}`,
		`{"input":[{"type":"function_call","name":"f","call_id":"c","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}]}`,
		`{"input":[{"type":"item_reference","id":"msg_x"}]}`,
		`{"input":"x","max_output_tokens":3,"ignore_eos":true}`,
		`{"previous_response_id":"resp_x","input":"x"}`,
	} {
		f.Add([]byte(s))
	}
	base := fuzzEngine(f)
	client := &http.Client{Timeout: 30 * time.Second}
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := client.Post(base+"/v1/responses", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		switch {
		case resp.StatusCode == 200:
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			var env struct {
				Error *api.WireError `json:"error"`
			}
			if json.Unmarshal(buf.Bytes(), &env) != nil || env.Error == nil || env.Error.Message == "" {
				t.Fatalf("%d without an OpenAI error: %s", resp.StatusCode, buf.Bytes())
			}
		default:
			t.Fatalf("status %d for %q: %s", resp.StatusCode, body, buf.Bytes())
		}
	})
}

func FuzzWebSocketMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.create","model":"spark","input":"hi"}`,
		`{"type":"response.create","generate":false,"input":[{"role":"developer","content":"x"}]}`,
		`{"type":"response.processed","response_id":"resp_x"}`,
		`{"type":"response.steer"}`,
		`{"type":"response.create","previous_response_id":"resp_missing","input":"x"}`,
		`{"type":"response.create","stream_id":"lane-1","input":"x"}`,
		`{"type":"response.create","model":"instant","stream_id":"agent_a","input":"x"}`,
		`{"type":"response.create","model":"instant","stream_id":"","input":"x"}`,
		`{"type":"response.create","model":"instant","stream_id":"a b","input":"x"}`,
		`{"type":"response.create","model":"instant","stream_id":7,"input":"x"}`,
		`{"type":"response.create","model":"instant","stream_id":null,"input":"x"}`,
		`{"type":"response.create","model":"instant","stream_id":"agent_b","input":"x"}`,
		`{"type":"response.create","model":"instant","STREAM_ID":"agent_c","input":"x"}`,
		`{"type":"response.create","model":"instant","stream_id":"agent_a","stream_id":"agent_d","input":"x"}`,
		`{"type":"response.create","model":"instant","input":"quoting \"stream_id\":\"agent_e\""}`,
		`{"type":"response.create","model":"instant","stream_id":"agent_a","previous_response_id":"resp_missing","store":false,"input":"x"}`,
		`{"type":"response.processed","stream_id":"agent_a","response_id":"resp_x"}`,
		`{"stream_id":"agent_f"`,
		`not json`,
	} {
		f.Add([]byte(s))
	}
	base := fuzzEngine(f)
	url := "ws" + strings.TrimPrefix(base, "http") + "/v1/responses"
	var conn *websocket.Conn
	f.Fuzz(func(t *testing.T, msg []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn == nil {
			c, _, err := websocket.Dial(ctx, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.SetReadLimit(64 << 20)
			conn = c
		}
		if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
			t.Fatal(err)
		}
		// A sentinel warmup after every input: its completion proves the
		// connection survived and answered everything before it in order.
		const sentinel = `{"type":"response.create","model":"instant","generate":false,"input":"sentinel","metadata":{"sentinel":"1"}}`
		if err := conn.Write(ctx, websocket.MessageText, []byte(sentinel)); err != nil {
			t.Fatal(err)
		}
		for {
			typ, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("connection lost after %q: %v", msg, err)
			}
			if typ != websocket.MessageText {
				t.Fatal("binary frame")
			}
			ev, err := api.DecodeEvent(b)
			if err != nil {
				t.Fatalf("frame is not JSON: %s", b)
			}
			if e := ev.AsError(); e != nil && (e.Status < 400 || e.Status >= 500) {
				t.Fatalf("error frame with status %d: %s", e.Status, b)
			}
			if ev.Type == api.EventCompleted && ev.Response.Metadata["sentinel"] == "1" {
				return
			}
		}
	})
}

// smallBufferListener makes the server's socket send buffers tiny, so a
// client that stops reading stalls the engine's writes at once.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// smallBufferServer serves the harness's /v1 engine on a listener with
// tiny send buffers and returns its address.
func (h *harness) smallBufferServer() string {
	e := echo.New()
	e.HTTPErrorHandler = app.ErrorHandler(nil, nil)
	h.v1.Register(e.Group("/v1"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	srv := &http.Server{Handler: e}
	go srv.Serve(smallBufferListener{ln})
	h.t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func TestSlowReaderIsDisconnectedAndFreesItsSlot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.WriteStall = 300 * time.Millisecond })
	addr := h.smallBufferServer()
	d := net.Dialer{Control: nil}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	raw.(*net.TCPConn).SetReadBuffer(4096)
	c, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/v1/responses", &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return raw, nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	send(t, c, `{"type":"response.create","model":"burst","input":"go","max_output_tokens":100000,"ignore_eos":true}`)
	// Never read. The engine must abort the connection and free the slot.
	wait.UntilErr(t, "the slow reader aborted and its slot freed", func() error {
		if dec, q := h.sh.Scheduler.Active(); h.v1.Connections() != 0 || dec != 0 || q != 0 {
			return fmt.Errorf("slow reader still connected: conns %d decoding %d queued %d", h.v1.Connections(), dec, q)
		}
		return nil
	})
}

func TestSlowSSEReaderIsAbortedAndCounted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.WriteStall = 300 * time.Millisecond })
	addr := h.smallBufferServer()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"model":"burst","stream":true,"input":"go","max_output_tokens":100000,"ignore_eos":true}`
	fmt.Fprintf(raw, "POST /v1/responses HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, len(body), body)
	// Never read: the engine must abort the stream, count it and free the slot.
	const metric = "agentloop_write_stall_aborts_total"
	wait.UntilErr(t, "the stalled SSE stream aborted, counted and its slot freed", func() error {
		if dec, q := h.sh.Scheduler.Active(); h.scrape()[metric] < 1 || dec != 0 || q != 0 {
			return fmt.Errorf("stalled SSE stream not aborted: %s %v, decoding %d queued %d", metric, h.scrape()[metric], dec, q)
		}
		return nil
	})
}

func TestKilledConnectionsLeakNothing(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 500
	}
	h := newHarness(t)
	url := "ws" + strings.TrimPrefix(h.url, "http") + "/v1/responses"
	settle := func() (int, uint64) {
		var ms runtime.MemStats
		for range 5 {
			runtime.GC()
			time.Sleep(20 * time.Millisecond)
		}
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapInuse
	}
	// Warm up pools and lazily started goroutines first.
	warm, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	warm.CloseNow()
	time.Sleep(100 * time.Millisecond)
	baseG, baseHeap := settle()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	var mu sync.Mutex
	var failures []string
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, url, nil)
			if err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
				return
			}
			// Kill at different moments: idle, mid-request, mid-stream.
			switch i % 10 {
			case 1:
				c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"burst","input":"x","max_output_tokens":5000,"ignore_eos":true}`))
			case 2:
				c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"burst","input":"x","max_output_tokens":5000,"ignore_eos":true}`))
				for {
					_, b, err := c.Read(ctx)
					if err != nil || bytes.Contains(b, []byte(`output_text.delta`)) {
						break
					}
				}
			}
			c.CloseNow()
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d dials failed, first: %s", len(failures), failures[0])
	}
	wait.UntilErr(t, "every killed connection gone", func() error {
		if h.v1.Connections() > 0 || active(h) > 0 {
			return fmt.Errorf("after %d kills: %d connections, %d generations left", n, h.v1.Connections(), active(h))
		}
		return nil
	})
	g, heap := settle()
	t.Logf("%d connections killed; goroutines %d → %d, heap in use %d KiB → %d KiB", n, baseG, g, baseHeap>>10, heap>>10)
	if g > baseG+10 {
		t.Errorf("goroutines did not return to baseline: %d → %d", baseG, g)
	}
	if heap > baseHeap+32<<20 {
		t.Errorf("heap did not return to baseline: %d KiB → %d KiB", baseHeap>>10, heap>>10)
	}
}

func active(h *harness) int {
	d, q := h.sh.Scheduler.Active()
	return d + q
}

func TestLockedStoreFailsClearlyAndWritesNothingHalfway(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	other, err := sql.Open("sqlite", "file:"+h.dbPath+"?_pragma=busy_timeout(100)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	evs := h.sseEvents("/v1/responses", `{"model":"x","input":"store me while the database is locked","stream":true}`)
	last := evs[len(evs)-1]
	if last.Type != api.EventFailed || last.Response.Error == nil || !strings.Contains(last.Response.Error.Message, "locked") {
		t.Fatalf("terminal %s: %s", last.Type, last.Raw)
	}
	status, body := h.post("/v1/responses", `{"model":"x","input":"and without streaming"}`)
	if e := decodeError(t, body); status != 503 || e.Type != "server_error" || !strings.Contains(e.Message, "locked") {
		t.Fatalf("non-streaming: %d %s", status, body)
	}
	conn.ExecContext(context.Background(), "ROLLBACK")
	conn.Close()
	if _, err := h.db.GetResponse(context.Background(), last.Response.ID); err == nil {
		t.Fatal("a failed response was stored")
	}
	if err := h.db.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The usage of the failed response still reaches the ledger.
	if err := h.db.FlushLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := h.db.LedgerRows(context.Background(), last.Response.ID)
	if err != nil || len(rows) != 1 || rows[0].Stored {
		t.Fatalf("ledger rows %+v %v", rows, err)
	}
	if status, _ := h.post("/v1/responses", `{"model":"x","input":"after the lock"}`); status != 200 {
		t.Fatalf("after the lock: %d", status)
	}
}
