package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/internal/wait"
	"agentloop/server/enginetest"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func (h *harness) connect() *responses.ResponseConnection {
	h.t.Helper()
	conn, err := h.client.Responses.Connect(h.ctx(), responses.ResponseConnectionOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { conn.Close() })
	return conn
}

// rawWS dials the engine without an SDK, for protocol details.
func (h *harness) rawWS(path string) *websocket.Conn {
	h.t.Helper()
	return h.rawWSWith(path, nil)
}

// rawWSWith dials like rawWS, sending hdr with the upgrade.
func (h *harness) rawWSWith(path string, hdr http.Header) *websocket.Conn {
	h.t.Helper()
	c, _, err := websocket.Dial(h.ctx(), "ws"+strings.TrimPrefix(h.url, "http")+path, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		h.t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	h.t.Cleanup(func() { c.CloseNow() })
	return c
}

func readEvent(t testing.TB, c *websocket.Conn) *api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if typ != websocket.MessageText {
		t.Fatalf("binary frame from the server")
	}
	ev, err := api.DecodeEvent(b)
	if err != nil {
		t.Fatalf("frame is not one JSON object: %s", b)
	}
	return ev
}

// readResponse reads one response's events up to its terminal event.
func readResponse(t testing.TB, c *websocket.Conn) []*api.Event {
	t.Helper()
	var evs []*api.Event
	for {
		ev := readEvent(t, c)
		evs = append(evs, ev)
		if api.IsTerminal(ev.Type) {
			return evs
		}
	}
}

func send(t testing.TB, c *websocket.Conn, body string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

func protocolError(t *testing.T, err error) *api.Error {
	t.Helper()
	var pe *responses.ResponseProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("want a protocol error frame, got %v", err)
	}
	ev, derr := api.DecodeEvent([]byte(pe.Event.RawJSON()))
	if derr != nil {
		t.Fatal(derr)
	}
	return ev.AsError()
}

func TestWebSocketFunctionCallChainStoreFalse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	tools := []responses.ToolUnionParam{weatherTool}
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "burst", Store: openai.Bool(false), Tools: tools,
		Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String("What's the weather in Lyon? Check it.")}}); err != nil {
		t.Fatal(err)
	}
	prev, err := conn.FinalResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cities := []string{"Lyon", "Oslo", "Quito"}
	for turn := 1; turn <= 3; turn++ {
		var callID string
		for _, it := range prev.Output {
			if it.Type == "function_call" {
				callID = it.CallID
				validateArgs(t, weatherTool.OfFunction.Parameters, it.Arguments.OfString)
			}
		}
		if callID == "" {
			t.Fatalf("turn %d: no function call in %s", turn, prev.RawJSON())
		}
		out := responses.ResponseInputItemParamOfFunctionCallOutput(fmt.Sprintf(`{"temp_c":%d}`, 10+turn))
		out.OfFunctionCallOutput.CallID = openai.String(callID)
		input := responses.ResponseInputParam{out}
		if turn < 3 {
			input = append(input, responses.ResponseInputItemParamOfMessage("Now check the weather in "+cities[turn]+".", responses.EasyInputMessageRoleUser))
		}
		if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "burst", Store: openai.Bool(false), Tools: tools,
			PreviousResponseID: openai.String(prev.ID), Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &input}}); err != nil {
			t.Fatal(err)
		}
		next, err := conn.FinalResponse(ctx)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if next.Usage.InputTokens <= prev.Usage.InputTokens {
			t.Fatalf("turn %d: context did not grow (%d after %d)", turn, next.Usage.InputTokens, prev.Usage.InputTokens)
		}
		tr, ok := h.sh.Traces.Get(next.ID)
		if !ok {
			t.Fatal("no trace")
		}
		load, _ := tr.Span("load")
		render, _ := tr.Span("render")
		if !strings.Contains(load.Note, "connection cache") || render.Items != int64(len(input)) {
			t.Fatalf("turn %d: continuation did not use the connection cache: load %+v render %+v", turn, load, render)
		}
		prev = next
	}
	if !strings.Contains(prev.OutputText(), "13") {
		t.Fatalf("final answer ignores the last tool output: %q", prev.OutputText())
	}
	// store:false responses never reach the store.
	if _, err := h.db.GetResponse(ctx, prev.ID); err == nil {
		t.Fatal("a store:false response was stored")
	}
}

