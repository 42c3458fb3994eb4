package server_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"agentloop/api"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// Steering tests run a slow custom model (50 tokens/s) so that a response
// is surely in flight when the steer arrives: each waits for the
// response's first delta before steering it. The reply is a workload
// reply (message tokens, then a call), so the point between items is
// known.
const (
	steerModel = "custom-50"
	// steerReply: a message, then a call; steerCallOnly: a call alone.
	steerReply    = `"metadata":{"agentloop_reply":"output=30;calls=10"}`
	steerCallOnly = `"metadata":{"agentloop_reply":"output=30;calls=30"}`
)

// steerCreate is a response.create of the steering tests, with extra
// fields.
func steerCreate(extra string) string {
	return `{"type":"response.create","model":"` + steerModel + `","store":false,"input":"Work on it."` + extra + `}`
}

func steerMessage(id, input string) string {
	return `{"type":"response.steer","previous_response_id":"` + id + `","input":` + input + `}`
}

// steerAtFirstDelta sends create, steers the response with input at its
// first delta, and reads until terminals terminal events have come, then
// the events that follow the last one up to the steering events it
// expects after it (pending: 1).
func steerAtFirstDelta(t *testing.T, c *websocket.Conn, create, input string, terminals, after int) []*api.Event {
	t.Helper()
	send(t, c, create)
	var evs []*api.Event
	var id string
	steered := false
	for terminals > 0 || after > 0 {
		ev := readEvent(t, c)
		evs = append(evs, ev)
		switch {
		case ev.Type == api.EventCreated && id == "":
			id = ev.Response.ID
		case !steered && (ev.Type == api.EventOutputTextDelta || ev.Type == api.EventArgumentsDelta):
			steered = true
			send(t, c, steerMessage(id, input))
		case api.IsTerminal(ev.Type):
			terminals--
		case terminals == 0:
			after--
		}
	}
	return evs
}

var steerIDPattern = regexp.MustCompile(`\bsteer_[0-9a-f]{48}\b`)
var seqPattern = regexp.MustCompile(`"sequence_number":[0-9]+`)

// inputCountPattern finds the input counts of a usage: a context holding
// calls renders their random call ids in a varying number of tokens.
var inputCountPattern = regexp.MustCompile(`"(input_tokens|total_tokens)":[0-9]+`)

// normalizeSteer is normalize for a steered stream: the deltas, whose
// count depends on the scheduler's ticks, are left out, the sequence
// numbers that remain are checked to rise within each response and then
// written as the events' order in their response (a refusal keeps its 0),
// steering ids are named like the others, and input counts are zeroed.
func normalizeSteer(t *testing.T, evs []*api.Event) []byte {
	t.Helper()
	var kept [][]byte
	last := -1
	for _, ev := range evs {
		if ev.Type == api.EventCreated {
			last = -1
		}
		if ev.Type != api.EventSteerFailed { // a refusal is outside any stream: 0
			if ev.SequenceNumber <= last {
				t.Fatalf("sequence_number %d after %d: %s", ev.SequenceNumber, last, ev.Raw)
			}
			last = ev.SequenceNumber
		}
		if ev.Type == api.EventOutputTextDelta || ev.Type == api.EventArgumentsDelta {
			continue
		}
		kept = append(kept, ev.Raw)
	}
	names := map[string]string{}
	seq := 0
	for i, raw := range kept {
		raw = steerIDPattern.ReplaceAllFunc(raw, func(id []byte) []byte {
			if n, ok := names[string(id)]; ok {
				return []byte(n)
			}
			names[string(id)] = "steer_" + strconv.Itoa(len(names)+1)
			return []byte(names[string(id)])
		})
		raw = inputCountPattern.ReplaceAll(raw, []byte(`"$1":0`))
		kept[i] = raw
		switch {
		case bytes.HasPrefix(raw, []byte(`{"type":"`+api.EventSteerFailed+`"`)):
			continue // a refusal's 0 stays
		case bytes.HasPrefix(raw, []byte(`{"type":"`+api.EventCreated+`"`)):
			seq = 0
		}
		kept[i] = seqPattern.ReplaceAll(raw, []byte(`"sequence_number":`+strconv.Itoa(seq)))
		seq++
	}
	return normalize(kept)
}

func typesOf(evs []*api.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Type != api.EventOutputTextDelta && ev.Type != api.EventArgumentsDelta {
			out = append(out, ev.Type)
		}
	}
	return out
}

