package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/server/enginetest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// laneCreate is a create on a named lane: a long classic reply when long,
// otherwise an instant one.
func laneCreate(stream string, long bool) responses.ResponsesClientEventResponseCreateParam {
	p := responses.ResponsesClientEventResponseCreateParam{Model: "instant", Store: openai.Bool(false),
		Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String("Say something about lanes.")}}
	if stream != "" {
		p.StreamID = openai.String(stream)
	}
	if long {
		// About 30 s at classic's rate: the test ends it long before.
		p.Model, p.MaxOutputTokens = "classic", openai.Int(2000)
		p.SetExtraFields(map[string]any{"ignore_eos": true})
	}
	return p
}

// recvFrame reads the connection's next frame, in socket order, decoded.
func recvFrame(t *testing.T, ctx context.Context, conn *responses.ResponseConnection) *api.Event {
	t.Helper()
	raw, err := conn.RecvRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev, derr := api.DecodeEvent(raw)
	if derr != nil {
		t.Fatalf("frame is not one JSON object: %s", raw)
	}
	return ev
}

// hasStreamID reports whether a frame carries a stream_id key at all.
func hasStreamID(t *testing.T, ev *api.Event) bool {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(ev.Raw, &keys); err != nil {
		t.Fatal(err)
	}
	_, ok := keys["stream_id"]
	return ok
}

// Two lanes on one connection run at once: each has streamed text before
// either response ends. A serialized engine would finish agent_a's 2000
// tokens before agent_b's response began.
func TestWebSocketLanesRunConcurrently(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	for _, id := range []string{"agent_a", "agent_b"} {
		if err := conn.Create(ctx, laneCreate(id, true)); err != nil {
			t.Fatal(err)
		}
	}
	deltas := map[string]int{}
	seq := map[string]int{}
	for deltas["agent_a"] == 0 || deltas["agent_b"] == 0 {
		ev := recvFrame(t, ctx, conn)
		if api.IsTerminal(ev.Type) {
			t.Fatalf("%s ended (%s) before both lanes streamed: %v", ev.StreamID, ev.Raw, deltas)
		}
		if ev.StreamID != "agent_a" && ev.StreamID != "agent_b" {
			t.Fatalf("a named lane's event without its stream_id: %s", ev.Raw)
		}
		// Sequence numbers run per response, so per lane here.
		if ev.SequenceNumber != seq[ev.StreamID] {
			t.Fatalf("%s: sequence_number %d, want %d", ev.StreamID, ev.SequenceNumber, seq[ev.StreamID])
		}
		seq[ev.StreamID]++
		if ev.Type == api.EventOutputTextDelta {
			deltas[ev.StreamID]++
		}
	}
}

// The SDK's lanes read each lane's events apart; the default lane's events
// carry no stream_id, and a lane runs its creates in order, each one able
// to continue the lane's latest store:false response from the connection
// cache.
func TestWebSocketLanesWithTheSDK(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	laneA, err := conn.Lane("agent_a")
	if err != nil {
		t.Fatal(err)
	}
	laneB, err := conn.Lane("agent_b")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []responses.ResponsesClientEventResponseCreateParam{laneCreate("agent_a", false), laneCreate("agent_b", false), laneCreate("", false)} {
		if err := conn.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	first := map[string]*responses.Response{}
	for id, l := range map[string]*responses.ResponseLane{"agent_a": laneA, "agent_b": laneB} {
		r, err := l.FinalResponse(ctx)
		if err != nil || r.Status != "completed" {
			t.Fatalf("%s: %+v, %v", id, r, err)
		}
		first[id] = r
	}
	// The default lane's events come to the connection, without stream_id.
	for {
		ev := recvFrame(t, ctx, conn)
		if hasStreamID(t, ev) {
			t.Fatalf("a default-lane event with a stream_id: %s", ev.Raw)
		}
		if api.IsTerminal(ev.Type) {
			break
		}
	}
	// Each lane continues its own store:false response.
	for id, l := range map[string]*responses.ResponseLane{"agent_a": laneA, "agent_b": laneB} {
		p := laneCreate(id, false)
		p.PreviousResponseID = openai.String(first[id].ID)
		if err := conn.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		r, err := l.FinalResponse(ctx)
		if err != nil || r.Status != "completed" || r.PreviousResponseID != first[id].ID {
			t.Fatalf("%s continuation: %+v, %v", id, r, err)
		}
		tr, ok := h.sh.Traces.Get(r.ID)
		if !ok || !spanNoted(tr, api.StageLoad, "connection cache") {
			t.Fatalf("%s continuation did not load its parent from the connection cache: %+v", id, tr.Spans)
		}
	}
}

func spanNoted(tr api.Trace, stage, note string) bool {
	for _, s := range tr.Spans {
		if s.Name == stage && strings.Contains(s.Note, note) {
			return true
		}
	}
	return false
}

// A new lane may fork another lane's latest response from the connection
// cache; the fork's failure leaves the shared parent in place.
func TestWebSocketLaneForksAnotherLanesResponse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	lanes := map[string]*responses.ResponseLane{}
	for _, id := range []string{"agent_a", "agent_b", "agent_c"} {
		l, err := conn.Lane(id)
		if err != nil {
			t.Fatal(err)
		}
		lanes[id] = l
	}
	if err := conn.Create(ctx, laneCreate("agent_a", false)); err != nil {
		t.Fatal(err)
	}
	parent, err := lanes["agent_a"].FinalResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// agent_b's fork fails (an unanswered call id): agent_a keeps its parent.
	bad := laneCreate("agent_b", false)
	bad.PreviousResponseID = openai.String(parent.ID)
	out := responses.ResponseInputItemParamOfFunctionCallOutput(`{}`)
	out.OfFunctionCallOutput.CallID = openai.String("call_nobody_made")
	bad.Input = responses.ResponsesClientEventResponseCreateInputUnionParam{OfResponse: &responses.ResponseInputParam{out}}
	if err := conn.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	_, err = lanes["agent_b"].FinalResponse(ctx)
	if e := protocolError(t, err); e.Status != 400 {
		t.Fatalf("the bad fork: %+v", e)
	}
	for _, id := range []string{"agent_c", "agent_a"} {
		p := laneCreate(id, false)
		p.PreviousResponseID = openai.String(parent.ID)
		if err := conn.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		r, err := lanes[id].FinalResponse(ctx)
		if err != nil || r.Status != "completed" {
			t.Fatalf("%s continuing %s: %+v, %v", id, parent.ID, r, err)
		}
		tr, _ := h.sh.Traces.Get(r.ID)
		if !spanNoted(tr, api.StageLoad, "connection cache") {
			t.Fatalf("%s did not find %s in the connection cache: %+v", id, parent.ID, tr.Spans)
		}
	}
}

