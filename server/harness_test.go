package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/server"
	"agentloop/server/enginetest"
	"agentloop/store/sqlite"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// harness is the engine under test (both engines, a real socket, a real
// SQLite file), started by enginetest, with handles on the engine's parts.
type harness struct {
	t        testing.TB
	url      string
	db       *sqlite.DB
	dbPath   string
	sh       *server.Shared
	v1       *server.Engine
	baseline *server.Engine
	client   openai.Client
}

func newHarness(t testing.TB, tweak ...func(*enginetest.Config)) *harness {
	t.Helper()
	es := enginetest.Start(t, tweak...)
	return &harness{t: t, url: es.URL, db: es.DB, dbPath: es.Path, sh: es.Shared, v1: es.V1, baseline: es.Baseline,
		client: openai.NewClient(option.WithBaseURL(es.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))}
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// post sends a raw body and returns the status and body.
func (h *harness) post(path, body string) (int, []byte) {
	h.t.Helper()
	resp, err := http.Post(h.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// sseEvents posts a streaming body and returns the decoded events.
func (h *harness) sseEvents(path, body string) []*api.Event {
	h.t.Helper()
	resp, err := http.Post(h.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	raw, _ := io.ReadAll(resp.Body)
	var evs []*api.Event
	for _, block := range bytes.Split(raw, []byte("\n\n")) {
		if len(bytes.TrimSpace(block)) == 0 {
			continue
		}
		lines := bytes.SplitN(block, []byte("\n"), 2)
		if len(lines) != 2 || !bytes.HasPrefix(lines[0], []byte("event: ")) || !bytes.HasPrefix(lines[1], []byte("data: ")) {
			h.t.Fatalf("bad SSE framing: %q", block)
		}
		ev, err := api.DecodeEvent(bytes.TrimPrefix(lines[1], []byte("data: ")))
		if err != nil {
			h.t.Fatalf("bad event JSON %q: %v", lines[1], err)
		}
		if string(bytes.TrimPrefix(lines[0], []byte("event: "))) != ev.Type {
			h.t.Fatalf("event line %q does not match type %q", lines[0], ev.Type)
		}
		evs = append(evs, ev)
	}
	return evs
}

func decodeError(t *testing.T, b []byte) api.WireError {
	t.Helper()
	var env struct {
		Error *api.WireError `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Error == nil {
		t.Fatalf("not an OpenAI error envelope: %s", b)
	}
	return *env.Error
}

// checkGrammar asserts the event grammar (docs/protocol.md, "Events and
// their order") on one response's events.
func checkGrammar(t *testing.T, evs []*api.Event) {
	t.Helper()
	if len(evs) < 3 {
		t.Fatalf("only %d events", len(evs))
	}
	second := api.EventInProgress
	if evs[0].Response != nil && evs[0].Response.Background {
		second = api.EventQueued // then in_progress, once it runs
	}
	if evs[0].Type != api.EventCreated || evs[1].Type != second {
		t.Fatalf("stream starts with %s, %s", evs[0].Type, evs[1].Type)
	}
	id := evs[0].Response.ID
	opened := map[string]bool{}
	texts := map[string]string{}
	for i, ev := range evs {
		if ev.SequenceNumber != i {
			t.Fatalf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
		}
		if ev.Response != nil && ev.Response.ID != id {
			t.Fatalf("response id changed from %s to %s", id, ev.Response.ID)
		}
		switch ev.Type {
		case api.EventOutputItemAdded:
			var it api.Item
			if err := json.Unmarshal(ev.Item, &it); err != nil || it.ID == "" {
				t.Fatalf("added item without id: %s", ev.Item)
			}
			opened[it.ID] = true
		case api.EventOutputTextDelta, api.EventArgumentsDelta, api.EventCustomToolCallInputDelta:
			if !opened[ev.ItemID] {
				t.Fatalf("delta for unopened item %s", ev.ItemID)
			}
			texts[ev.ItemID] += ev.Delta
		case api.EventOutputTextDone:
			if texts[ev.ItemID] != ev.Text {
				t.Fatalf("deltas %q != done text %q", texts[ev.ItemID], ev.Text)
			}
		case api.EventArgumentsDone:
			if texts[ev.ItemID] != ev.Arguments {
				t.Fatalf("deltas %q != done arguments %q", texts[ev.ItemID], ev.Arguments)
			}
		case api.EventCustomToolCallInputDone:
			if texts[ev.ItemID] != ev.Input {
				t.Fatalf("deltas %q != done input %q", texts[ev.ItemID], ev.Input)
			}
		}
		if api.IsTerminal(ev.Type) != (i == len(evs)-1) {
			t.Fatalf("terminal event %s at %d of %d", ev.Type, i, len(evs))
		}
	}
}
