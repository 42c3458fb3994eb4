package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/internal/wait"
	"agentloop/server/enginetest"

	"github.com/coder/websocket"
)

// protoWS dials a prototype connection: the legacy beta value among others
// in OpenAI-Beta.
func (h *harness) protoWS(path string) *websocket.Conn {
	h.t.Helper()
	return h.rawWSWith(path, http.Header{"Openai-Beta": {"responses_multi_agent=v1, " + api.OpenAIBetaPrototype}})
}

// readSegment reads events up to response.done or a terminal event.
func readSegment(t *testing.T, c *websocket.Conn) []*api.Event {
	t.Helper()
	var evs []*api.Event
	for {
		ev := readEvent(t, c)
		evs = append(evs, ev)
		if ev.Type == api.EventDone || api.IsTerminal(ev.Type) {
			return evs
		}
	}
}

const protoCreate = `{"type":"response.create","model":"burst","store":false,"input":"What's the weather in Lyon? Check it.",` +
	`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}],` +
	`"tool_choice":"auto"}`

func TestPrototypePausesAndResumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.protoWS("/v1/responses")
	send(t, c, protoCreate)
	first := readSegment(t, c)
	done := first[len(first)-1]
	if done.Type != api.EventDone {
		t.Fatalf("the first segment ended with %s, want response.done", done.Type)
	}
	if done.Response.Status != "in_progress" || len(done.Response.Output) != 1 || done.Response.Output[0].Type != api.TypeFunctionCall {
		t.Fatalf("response.done: status %q, output %+v", done.Response.Status, done.Response.Output)
	}
	id, call := done.Response.ID, done.Response.Output[0]
	for i, ev := range first {
		if ev.SequenceNumber != i {
			t.Fatalf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
		}
	}

	// An output that answers no call is refused; the response stays paused.
	send(t, c, `{"type":"response.append","input":[{"type":"function_call_output","call_id":"call_nope","output":"x"}]}`)
	if ev := readEvent(t, c); ev.Type != api.EventError || ev.Status != 400 || ev.Error == nil || !strings.Contains(ev.Error.Message, "call_nope") {
		t.Fatalf("orphan append: got %s", ev.Raw)
	}

	send(t, c, `{"type":"response.append","input":[{"type":"function_call_output","call_id":"`+call.CallID+`","output":"{\"temp_c\":17}"}]}`)
	second := readSegment(t, c)
	last := second[len(second)-1]
	if last.Type != api.EventCompleted {
		t.Fatalf("the second segment ended with %s: %s", last.Type, last.Raw)
	}
	for i, ev := range second {
		if want := len(first) + i; ev.SequenceNumber != want {
			t.Fatalf("segment 1 event %d (%s) has sequence_number %d, want %d", i, ev.Type, ev.SequenceNumber, want)
		}
	}
	r := last.Response
	if r.ID != id || len(r.Output) != 2 || r.Output[0].CallID != call.CallID || r.Output[1].Type != api.TypeMessage {
		t.Fatalf("final response: id %s (want %s), output %+v", r.ID, id, r.Output)
	}
	if !strings.Contains(r.Output[1].Text(), "17") {
		t.Fatalf("the answer ignores the appended output: %q", r.Output[1].Text())
	}
	if r.Usage == nil || r.Usage.OutputTokens <= 0 || r.Usage.InputTokens <= 0 {
		t.Fatalf("usage: %+v", r.Usage)
	}
	for _, ev := range second {
		if ev.Type == api.EventOutputItemAdded && ev.OutputIndex != 1 {
			t.Fatalf("segment 1's item has output_index %d, want 1", ev.OutputIndex)
		}
	}

	tr, ok := h.sh.Traces.Get(id)
	if !ok {
		t.Fatal("no trace")
	}
	bySegment := map[int]map[string]int{}
	for _, s := range tr.Spans {
		if bySegment[s.Segment] == nil {
			bySegment[s.Segment] = map[string]int{}
		}
		bySegment[s.Segment][s.Name]++
	}
	for _, name := range []string{"parse", "validate", "render", "safety", "queue", "prefill", "generate"} {
		if bySegment[1][name] != 1 {
			t.Fatalf("segment 1 has %d %s spans: %+v", bySegment[1][name], name, tr.Spans)
		}
	}
	if bySegment[0]["finalize"] != 0 || bySegment[1]["finalize"] != 1 || bySegment[0]["load"] != 1 || bySegment[1]["load"] != 0 {
		t.Fatalf("finalize must run once, at the end, and load once, at the start: %+v", bySegment)
	}
	if len(bySegment) != 2 {
		t.Fatalf("segments in the trace: %+v", bySegment)
	}
	// A resumed segment prefills only the appended tokens.
	for _, s := range tr.Spans {
		if s.Name == "render" && s.Segment == 1 {
			if s.Items != 1 || s.Tokens <= 0 {
				t.Fatalf("segment 1 rendered %+v", s)
			}
		}
		if s.Name == "prefill" && s.Segment == 1 {
			if render := spanOf(tr, "render", 1); s.Tokens != render.Tokens {
				t.Fatalf("segment 1 prefilled %d tokens, rendered %d", s.Tokens, render.Tokens)
			}
		}
	}

	// The socket goes on: an append with nothing paused is refused.
	send(t, c, `{"type":"response.append","input":[{"type":"function_call_output","call_id":"`+call.CallID+`","output":"x"}]}`)
	if ev := readEvent(t, c); ev.Type != api.EventError || ev.Status != 400 {
		t.Fatalf("append with nothing paused: %s", ev.Raw)
	}
}

