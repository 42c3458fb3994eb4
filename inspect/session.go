package inspect

import (
	"strconv"
	"strings"

	"agentloop/api"
)

// Transports of a session, as traces name them.
const (
	TransportHTTP      = "http"
	TransportWebSocket = "websocket"
)

// Session is one client session: the JSON of /api/sessions.
type Session struct {
	ID string `json:"id"`
	// Key is the engine's session key: "ws:…", "http:key:…" or "http:conn:…".
	Key       string     `json:"key"`
	Transport string     `json:"transport"`
	Client    api.Client `json:"client"`
	// Race tags a session of the playground's own races, "RUN_ID/LANE"
	// (api.HeaderRace); "" for every other client.
	Race          string `json:"race,omitempty"`
	StartedUnixNS int64  `json:"started_unix_ns"`
	UpdatedUnixNS int64  `json:"updated_unix_ns"`
	// Live says the session has a connection open or a turn in flight, as
	// the engine reports them (server.Observer).
	Live bool `json:"live"`
	// Version grows with every turn the inspector records, so a page that
	// gets the same session twice keeps the newer copy.
	Version uint64  `json:"version"`
	Summary Summary `json:"summary"`
	// Turns are present in a session's detail, oldest first. TurnsOmitted
	// counts the oldest turns a live session no longer holds in memory.
	Turns        []Turn `json:"turns,omitempty"`
	TurnsOmitted int    `json:"turns_omitted,omitempty"`
}

// Turn is one request of a session: its trace with what the inspector
// reads from it.
type Turn struct {
	Index         int    `json:"index"`
	ResponseID    string `json:"response_id,omitempty"`
	StartedUnixNS int64  `json:"started_unix_ns"`
	Transport     string `json:"transport"`
	Engine        string `json:"engine"`
	Stack         string `json:"stack,omitempty"`
	Drill         string `json:"drill,omitempty"`
	Error         string `json:"error,omitempty"`
	Status        int    `json:"status,omitempty"`
	// DurationNS runs from the first byte to the end of the last span.
	DurationNS int64 `json:"duration_ns"`
	// OverheadNS is the API's own measured work (api.Trace.Overhead);
	// StackNS the modelled API stack's stages.
	OverheadNS   int64 `json:"overhead_ns"`
	StackNS      int64 `json:"stack_ns"`
	InputTokens  int   `json:"input_tokens"`
	CachedTokens int   `json:"cached_tokens"`
	OutputTokens int   `json:"output_tokens"`
	// BytesIn is the request body parsed, BytesOut the response object.
	BytesIn  int64         `json:"bytes_in"`
	BytesOut int64         `json:"bytes_out"`
	Cache    []CacheLookup `json:"cache,omitempty"`
	Spans    []api.Span    `json:"spans"`
	// Estimate is, for an HTTP turn, the same turn as a WebSocket
	// continuation (estimate.go).
	Estimate *TurnEstimate `json:"ws_estimate,omitempty"`
	// Shape is what a workload needs of the turn (workload.go): sizes,
	// never content.
	Shape *api.Shape `json:"shape,omitempty"`
}

// CacheLookup is one cache the engine consulted for a turn, read from the
// spans' notes and the usage.
type CacheLookup struct {
	// Cache is "model" (the resolved model), "state" (the previous
	// response), "tokens" (rendered tokens) or "prefix" (the accelerator's
	// KV cache).
	Cache string `json:"cache"`
	Hit   bool   `json:"hit"`
	Note  string `json:"note,omitempty"`
}