func TestWebSocketWarmupThenContinuation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"burst","store":false,"stream":true,"generate":false,"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a coding agent."}]}],"tools":[],"tool_choice":"auto","client_metadata":{"x":"y"}}`)
	warm := readResponse(t, c)
	if len(warm) != 3 || warm[2].Type != api.EventCompleted || len(warm[2].Response.Output) != 0 {
		t.Fatalf("warmup events: %d, last %s", len(warm), warm[len(warm)-1].Raw)
	}
	checkGrammar(t, warm)
	id := warm[2].Response.ID
	send(t, c, `{"type":"response.create","model":"burst","store":false,"previous_response_id":"`+id+`","input":[{"role":"user","content":"Say hi."}]}`)
	evs := readResponse(t, c)
	checkGrammar(t, evs)
	last := evs[len(evs)-1].Response
	if last.Status != "completed" || *last.PreviousResponseID != id || last.Usage.InputTokens <= warm[2].Response.Usage.InputTokens {
		t.Fatalf("continuation %+v", last)
	}
	send(t, c, `{"type":"response.processed","response_id":"`+last.ID+`"}`)
	send(t, c, `{"type":"response.rewind","input":[]}`) // response.steer is steering now (steer_test.go)
	ev := readEvent(t, c)
	if e := ev.AsError(); e == nil || e.Status != 400 || e.Code != "invalid_value" {
		t.Fatalf("unknown message type: %s", ev.Raw)
	}
	// The socket stays open after a request-level error.
	send(t, c, `{"type":"response.create","model":"burst","store":false,"previous_response_id":"`+last.ID+`","input":"Again."}`)
	if evs := readResponse(t, c); evs[len(evs)-1].Type != api.EventCompleted {
		t.Fatal("connection unusable after an error frame")
	}
}

func TestWebSocketMissThenFullInputRecovery(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "burst", Store: openai.Bool(false),
		PreviousResponseID: openai.String("resp_unknown"), Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String("continue")}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.FinalResponse(ctx)
	pe := protocolError(t, err)
	if pe.Status != 400 || pe.Code != "previous_response_not_found" || pe.Param != "previous_response_id" {
		t.Fatalf("miss: %+v", pe)
	}
	full := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("You are helpful.", responses.EasyInputMessageRoleDeveloper),
		responses.ResponseInputItemParamOfMessage("continue", responses.EasyInputMessageRoleUser),
	}
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: "burst", Store: openai.Bool(false),
		Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &full}}); err != nil {
		t.Fatal(err)
	}
	r, err := conn.FinalResponse(ctx)
	if err != nil || r.Status != "completed" {
		t.Fatalf("recovery on the same socket: %v", err)
	}
}

func TestWebSocketHydratesStoredParent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	status, body := h.post("/v1/responses", `{"model":"burst","input":"Store me."}`)
	if status != 200 {
		t.Fatal(status)
	}
	var stored api.Response
	json.Unmarshal(body, &stored)
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"burst","previous_response_id":"`+stored.ID+`","input":"Continue."}`)
	evs := readResponse(t, c)
	if evs[len(evs)-1].Type != api.EventCompleted {
		t.Fatalf("hydration failed: %s", evs[len(evs)-1].Raw)
	}
	tr, _ := h.sh.Traces.Get(evs[0].Response.ID)
	if load, _ := tr.Span("load"); !strings.Contains(load.Note, "store") {
		t.Fatalf("load span %+v", load)
	}
}

func TestWebSocketQueuesCreatesInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"burst","store":false,"input":"First request, please answer.","metadata":{"n":"1"}}`)
	send(t, c, `{"type":"response.create","model":"burst","store":false,"input":"Second request, please answer.","metadata":{"n":"2"}}`)
	first := readResponse(t, c)
	second := readResponse(t, c)
	checkGrammar(t, first)
	checkGrammar(t, second)
	if first[0].Response.Metadata["n"] != "1" || second[0].Response.Metadata["n"] != "2" {
		t.Fatal("creates were not answered in FIFO order")
	}
}

func TestWebSocketQueueBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.WSQueue = 2 })
	c := h.rawWS("/v1/responses")
	const n = 8
	for i := range n {
		send(t, c, fmt.Sprintf(`{"type":"response.create","model":"classic","store":false,"max_output_tokens":30,"input":"request %d","metadata":{"n":"%d"}}`, i, i))
	}
	full, done := 0, 0
	for done+full < n {
		ev := readEvent(t, c)
		switch {
		case ev.Type == api.EventError:
			if e := ev.AsError(); e.Status != 429 || e.Code != "websocket_queue_full" {
				t.Fatalf("error frame %s", ev.Raw)
			}
			full++
		case api.IsTerminal(ev.Type):
			done++
		}
	}
	if full == 0 || done < 1 {
		t.Fatalf("%d completed, %d rejected: the bound was not applied", done, full)
	}
}

func TestWebSocketLifetimeLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.WSLifetime = 300 * time.Millisecond })
	c := h.rawWS("/v1/responses")
	ev := readEvent(t, c)
	if e := ev.AsError(); e == nil || e.Code != "websocket_connection_limit_reached" || e.Status != 400 {
		t.Fatalf("got %s", ev.Raw)
	}
	_, _, err := c.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("close after the limit: %v", err)
	}
}

// An idle connection parks one goroutine, its reader: the default lane's
// goroutine runs only while the lane has entries, and the next create
// starts it again.
func TestWebSocketIdleConnectionParksOnlyItsReader(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	for i := range 2 {
		send(t, c, fmt.Sprintf(`{"type":"response.create","model":"burst","store":false,"input":"request %d"}`, i))
		checkGrammar(t, readResponse(t, c))
		wait.UntilErr(t, "no lane goroutine on the idle connection", func() error {
			if n := lanesRunning(); n > 0 {
				return fmt.Errorf("after response %d the connection is idle, yet %d lane goroutines still run", i, n)
			}
			return nil
		})
	}
}

// Draining closes an idle connection with 1001, though no goroutine of
// the connection waits for the drain.
func TestWebSocketDrainClosesAnIdleConnection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"burst","store":false,"input":"hello"}`)
	checkGrammar(t, readResponse(t, c))
	drained := make(chan struct{})
	go func() { h.v1.CloseConnections(h.ctx()); close(drained) }()
	_, _, err := c.Read(h.ctx())
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("close on drain: %v", err)
	}
	<-drained
}