func spanOf(tr api.Trace, name string, segment int) api.Span {
	for _, s := range tr.Spans {
		if s.Name == name && s.Segment == segment {
			return s
		}
	}
	return api.Span{}
}

func TestAppendWithoutBetaHeaderIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	send(t, c, protoCreate)
	evs := readResponse(t, c)
	last := evs[len(evs)-1]
	if last.Type != api.EventCompleted {
		t.Fatalf("standard mode ended with %s", last.Type)
	}
	for _, ev := range evs {
		if ev.Type == api.EventDone {
			t.Fatal("standard mode sent response.done")
		}
	}
	call := last.Response.Output[0]
	send(t, c, `{"type":"response.append","input":[{"type":"function_call_output","call_id":"`+call.CallID+`","output":"x"}]}`)
	ev := readEvent(t, c)
	if ev.Type != api.EventError || ev.Status != 400 || ev.Error == nil || ev.Error.Param != "type" {
		t.Fatalf("append without the beta header: %s", ev.Raw)
	}
	// The socket stays usable.
	send(t, c, `{"type":"response.create","model":"burst","store":false,"previous_response_id":"`+last.Response.ID+`",`+
		`"input":[{"type":"function_call_output","call_id":"`+call.CallID+`","output":"{\"temp_c\":17}"}]}`)
	if evs := readResponse(t, c); evs[len(evs)-1].Type != api.EventCompleted {
		t.Fatalf("continuation after the refused append: %s", evs[len(evs)-1].Raw)
	}
}

// A response paused longer than the connection's lifetime ends failed.
func TestPrototypePauseExpires(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.WSLifetime = 300 * time.Millisecond })
	c := h.protoWS("/v1/responses")
	send(t, c, protoCreate)
	first := readSegment(t, c)
	if first[len(first)-1].Type != api.EventDone {
		t.Fatalf("the first segment ended with %s", first[len(first)-1].Type)
	}
	ev := readEvent(t, c)
	if ev.Type != api.EventFailed || ev.Response == nil || ev.Response.Status != "failed" || ev.SequenceNumber != len(first) {
		t.Fatalf("after the pause: %s", ev.Raw)
	}
	if len(ev.Response.Output) != 1 {
		t.Fatalf("the failed response lost its output: %+v", ev.Response.Output)
	}
}

// A paused response whose append waits in a modelled stage when the engine
// stops ends with response.failed: its response.created went out long ago.
func TestAPausedResponseStoppedInAModelledStageFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// No hops; about 100k appended tokens at 20,000 tok/s: five seconds of
	// stack_classify, far longer than the test takes to see it and stop.
	stack := url.QueryEscape(`{"preset":"hosted","hop_ms":0,"classify_tps":20000,"classify_tps_baseline":20000}`)
	c := h.protoWS("/v1/responses?" + api.QueryStack + "=" + stack)
	send(t, c, protoCreate)
	first := readSegment(t, c)
	done := first[len(first)-1]
	if done.Type != api.EventDone {
		t.Fatalf("the first segment ended with %s", done.Type)
	}
	call := done.Response.Output[0]
	send(t, c, `{"type":"response.append","input":[{"type":"function_call_output","call_id":"`+call.CallID+`","output":"`+
		strings.Repeat("word ", 100_000)+`"}]}`)
	// Rendering the append is slow under the race detector: a generous deadline.
	wait.Until(t, "the append waiting in stack_classify", func() bool {
		return h.scrape()[`agentloop_stack_stage_waiting{stage="stack_classify"}`] == 1
	})
	h.v1.StopGenerating()
	if ev := readEvent(t, c); ev.Type != api.EventFailed || ev.Response == nil || ev.Response.Status != "failed" {
		t.Fatalf("stopped while classifying the append: %s, want response.failed", ev.Raw)
	}
}