// TestSteerStopsBetweenItemsAndHandsOver: the steered response is
// acknowledged, stops after its message (before its call) incomplete
// with reason steered, and a successor continues it with the steering
// input, in the order the SDK's types describe.
func TestSteerStopsBetweenItemsAndHandsOver(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	evs := steerAtFirstDelta(t, c, steerCreate(","+steerReply), `"Stop; say bye instead."`, 2, 0)
	want := []string{api.EventCreated, api.EventInProgress, api.EventOutputItemAdded, api.EventContentPartAdded,
		api.EventSteerAccepted, api.EventOutputTextDone, api.EventContentPartDone, api.EventOutputItemDone, api.EventIncomplete,
		api.EventCreated, api.EventInProgress, api.EventOutputItemAdded, api.EventContentPartAdded, api.EventOutputTextDone,
		api.EventContentPartDone, api.EventOutputItemDone, api.EventOutputItemAdded, api.EventArgumentsDone, api.EventOutputItemDone,
		api.EventCompleted}
	if got := typesOf(evs); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	checkGolden(t, "ws_steer_steered.jsonl", normalizeSteer(t, evs))

	var first, next *api.Response
	for _, ev := range evs {
		switch ev.Type {
		case api.EventIncomplete:
			first = ev.Response
		case api.EventCompleted:
			next = ev.Response
		}
	}
	if first.IncompleteDetails == nil || first.IncompleteDetails.Reason != api.IncompleteSteered || len(first.Output) != 1 {
		t.Fatalf("steered response %+v", first)
	}
	if next.PreviousResponseID == nil || *next.PreviousResponseID != first.ID {
		t.Fatalf("the successor continues %v, want %s", next.PreviousResponseID, first.ID)
	}
	// The traces link the two.
	var accepted struct {
		Steer struct{ ID string } `json:"steer"`
	}
	for _, ev := range evs {
		if ev.Type == api.EventSteerAccepted {
			json.Unmarshal(ev.Raw, &accepted)
		}
	}
	var t1, t2 api.Trace
	h.getJSON("/api/traces/"+first.ID, &t1)
	h.getJSON("/api/traces/"+next.ID, &t2)
	if len(t1.SteeredBy) != 1 || t1.SteeredBy[0] != accepted.Steer.ID || t2.SteeredFrom != first.ID {
		t.Fatalf("traces: steered_by %v (accepted %s), successor's steered_from %q", t1.SteeredBy, accepted.Steer.ID, t2.SteeredFrom)
	}
	// The successor's context holds the steering input after the steered
	// output: its usage counts more input than the first's.
	if next.Usage.InputTokens <= first.Usage.InputTokens+first.Usage.OutputTokens {
		t.Fatalf("successor's input %d, steered response's input %d + output %d", next.Usage.InputTokens, first.Usage.InputTokens, first.Usage.OutputTokens)
	}
}

// TestSteerWaitsForToolOutputs: a response whose call the client must
// answer does not stop: it completes, response.steer.pending names the
// output it waits for, and the client's continuation commits the steering
// input, right after the output that answers the call.
func TestSteerWaitsForToolOutputs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	evs := steerAtFirstDelta(t, c, steerCreate(`,"store":true,`+steerCallOnly), `[{"role":"user","content":"Then also check the tests."}]`, 1, 1)
	want := []string{api.EventCreated, api.EventInProgress, api.EventOutputItemAdded, api.EventSteerAccepted, api.EventArgumentsDone,
		api.EventOutputItemDone, api.EventCompleted, api.EventSteerPending}
	if got := typesOf(evs); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	var pending struct {
		Reason        string `json:"reason"`
		RequiredInput []struct {
			Type, CallID, Name string
		} `json:"required_input"`
	}
	json.Unmarshal(evs[len(evs)-1].Raw, &pending)
	call := evs[len(evs)-2].Response.Output[0]
	if pending.Reason != api.SteerWaitingForRequiredInput || len(pending.RequiredInput) != 1 {
		t.Fatalf("pending %s", evs[len(evs)-1].Raw)
	}
	// The client answers the call; the queued input follows the output.
	id := evs[len(evs)-2].Response.ID
	send(t, c, `{"type":"response.create","model":"`+steerModel+`","store":true,"previous_response_id":"`+id+`","input":[{"type":"function_call_output","call_id":"`+call.CallID+`","output":"ok"}]}`)
	cont := readResponse(t, c)
	evs = append(evs, cont...)
	checkGolden(t, "ws_steer_pending.jsonl", normalizeSteer(t, evs))
	if cont[len(cont)-1].Type != api.EventCompleted {
		t.Fatalf("continuation: %s", cont[len(cont)-1].Raw)
	}
	var items struct {
		Data []struct{ Type, Role string } `json:"data"`
	}
	h.getJSON("/v1/responses/"+cont[0].Response.ID+"/input_items?order=asc", &items)
	n := len(items.Data)
	if n < 2 || items.Data[n-1].Type != "message" || items.Data[n-1].Role != "user" || items.Data[n-2].Type != "function_call_output" {
		t.Fatalf("the continuation's input: %+v", items.Data)
	}
}

