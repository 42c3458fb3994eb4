package conformance

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/server/enginetest"
)

// The shapes testdata/sessions.mjs prints, a key per case.
type (
	sdkError struct {
		Name, Code, Param string
		Status            int
		BadRequest        bool
	}
	wsResult struct {
		Type, ID, Error string
		InputTokens     int64
		Types           []string
	}
	wsEvent  struct{ Type, ID, Reason, Steer, SteerID, Error string }
	sessions struct {
		Conversations *struct {
			ID, Object, RetrievedTopic, UpdatedTopic, AfterDeleteID, ResponseStatus string
			Added                                                                   int
			Listed, ResponseOutput                                                  []string
			RetrievedItem, Deleted                                                  bool
			ItemsAfter                                                              []struct{ ID, Type, Role string }
			WithPrevious, Gone                                                      *sdkError
		}
		Background *struct {
			Created, Done, CancelFinished, CancelRunning, Polled string
			Background                                           bool
			OutputTokens                                         int
			All, Resumed                                         [][2]any
		}
		Compaction *struct {
			Standalone *struct {
				Object                    string
				Types                     []string
				InputTokens, OutputTokens int
			}
			First *struct {
				Types             []string
				Blob, InputTokens int
			}
			Next *struct {
				Status      string
				Types       []string
				InputTokens int
			}
		}
		ContextWindow *struct {
			Over *sdkError
			Auto *struct {
				Status, Truncation string
				InputTokens        int
			}
		}
		WebSocket             *struct{ First, Second, Compacted, AfterCompaction wsResult }
		Steered, SteerRefused []wsEvent
	}
)

// TestTheNodeSDKDrivesLongSessions runs testdata/sessions.mjs with the
// installed openai npm package against an engine whose every context
// window is 4000 tokens: the long-session features through the SDK's own
// methods over HTTP (conversations and their items, paginated; background
// responses polled, resumed and cancelled; compaction standalone and
// automatic, the item sent back; context_length_exceeded as the SDK's
// BadRequestError and truncation "auto") and over WebSocket mode with its
// ResponsesWS (a continuation from the connection cache, a compaction and
// the next turn after it, a steered response and a refused steer).
func TestTheNodeSDKDrivesLongSessions(t *testing.T) {
	t.Parallel()
	const window = 4000
	es := enginetest.Start(t, func(c *enginetest.Config) { c.ContextWindow = window })
	out := runNode(t, "sessions.mjs", "OPENAI_BASE_URL="+es.URL+"/v1", "WINDOW="+strconv.Itoa(window))
	var got sessions
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var cases map[string]json.RawMessage
	_ = json.Unmarshal(out, &cases)
	for name, raw := range cases {
		var e struct{ Error string }
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			t.Errorf("case %s threw: %s", name, e.Error)
		}
	}
	if t.Failed() {
		return
	}
	t.Run("conversations", func(t *testing.T) { checkConversations(t, got) })
	t.Run("background", func(t *testing.T) { checkBackground(t, got) })
	t.Run("compaction", func(t *testing.T) { checkCompaction(t, got) })
	t.Run("context window", func(t *testing.T) {
		c := got.ContextWindow
		if o := c.Over; o == nil || !o.BadRequest || o.Status != 400 || o.Code != api.CodeContextLengthExceeded || o.Param != "input" {
			t.Errorf("a prompt over the window: %+v, want the SDK's BadRequestError with context_length_exceeded", o)
		}
		if a := c.Auto; a == nil || a.Status != "completed" || a.Truncation != "auto" || a.InputTokens > window || a.InputTokens == 0 {
			t.Errorf("truncation auto: %+v, want a completed response within %d tokens", a, window)
		}
	})
	t.Run("websocket", func(t *testing.T) { checkWebSocket(t, es, got) })
	t.Run("steering", func(t *testing.T) { checkSteering(t, got) })
}

func checkConversations(t *testing.T, got sessions) {
	c := got.Conversations
	if !strings.HasPrefix(c.ID, "conv_") || c.Object != "conversation" || c.RetrievedTopic != "a" || c.UpdatedTopic != "b" {
		t.Errorf("create, retrieve, update: %+v", c)
	}
	// One item at create and three added, listed two a page.
	seen := map[string]bool{}
	for _, id := range c.Listed {
		if seen[id] {
			t.Errorf("auto-pagination gave %s twice", id)
		}
		seen[id] = true
	}
	if c.Added != 3 || len(c.Listed) != 4 || !c.RetrievedItem || c.AfterDeleteID != c.ID {
		t.Errorf("items create, list, retrieve, delete: %+v", c)
	}
	// After one item's delete and a response in it: three of the four, the
	// response's input, and its output last.
	n := len(c.ItemsAfter)
	if c.ResponseStatus != "completed" || n != 5 || len(c.ResponseOutput) != 1 || c.ItemsAfter[n-1].ID != c.ResponseOutput[0] ||
		c.ItemsAfter[n-2].Role != "user" || c.ItemsAfter[n-1].Role != "assistant" {
		t.Errorf("responses.create({conversation}) left the items %+v (output %v)", c.ItemsAfter, c.ResponseOutput)
	}
	if e := c.WithPrevious; e == nil || e.Status != 400 || e.Param != "previous_response_id" {
		t.Errorf("conversation with previous_response_id: %+v, want a 400", e)
	}
	if e := c.Gone; !c.Deleted || e == nil || e.Status != 404 || e.Name != "NotFoundError" {
		t.Errorf("delete, then retrieve: deleted %v, %+v", c.Deleted, e)
	}
}

