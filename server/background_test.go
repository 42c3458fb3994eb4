package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/internal/wait"
	"agentloop/server/enginetest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// slowBackground is a background create that runs for minutes (300
// tokens at 5 tokens a second), so a test sees it in flight.
func slowBackground() responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "custom-5", Background: openai.Bool(true),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("write a long story")},
		MaxOutputTokens: openai.Int(300)}
}

// runningBackground creates a slowBackground response through client and
// returns it once it runs.
func runningBackground(t *testing.T, client openai.Client) *responses.Response {
	t.Helper()
	r, err := client.Responses.New(t.Context(), slowBackground(), exact)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, client, r.ID, "in_progress")
	return r
}

// exact asks for an exact-length reply (ignore_eos).
var exact = option.WithJSONSet("ignore_eos", true)

// waitStatus polls a response until its status is want.
func waitStatus(t *testing.T, client openai.Client, id string, want responses.ResponseStatus) *responses.Response {
	t.Helper()
	var got *responses.Response
	wait.UntilErr(t, "response "+id+" "+string(want), func() error {
		r, err := client.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
		if err != nil {
			return err
		}
		got = r
		if r.Status != want {
			return fmt.Errorf("status %s", r.Status)
		}
		return nil
	})
	return got
}

// statusOf is an SDK error's HTTP status.
func statusOf(t *testing.T, err error) int {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an API error, got %v", err)
	}
	return e.StatusCode
}

// collect reads a stream to its end, checking that sequence numbers run
// on without a gap from first.
func collect(t *testing.T, s interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
}, first int64) []responses.ResponseStreamEventUnion {
	t.Helper()
	var evs []responses.ResponseStreamEventUnion
	for s.Next() {
		ev := s.Current()
		if want := first + int64(len(evs)); ev.SequenceNumber != want {
			t.Fatalf("event %d (%s) has sequence number %d, want %d", len(evs), ev.Type, ev.SequenceNumber, want)
		}
		evs = append(evs, ev)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestBackgroundResponseOverHTTP: background:true answers at once with the
// queued response; a poll sees it complete; its events stream again from
// the start or after any sequence number, queued → in_progress →
// completed; a cancel of a finished one returns it as it is, and of a
// foreground or unknown one the hosted API's 400 and 404.
func TestBackgroundResponseOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	r, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "instant", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "queued" || !r.Background || len(r.Output) != 0 {
		t.Fatalf("create answered %s, background %v, %d output items; want queued", r.Status, r.Background, len(r.Output))
	}
	done := waitStatus(t, h.client, r.ID, "completed")
	if len(done.Output) == 0 || done.Usage.OutputTokens == 0 {
		t.Fatalf("completed without output: %+v", done)
	}
	all := collect(t, h.client.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{}), 0)
	var types []string
	for _, ev := range all {
		types = append(types, ev.Type)
	}
	if len(all) < 4 || types[0] != "response.created" || types[1] != "response.queued" || types[2] != "response.in_progress" ||
		types[len(types)-1] != "response.completed" {
		t.Fatalf("events: %v", types)
	}
	if all[0].Response.Status != "queued" || all[2].Response.Status != "in_progress" || all[len(all)-1].Response.ID != r.ID {
		t.Errorf("statuses: %s, %s", all[0].Response.Status, all[2].Response.Status)
	}
	rest := collect(t, h.client.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{StartingAfter: param.NewOpt[int64](2)}), 3)
	if len(rest) != len(all)-3 {
		t.Errorf("resumed after 2: %d events, want %d", len(rest), len(all)-3)
	}

	// A cancel of a finished background response answers it as it is.
	c, err := h.client.Responses.Cancel(ctx, r.ID)
	if err != nil || c.Status != "completed" || c.ID != r.ID {
		t.Fatalf("cancel of a finished response: %+v, %v", c, err)
	}
	fg, err := h.client.Responses.New(ctx, responses.ResponseNewParams{Model: "instant",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Responses.Cancel(ctx, fg.ID); statusOf(t, err) != 400 {
		t.Errorf("cancel of a foreground response: %v, want 400", err)
	}
	if _, err := h.client.Responses.Cancel(ctx, "resp_unknown"); statusOf(t, err) != 404 {
		t.Errorf("cancel of an unknown response: %v, want 404", err)
	}
	// A foreground response still cannot be streamed again.
	var e struct{ Error struct{ Message string } }
	if status := h.getJSON("/v1/responses/"+fg.ID+"?stream=true", &e); status != 400 || !strings.Contains(e.Error.Message, "background=true") {
		t.Errorf("stream of a foreground response: %d %s", status, e.Error.Message)
	}
}

// TestBackgroundCancelInFlight: a cancel ends a running background
// response (cancelled, on the poll too), frees its slot, and a resumed
// stream of it ends.
func TestBackgroundCancelInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	r := runningBackground(t, h.client)
	c, err := h.client.Responses.Cancel(ctx, r.ID)
	if err != nil || c.Status != "cancelled" {
		t.Fatalf("cancel: %+v, %v", c, err)
	}
	if got := waitStatus(t, h.client, r.ID, "cancelled"); got.ID != r.ID {
		t.Fatal(got.ID)
	}
	evs := collect(t, h.client.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{}), 0)
	if len(evs) < 3 || evs[2].Type != "response.in_progress" {
		t.Errorf("events of the cancelled response: %d", len(evs))
	}
	wait.Until(t, "the slot back", func() bool { d, q := h.sh.Scheduler.Active(); return d+q == 0 })
	if again, err := h.client.Responses.Cancel(ctx, r.ID); err != nil || again.Status != "cancelled" {
		t.Errorf("second cancel: %+v, %v", again, err)
	}
}