// Both lane errors, as docs/protocol.md "`stream_id` lanes" gives them: invalid_stream_id is
// connection-scoped (no stream_id), websocket_stream_limit_reached names
// the refused id; the connection and its lanes go on.
func TestWebSocketLaneErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	for _, bad := range []string{"", "has space", "sl/ash", strings.Repeat("x", 257)} {
		raw, _ := json.Marshal(map[string]any{"type": "response.create", "model": "instant", "input": "hi", "stream_id": bad})
		if err := conn.SendRaw(ctx, raw); err != nil {
			t.Fatal(err)
		}
		ev := recvFrame(t, ctx, conn)
		e := ev.AsError()
		if e == nil || e.Status != 400 || e.Code != "invalid_stream_id" || e.Param != "stream_id" || hasStreamID(t, ev) ||
			e.Message != "The 'stream_id' field must be a non-empty string with at most 256 characters and may only contain letters, numbers, underscores, hyphens, and periods." {
			t.Fatalf("stream_id %q: %s", bad, ev.Raw)
		}
	}
	// 32 named lanes fit; the 33rd id is refused, by name.
	done := map[string]bool{}
	for i := 1; i <= 33; i++ {
		if err := conn.Create(ctx, laneCreate(fmt.Sprintf("agent_%d", i), false)); err != nil {
			t.Fatal(err)
		}
	}
	var refused *api.Event
	for len(done) < 32 || refused == nil {
		ev := recvFrame(t, ctx, conn)
		if e := ev.AsError(); e != nil {
			if refused != nil {
				t.Fatalf("a second error: %s", ev.Raw)
			}
			refused = ev
			continue
		}
		if ev.Type == api.EventCompleted {
			done[ev.StreamID] = true
		}
	}
	e := refused.AsError()
	if refused.StreamID != "agent_33" || e.Status != 400 || e.Code != "websocket_stream_limit_reached" || e.Param != "stream_id" ||
		e.Message != "This WebSocket connection has reached its maximum number of distinct stream IDs (32). Reuse an existing stream_id or open a new WebSocket connection." {
		t.Fatalf("the 33rd stream_id: %s", refused.Raw)
	}
	if done["agent_33"] {
		t.Fatal("agent_33 ran")
	}
	// A known lane is reused, and the default lane still serves.
	for _, id := range []string{"agent_7", ""} {
		if err := conn.Create(ctx, laneCreate(id, false)); err != nil {
			t.Fatal(err)
		}
		for {
			ev := recvFrame(t, ctx, conn)
			if ev.StreamID != id {
				t.Fatalf("want lane %q, got %s", id, ev.Raw)
			}
			if ev.Type == api.EventCompleted {
				break
			}
			if api.IsTerminal(ev.Type) {
				t.Fatalf("lane %q: %s", id, ev.Raw)
			}
		}
	}
}