// lanesRunning counts the goroutines running a lane of some connection.
func lanesRunning() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("server.(*lanes).run("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

func TestWebSocketDroppedMidStreamFreesTheSlot(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"classic","store":false,"input":"hi","max_output_tokens":2000,"ignore_eos":true}`)
	for {
		if ev := readEvent(t, c); ev.Type == api.EventOutputTextDelta {
			break
		}
	}
	if dec, _ := h.sh.Scheduler.Active(); dec != 1 {
		t.Fatalf("decoding %d, want 1", dec)
	}
	c.CloseNow()
	wait.UntilErr(t, "the slot freed", func() error {
		if dec, q := h.sh.Scheduler.Active(); dec != 0 || q != 0 || h.v1.Connections() != 0 {
			return fmt.Errorf("slot not freed: decoding %d queued %d conns %d", dec, q, h.v1.Connections())
		}
		return nil
	})
}

func TestWebSocketBinaryFrameAndReadLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.WSReadLimit = 1024 })
	c := h.rawWS("/v1/responses")
	if err := c.Write(context.Background(), websocket.MessageBinary, []byte(`{"type":"response.create"}`)); err != nil {
		t.Fatal(err)
	}
	if e := readEvent(t, c).AsError(); e == nil || e.Status != 400 {
		t.Fatal("binary frame not answered with an error")
	}
	send(t, c, `{"type":"response.create","input":"`+strings.Repeat("x", 2048)+`"}`)
	_, _, err := c.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("oversized frame: %v", err)
	}
}

func TestWebSocketFailedContinuationEvictsItsParent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"x","store":false,"input":"first"}`)
	first := readResponse(t, c)
	id := first[len(first)-1].Response.ID
	// A continuation that fails validation...
	send(t, c, `{"type":"response.create","model":"x","store":false,"previous_response_id":"`+id+`","input":[{"type":"function_call_output","call_id":"call_none","output":"x"}]}`)
	if e := readEvent(t, c).AsError(); e == nil || e.Status != 400 || e.Code == "previous_response_not_found" {
		t.Fatalf("orphan output: %+v", e)
	}
	// ...evicts the parent: a store:false parent is then gone.
	send(t, c, `{"type":"response.create","model":"x","store":false,"previous_response_id":"`+id+`","input":"second"}`)
	if e := readEvent(t, c).AsError(); e == nil || e.Code != "previous_response_not_found" {
		t.Fatalf("after eviction: %+v", e)
	}
	// Only the latest response is cached: an older one misses.
	send(t, c, `{"type":"response.create","model":"x","store":false,"input":"a"}`)
	a := readResponse(t, c)
	send(t, c, `{"type":"response.create","model":"x","store":false,"input":"b"}`)
	readResponse(t, c)
	send(t, c, `{"type":"response.create","model":"x","store":false,"previous_response_id":"`+a[len(a)-1].Response.ID+`","input":"c"}`)
	if e := readEvent(t, c).AsError(); e == nil || e.Code != "previous_response_not_found" {
		t.Fatalf("older response: %+v", e)
	}
}

// A continuation refused by the WebSocket message rules, in parse, before
// its parent was looked up, evicts that parent as one that fails later
// does; a response.processed naming it is no request and keeps it.
func TestWebSocketContinuationRefusedInParseEvictsItsParent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"x","store":false,"input":"first"}`)
	first := readResponse(t, c)
	id := first[len(first)-1].Response.ID
	send(t, c, `{"type":"response.processed","model":"x","previous_response_id":"`+id+`"}`)
	send(t, c, `{"type":"response.create","model":"x","store":false,"previous_response_id":"`+id+`","input":"second"}`)
	second := readResponse(t, c)
	if ev := second[len(second)-1]; ev.Type != api.EventCompleted {
		t.Fatalf("after response.processed: %s", ev.Type)
	}
	id = second[len(second)-1].Response.ID
	send(t, c, `{"type":"response.create","model":"x","store":false,"background":true,"previous_response_id":"`+id+`","input":"third"}`)
	if e := readEvent(t, c).AsError(); e == nil || e.Param != "background" {
		t.Fatalf("background over WebSocket: %+v", e)
	}
	send(t, c, `{"type":"response.create","model":"x","store":false,"previous_response_id":"`+id+`","input":"fourth"}`)
	if e := readEvent(t, c).AsError(); e == nil || e.Code != "previous_response_not_found" {
		t.Fatalf("after a refused continuation: %+v", e)
	}
}