// TestSteerRefusals: response.steer used to get a generic invalid_value
// error frame; now every refusal is response.steer.failed with the
// types' code, returning the input.
func TestSteerRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	var evs []*api.Event
	// Unknown, finished, and malformed.
	send(t, c, steerMessage("resp_unknown", `"Hi."`))
	evs = append(evs, readEvent(t, c))
	send(t, c, `{"type":"response.create","model":"burst","store":false,"input":"Hi."}`)
	done := readResponse(t, c)
	send(t, c, steerMessage(done[len(done)-1].Response.ID, `"Hi."`))
	evs = append(evs, readEvent(t, c))
	send(t, c, steerMessage("resp_unknown", `[{"role":"assistant","content":"Hi."}]`))
	evs = append(evs, readEvent(t, c))
	send(t, c, `{"type":"response.steer","previous_response_id":"resp_unknown","input":"Hi.","stream_id":"a"}`)
	evs = append(evs, readEvent(t, c))
	// Bound to a conversation, or compacting automatically: refused as the
	// hosted API refuses them.
	status, body := h.post("/v1/conversations", `{}`)
	var conv struct{ ID string }
	if json.Unmarshal(body, &conv); status != 200 || conv.ID == "" {
		t.Fatalf("create a conversation: %d %s", status, body)
	}
	for _, extra := range []string{`,"conversation":"` + conv.ID + `",` + steerReply, `,"context_management":[{"type":"compaction","compact_threshold":1000000}],` + steerReply} {
		send(t, c, steerCreate(extra))
		var id string
		for {
			ev := readEvent(t, c)
			if ev.Type == api.EventCreated {
				id = ev.Response.ID
			}
			if ev.Type == api.EventOutputTextDelta {
				break
			}
		}
		send(t, c, steerMessage(id, `"Hi."`))
		for {
			ev := readEvent(t, c)
			if ev.Type == api.EventSteerFailed {
				evs = append(evs, ev)
			}
			if api.IsTerminal(ev.Type) {
				if ev.Type != api.EventCompleted {
					t.Fatalf("a refused steer ended the response: %s", ev.Raw)
				}
				break
			}
		}
	}
	checkGolden(t, "ws_steer_failed.jsonl", normalizeSteer(t, evs))
	for i, code := range []string{api.SteerResponseNotFound, api.SteerResponseCompleted, api.SteerInvalidInput, api.SteerInvalidInput,
		api.SteerNotSupported, api.SteerNotSupported} {
		var f struct {
			Error struct{ Code string } `json:"error"`
			Steer struct {
				ID    *string         `json:"id"`
				Input json.RawMessage `json:"input"`
			} `json:"steer"`
		}
		json.Unmarshal(evs[i].Raw, &f)
		if evs[i].Type != api.EventSteerFailed || f.Error.Code != code || f.Steer.ID != nil || len(f.Steer.Input) == 0 {
			t.Errorf("refusal %d: %s, want %s without an id", i, evs[i].Raw, code)
		}
	}
}