// TestBackgroundStreamResumes: a streamed background create's events are
// read in part, the connection dropped, and the rest resumed after the
// last one seen, through to the terminal event; the response ran on
// meanwhile.
func TestBackgroundStreamResumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	p := slowBackground()
	p.MaxOutputTokens = openai.Int(6)
	s := h.client.Responses.NewStreaming(ctx, p, exact)
	var id string
	var last int64
	for s.Next() {
		ev := s.Current()
		id, last = ev.Response.ID, ev.SequenceNumber
		if ev.Type == "response.in_progress" {
			break
		}
	}
	s.Close()
	if id == "" || last != 2 {
		t.Fatalf("first events: id %q, last %d", id, last)
	}
	rest := collect(t, h.client.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{StartingAfter: param.NewOpt(last)}), last+1)
	if n := len(rest); n == 0 || rest[n-1].Type != "response.completed" {
		t.Fatalf("resumed stream ended without response.completed (%d events)", n)
	}
}

// TestBackgroundQueuedPerClient: past the engine's running bound a
// background response waits queued, a client's queued ones are capped
// (429), and a queued one cancelled ends at once, never run.
func TestBackgroundQueuedPerClient(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.BackgroundRunning, c.BackgroundQueued = 1, 1 })
	ctx := h.ctx()
	running := runningBackground(t, h.client)
	queued, err := h.client.Responses.New(ctx, slowBackground(), exact)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.client.Responses.New(ctx, slowBackground(), exact)
	if statusOf(t, err) != http.StatusTooManyRequests {
		t.Fatalf("a second queued response: %v, want 429", err)
	}
	if got, err := h.client.Responses.Get(ctx, queued.ID, responses.ResponseGetParams{}); err != nil || got.Status != "queued" {
		t.Fatalf("behind the running one: %+v, %v", got, err)
	}
	c, err := h.client.Responses.Cancel(ctx, queued.ID)
	if err != nil || c.Status != "cancelled" || c.Usage.TotalTokens != 0 {
		t.Fatalf("cancel of the queued one: %+v, %v", c, err)
	}
	if _, err := h.client.Responses.Cancel(ctx, running.ID); err != nil {
		t.Fatal(err)
	}
}

// TestBackgroundOnAnotherReplica: two replicas over one store: a
// background response running on one is polled, streamed and cancelled
// through the other.
func TestBackgroundOnAnotherReplica(t *testing.T) {
	t.Parallel()
	a := newHarness(t, func(c *enginetest.Config) { c.Replica = "replica-a" })
	b := newHarness(t, func(c *enginetest.Config) { c.Replica, c.DB = "replica-b", a.dbPath })
	ctx := a.ctx()
	r, err := a.client.Responses.New(ctx, slowBackground(), exact)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b.client, r.ID, "in_progress")
	// Replica b reads the events replica a keeps in the store, live.
	s := b.client.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{})
	for s.Next() {
		if s.Current().Type == "response.output_text.delta" {
			break
		}
	}
	s.Close()
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	c, err := b.client.Responses.Cancel(ctx, r.ID)
	if err != nil || c.Status != "cancelled" {
		t.Fatalf("cancel through the other replica: %+v, %v", c, err)
	}
	waitStatus(t, a.client, r.ID, "cancelled")
	wait.Until(t, "replica a's slot back", func() bool { d, q := a.sh.Scheduler.Active(); return d+q == 0 })
}

// TestBackgroundRefusedWithoutStore: background responses are kept, so
// store:false is refused as the create's 400.
func TestBackgroundRefusedWithoutStore(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := slowBackground()
	p.Store = openai.Bool(false)
	_, err := h.client.Responses.New(h.ctx(), p)
	var e *openai.Error
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Param != "store" || e.Code != api.CodeInvalidValue {
		t.Fatalf("background with store:false: %v", err)
	}
}

// TestDeleteARunningBackgroundResponse: a delete cancels a running
// background response first, so it never comes back stored.
func TestDeleteARunningBackgroundResponse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := h.ctx()
	r := runningBackground(t, h.client)
	if err := h.client.Responses.Delete(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the slot back", func() bool { d, q := h.sh.Scheduler.Active(); return d+q == 0 })
	if _, err := h.client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); statusOf(t, err) != 404 {
		t.Errorf("after the delete: %v, want 404", err)
	}
}