// A named lane's request errors name the lane; a create whose stream_id
// is not a string is the default lane's parse error.
func TestWebSocketLaneRequestErrorsNameTheLane(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	for _, tc := range []struct {
		frame, stream, code, param string
	}{
		{`{"type":"response.create","stream_id":"agent_a","input":"no model"}`, "agent_a", "missing_required_parameter", "model"},
		{`{"type":"response.create","model":"instant","stream_id":"agent_a","store":false,"previous_response_id":"resp_gone","input":"x"}`, "agent_a", "previous_response_not_found", "previous_response_id"},
		{`{"type":"response.create","model":"instant","stream_id":7,"input":"x"}`, "", "invalid_type", "stream_id"},
		{`{"type":"response.create","model":"instant","stream\u005fid":"agent_b","input":"x"}`, "", "invalid_stream_id", "stream_id"},
	} {
		if err := conn.SendRaw(ctx, json.RawMessage(tc.frame)); err != nil {
			t.Fatal(err)
		}
		ev := recvFrame(t, ctx, conn)
		e := ev.AsError()
		if e == nil || e.Code != tc.code || e.Param != tc.param || ev.StreamID != tc.stream {
			t.Fatalf("%s: %s", tc.frame, ev.Raw)
		}
	}
}

// At most 16 responses run at once on one connection: once 16 lanes have
// started, a 17th lane's create waits until one of them ends. Lane 1's
// reply is short and the other 15 are long, so lane 17 can only start
// after lane 1 completed.
func TestWebSocketLanesRunAtMost16Responses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	for i := 1; i <= 16; i++ {
		p := laneCreate(fmt.Sprintf("lane_%d", i), true)
		if i == 1 {
			p.MaxOutputTokens = openai.Int(20)
		}
		if err := conn.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	firstDone := ""
	observe := func(ev *api.Event) {
		if api.IsTerminal(ev.Type) && firstDone == "" {
			firstDone = ev.StreamID
		}
	}
	for started := map[string]bool{}; len(started) < 16; {
		ev := recvFrame(t, ctx, conn)
		observe(ev)
		if ev.Type == api.EventCreated {
			started[ev.StreamID] = true
		}
	}
	if err := conn.Create(ctx, laneCreate("lane_17", false)); err != nil {
		t.Fatal(err)
	}
	for {
		ev := recvFrame(t, ctx, conn)
		observe(ev)
		if ev.StreamID == "lane_17" && ev.Type == api.EventCreated {
			if firstDone != "lane_1" {
				t.Fatalf("lane_17 started while 16 responses ran (first to end: %q)", firstDone)
			}
			return
		}
	}
}

// The queue bound holds per connection, over all its lanes: while lane a
// runs a long response with two creates queued behind it, lane b's creates
// are refused though lane b is idle, each refusal naming its lane.
func TestWebSocketQueueBoundSpansLanes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.WSQueue = 2 })
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"classic","store":false,"max_output_tokens":200,"ignore_eos":true,"stream_id":"a","input":"long"}`)
	// Once it runs, two creates queue behind it and fill the connection's bound.
	if ev := readEvent(t, c); ev.Type != api.EventCreated || ev.StreamID != "a" {
		t.Fatalf("first frame %s", ev.Raw)
	}
	for i := 2; i <= 3; i++ {
		send(t, c, fmt.Sprintf(`{"type":"response.create","model":"instant","store":false,"stream_id":"a","input":"a%d"}`, i))
	}
	for i := 1; i <= 3; i++ {
		send(t, c, fmt.Sprintf(`{"type":"response.create","model":"instant","store":false,"stream_id":"b","input":"b%d"}`, i))
	}
	full := map[string]int{}
	done := map[string]int{}
	for done["a"] < 3 || done["b"]+full["b"] < 3 {
		ev := readEvent(t, c)
		switch {
		case ev.Type == api.EventError:
			if e := ev.AsError(); e == nil || e.Status != 429 || e.Code != "websocket_queue_full" {
				t.Fatalf("error frame %s", ev.Raw)
			}
			full[ev.StreamID]++
		case api.IsTerminal(ev.Type):
			done[ev.StreamID]++
		}
	}
	if full["b"] != 3 || done["b"] != 0 || full["a"] != 0 {
		t.Fatalf("refused %v, completed %v: want lane b's 3 creates refused by the connection's bound", full, done)
	}
}

// The prototype serves the default lane only, and says so.
func TestPrototypeRefusesStreamID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWSWith("/v1/responses", http.Header{"Openai-Beta": {api.OpenAIBetaPrototype}})
	send(t, c, `{"type":"response.create","model":"instant","stream_id":"agent_a","input":"x"}`)
	ev := readEvent(t, c)
	if e := ev.AsError(); e == nil || e.Code != "unsupported_parameter" || e.Param != "stream_id" || ev.StreamID != "" {
		t.Fatalf("got %s", ev.Raw)
	}
}