// TestSteerThroughOpenAIGo steers with openai-go's WebSocket client and
// its steering types.
func TestSteerThroughOpenAIGo(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	conn := h.connect()
	if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{Model: steerModel, Store: openai.Bool(false),
		Metadata: shared.Metadata{"agentloop_reply": "output=30;calls=10"},
		Input:    responses.ResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String("Work on it.")}}); err != nil {
		t.Fatal(err)
	}
	var id, steerID, successor string
	var reason string
	for successor == "" || reason == "" {
		ev, err := conn.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case "response.created":
			if id == "" {
				id = ev.AsResponseCreated().Response.ID
			} else {
				successor = ev.AsResponseCreated().Response.PreviousResponseID
			}
		case "response.output_text.delta":
			if steerID == "" {
				steerID = "sent"
				err = conn.Send(ctx, responses.ResponsesClientEventUnionParam{OfResponseSteer: &responses.ResponseSteerEventParam{
					PreviousResponseID: id, Input: responses.ResponseSteerInputUnionParam{OfString: openai.String("Say bye instead.")}}})
				if err != nil {
					t.Fatal(err)
				}
			}
		case "response.steer.accepted":
			a := ev.AsResponseSteerAcceptedEvent()
			if a.Steer.PreviousResponseID != id || a.Steer.ID == "" {
				t.Fatalf("accepted %s", ev.RawJSON())
			}
			steerID = a.Steer.ID
		case "response.incomplete":
			reason = string(ev.AsResponseIncomplete().Response.IncompleteDetails.Reason)
		}
	}
	if reason != "steered" || successor != id || steerID == "sent" {
		t.Fatalf("reason %q, successor continues %q (want %s), steer %s", reason, successor, id, steerID)
	}
	final, err := conn.FinalResponse(ctx)
	if err != nil || final.Status != "completed" {
		t.Fatalf("successor: %v %+v", err, final)
	}
	// A refusal decodes as the types' failed event.
	if err := conn.Send(ctx, responses.ResponsesClientEventUnionParam{OfResponseSteer: &responses.ResponseSteerEventParam{
		PreviousResponseID: "resp_gone", Input: responses.ResponseSteerInputUnionParam{OfString: openai.String("x")}}}); err != nil {
		t.Fatal(err)
	}
	ev, err := conn.Recv(ctx)
	if err != nil || ev.Type != "response.steer.failed" || ev.AsResponseSteerFailedEvent().Error.Code != "response_not_found" ||
		ev.AsResponseSteerFailedEvent().Steer.Input.OfString != "x" {
		t.Fatalf("refusal: %v %s", err, ev.RawJSON())
	}
}

// TestSteerOnANamedLane: the target's lane is the steering's: the
// acknowledgement and the successor carry its stream_id.
func TestSteerOnANamedLane(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	evs := steerAtFirstDelta(t, c, steerCreate(`,"stream_id":"sub-1",`+steerReply), `"Bye."`, 2, 0)
	var types []string
	for _, ev := range evs {
		if ev.StreamID != "sub-1" {
			t.Fatalf("an event off the lane: %s", ev.Raw)
		}
		if ev.Type == api.EventSteerAccepted || api.IsTerminal(ev.Type) {
			types = append(types, ev.Type)
		}
	}
	if want := []string{api.EventSteerAccepted, api.EventIncomplete, api.EventCompleted}; !slices.Equal(types, want) {
		t.Fatalf("got %v, want %v", types, want)
	}
}

// TestSteerBoundsPendingInput: a response holds at most
// api.MaxPendingSteers submissions; one more is refused, and the
// successor commits all it held, in submission order.
func TestSteerBoundsPendingInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.rawWS("/v1/responses")
	send(t, c, steerCreate(`,"store":true,`+steerReply))
	var id string
	for id == "" { // in flight from its response.created on
		if ev := readEvent(t, c); ev.Type == api.EventCreated {
			id = ev.Response.ID
		}
	}
	for i := 0; i <= api.MaxPendingSteers; i++ {
		send(t, c, steerMessage(id, `"Steer `+strconv.Itoa(i)+`."`))
	}
	accepted, refused, terminals := 0, 0, 0
	var successor string
	for terminals < 2 {
		ev := readEvent(t, c)
		switch {
		case ev.Type == api.EventSteerAccepted:
			accepted++
		case ev.Type == api.EventSteerFailed:
			refused++
			if !bytes.Contains(ev.Raw, []byte(api.SteerTooManyPending)) {
				t.Fatalf("refusal %s", ev.Raw)
			}
		case api.IsTerminal(ev.Type):
			terminals++
			successor = ev.Response.ID
		}
	}
	if accepted != api.MaxPendingSteers || refused != 1 {
		t.Fatalf("accepted %d, refused %d", accepted, refused)
	}
	var items struct {
		Data []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"data"`
	}
	h.getJSON("/v1/responses/"+successor+"/input_items?order=asc&limit=100", &items)
	n := len(items.Data)
	if n < api.MaxPendingSteers || items.Data[n-api.MaxPendingSteers].Content[0].Text != "Steer 0." || items.Data[n-1].Content[0].Text != "Steer 15." {
		t.Fatalf("the successor's input: %+v", items.Data)
	}
}