// Summary adds up a session's turns.
type Summary struct {
	Turns       int `json:"turns"`
	Errors      int `json:"errors"`
	Drills      int `json:"drills"`
	CacheHits   int `json:"cache_hits"`
	CacheMisses int `json:"cache_misses"`
	// StateDrops counts the continuations that found their previous
	// response dropped by the engine's state budget (--state-bytes).
	StateDrops   int   `json:"state_drops,omitempty"`
	InputTokens  int64 `json:"input_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	BytesIn      int64 `json:"bytes_in"`
	BytesOut     int64 `json:"bytes_out"`
	// OverheadNS is the total API overhead; StackNS the modelled stack.
	OverheadNS int64 `json:"overhead_ns"`
	StackNS    int64 `json:"stack_ns"`
	// Estimate is present for an HTTP session.
	Estimate *Estimate `json:"ws_estimate,omitempty"`
}

// turnOf reads a turn from a trace.
func turnOf(t *api.Trace, index int) Turn {
	tu := Turn{Index: index, ResponseID: t.ResponseID, StartedUnixNS: t.StartedUnixNS, Transport: t.Transport,
		Engine: t.Engine, Stack: t.Stack, Drill: t.Drill, Error: t.Error, Status: t.Status,
		OverheadNS: t.Overhead().Nanoseconds(), Spans: t.Spans, Shape: t.Shape}
	for _, s := range t.Spans {
		tu.DurationNS = max(tu.DurationNS, s.StartNS+s.DurationNS)
		if api.SpanGroup(s.Name) == api.GroupAPIStack {
			tu.StackNS += s.DurationNS
		}
	}
	if s, ok := t.Span(api.StageParse); ok {
		tu.BytesIn = s.Bytes
	}
	if s, ok := t.Span(api.StageFinalize); ok {
		tu.BytesOut = s.Bytes
	}
	if u := t.Usage; u != nil {
		tu.InputTokens, tu.CachedTokens, tu.OutputTokens = u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens
	}
	tu.Cache = cacheLookups(t)
	return tu
}

// noteStateDropped is the load span's note on a continuation whose
// previous response the engine's state budget had dropped
// (server/core/pipeline.go, NoteStateDropped); stateDroppedNote is the
// lookup's note the inspector shows.
const (
	noteStateDropped = "connection state dropped by the state budget"
	stateDroppedNote = "dropped by the engine's state budget (--state-bytes)"
)

// cacheLookups reads which caches served a turn from the notes the
// pipeline's stages leave on their spans (server/core/pipeline.go).
func cacheLookups(t *api.Trace) []CacheLookup {
	var out []CacheLookup
	if s, ok := t.Span(api.StageResolve); ok {
		switch s.Note {
		case "connection cache", "config cache":
			out = append(out, CacheLookup{Cache: "model", Hit: true, Note: s.Note})
		default:
			out = append(out, CacheLookup{Cache: "model", Note: "resolved anew"})
		}
	}
	if s, ok := t.Span(api.StageLoad); ok {
		if strings.HasPrefix(s.Note, noteStateDropped) {
			out = append(out, CacheLookup{Cache: "state", Note: stateDroppedNote})
		}
		switch strings.TrimPrefix(strings.TrimPrefix(s.Note, noteStateDropped), "; ") {
		case "connection cache":
			out = append(out, CacheLookup{Cache: "state", Hit: true, Note: s.Note})
		case "store":
			out = append(out, CacheLookup{Cache: "state", Note: "loaded from the store"})
		}
	}
	if s, ok := t.Span(api.StageRender); ok {
		hits := tokenCacheHits(s.Note)
		switch {
		case strings.Contains(s.Note, "appended to cached tokens"):
			out = append(out, CacheLookup{Cache: "tokens", Hit: true, Note: "appended to the connection's tokens"})
		case hits > 0:
			out = append(out, CacheLookup{Cache: "tokens", Hit: true, Note: strconv.Itoa(hits) + " of " + strconv.FormatInt(s.Items, 10) + " items from the token cache"})
		case s.Items > 0:
			out = append(out, CacheLookup{Cache: "tokens", Note: "whole context rendered"})
		}
	}
	if u := t.Usage; u != nil && u.InputTokens > 0 {
		c := u.InputTokensDetails.CachedTokens
		out = append(out, CacheLookup{Cache: "prefix", Hit: c > 0,
			Note: strconv.Itoa(c) + " of " + strconv.Itoa(u.InputTokens) + " input tokens cached"})
	}
	return out
}

// tokenCacheHits reads "N token cache hits" from a render note.
func tokenCacheHits(note string) int {
	for part := range strings.SplitSeq(note, "; ") {
		if n, ok := strings.CutSuffix(part, " token cache hits"); ok {
			if v, err := strconv.Atoi(n); err == nil {
				return v
			}
		}
	}
	return 0
}

// add counts a turn into the summary.
func (s *Summary) add(t *Turn, http bool) {
	s.Turns++
	if t.Error != "" {
		s.Errors++
	}
	if t.Drill != "" {
		s.Drills++
	}
	for _, c := range t.Cache {
		if c.Note == stateDroppedNote {
			s.StateDrops++
		}
		if c.Hit {
			s.CacheHits++
		} else {
			s.CacheMisses++
		}
	}
	s.InputTokens += int64(t.InputTokens)
	s.CachedTokens += int64(t.CachedTokens)
	s.OutputTokens += int64(t.OutputTokens)
	s.BytesIn += t.BytesIn
	s.BytesOut += t.BytesOut
	s.OverheadNS += t.OverheadNS
	s.StackNS += t.StackNS
	if http {
		if s.Estimate == nil {
			s.Estimate = newEstimate()
		}
		s.Estimate.add(t)
	}
}

// Summarize adds up turns; http says the session is an HTTP one, which
// gets the WebSocket estimate.
func Summarize(turns []Turn, http bool) Summary {
	var s Summary
	for i := range turns {
		s.add(&turns[i], http)
	}
	return s
}