func checkBackground(t *testing.T, got sessions) {
	b := got.Background
	if b.Created != "queued" || !b.Background || b.Done != "completed" || b.OutputTokens == 0 {
		t.Errorf("background create, polled: %+v", b)
	}
	types := func(evs [][2]any) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev[0].(string))
		}
		return out
	}
	all := types(b.All)
	if len(all) < 5 || !slices.Equal(all[:3], []string{"response.created", "response.queued", "response.in_progress"}) || all[len(all)-1] != "response.completed" {
		t.Errorf("the stream from the start: %v", all)
	}
	// Resumed after sequence number 2: the rest, numbered on.
	if len(b.Resumed) != len(b.All)-3 || len(b.Resumed) == 0 || b.Resumed[0][1].(float64) != 3 || !slices.Equal(types(b.Resumed), all[3:]) {
		t.Errorf("resumed after 2: %v", b.Resumed)
	}
	if b.CancelFinished != "completed" || b.CancelRunning != "cancelled" || b.Polled != "cancelled" {
		t.Errorf("cancel of a finished response %q, of a running one %q, polled after %q", b.CancelFinished, b.CancelRunning, b.Polled)
	}
}

func checkCompaction(t *testing.T, got sessions) {
	c := got.Compaction
	if s := c.Standalone; s == nil || s.Object != "response.compaction" || len(s.Types) == 0 || s.Types[len(s.Types)-1] != api.TypeCompaction || s.InputTokens < 800 {
		t.Errorf("responses.compact: %+v", s)
	}
	if f := c.First; f == nil || len(f.Types) < 2 || f.Types[0] != api.TypeCompaction || f.Blob == 0 || f.InputTokens >= 500 {
		t.Errorf("a create past its threshold: %+v, want a compaction item first and a prompt under 500", f)
	}
	if n := c.Next; n == nil || n.Status != "completed" || n.InputTokens >= 500 || slices.Contains(n.Types, api.TypeCompaction) {
		t.Errorf("the follow-up that sends the compaction item back: %+v", n)
	}
}

// checkWebSocket also reads the continuations' traces: each loaded its
// context from the connection cache.
func checkWebSocket(t *testing.T, es *enginetest.Engines, got sessions) {
	w := got.WebSocket
	for name, r := range map[string]wsResult{"first": w.First, "continuation": w.Second, "compacting": w.Compacted, "after the compaction": w.AfterCompaction} {
		if r.Type != "response.completed" {
			t.Errorf("%s: %+v", name, r)
		}
	}
	if w.Second.InputTokens <= w.First.InputTokens {
		t.Errorf("the continuation holds no more than the first turn: %d, %d", w.Second.InputTokens, w.First.InputTokens)
	}
	if len(w.Compacted.Types) == 0 || w.Compacted.Types[0] != api.TypeCompaction || w.Compacted.InputTokens >= 500 || w.AfterCompaction.InputTokens >= 500 {
		t.Errorf("compaction over WebSocket: %+v, then %+v", w.Compacted, w.AfterCompaction)
	}
	for _, id := range []string{w.Second.ID, w.AfterCompaction.ID} {
		tr, ok := es.Shared.Traces.Get(id)
		if !ok {
			t.Errorf("no trace of %s", id)
			continue
		}
		if load, _ := tr.Span(api.StageLoad); !strings.Contains(load.Note, "connection cache") {
			t.Errorf("%s loaded its context with %+v, not from the connection cache", id, load)
		}
	}
}

func checkSteering(t *testing.T, got sessions) {
	var order []string
	var steered, successor *wsEvent
	var accepted wsEvent
	for i, ev := range got.Steered {
		order = append(order, ev.Type)
		switch {
		case ev.Type == api.EventSteerAccepted:
			accepted = ev
		case ev.Type == api.EventIncomplete:
			steered = &got.Steered[i]
		case ev.Type == api.EventCompleted:
			successor = &got.Steered[i]
		}
	}
	first := got.Steered[0]
	if steered == nil || successor == nil || steered.ID != first.ID || steered.Reason != "steered" || successor.ID == first.ID ||
		accepted.Steer != first.ID || !strings.HasPrefix(accepted.SteerID, "steer_") {
		t.Fatalf("steering: %v", order)
	}
	a, s := slices.Index(order, api.EventSteerAccepted), slices.Index(order, api.EventIncomplete)
	if a < 0 || a > s || s+1 >= len(order) || order[s+1] != api.EventCreated {
		t.Errorf("accepted, incomplete and the successor's created out of order: %v", order)
	}
	// With automatic compaction the hosted API refuses steering.
	var refused bool
	for _, ev := range got.SteerRefused {
		if ev.Type == api.EventSteerFailed && ev.Error == api.SteerNotSupported {
			refused = true
		}
		if ev.Type == api.EventSteerAccepted || ev.Type == api.EventIncomplete {
			t.Errorf("a steer of a compacting response was taken: %+v", got.SteerRefused)
		}
	}
	if !refused {
		t.Errorf("a steer of a compacting response: %+v, want response.steer.failed with steering_not_supported", got.SteerRefused)
	}
}
