package server_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/bench"
	"agentloop/server"
	"agentloop/server/core"
	"agentloop/server/enginetest"
	"agentloop/workload"
)

// longSession is what one long WebSocket session measured: each
// continuation's pre-inference time and the memory of the state the
// connection cache kept after it, by the session's tokens sent so far.
type longSession struct {
	turns []sessionTurn
}

type sessionTurn struct {
	sent         int // tokens of new input the session has sent, this turn's included
	inputTokens  int // the turn's prompt (usage.input_tokens)
	preInference time.Duration
	compacted    bool // the turn compacted its context
	stateBytes   int  // what the connection cache keeps after the turn
}

// keptStates records, per response id, the bytes of the state it kept.
type keptStates struct {
	mu    sync.Mutex
	bytes map[string]int
}

func (k *keptStates) hook(es server.Engines) {
	es.V1.OnFinished(func(fl *core.Flight) {
		if s := fl.Kept(); s != nil {
			k.mu.Lock()
			k.bytes[s.ID()] = s.Bytes()
			k.mu.Unlock()
		}
	})
}

func (k *keptStates) of(id string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.bytes[id]
}

// runLongSession plays one WebSocket session (store:false, modelled costs
// off) that answers a required tool call each turn with a tool output of
// step tokens until it has sent total tokens, asking for compaction at
// compactAt tokens (0: never). window is every model's context window.
func runLongSession(tb testing.TB, window, compactAt, step, total int) longSession {
	tb.Helper()
	kept := &keptStates{bytes: map[string]int{}}
	h := newHarness(tb, func(c *enginetest.Config) {
		c.Unmodelled, c.ContextWindow, c.BeforeServing = true, window, kept.hook
	})
	c := h.rawWS("/v1/responses")
	base := map[string]any{"type": "response.create", "model": "spark", "store": false, "max_output_tokens": 16, "tool_choice": "required",
		"tools": []map[string]any{{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}}}
	if compactAt > 0 {
		base["context_management"] = []map[string]any{{"type": api.ContextManagementCompaction, "compact_threshold": compactAt}}
	}
	input := []map[string]any{{"role": "developer", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the failing test."}}
	var s longSession
	prev, sent := "", 0
	for sent < total {
		body := map[string]any{"input": input}
		for k, v := range base {
			body[k] = v
		}
		if prev != "" {
			body["previous_response_id"] = prev
		}
		b, _ := json.Marshal(body)
		send(tb, c, string(b))
		evs := readResponse(tb, c)
		resp := evs[len(evs)-1].Response
		if resp == nil || resp.Status != "completed" {
			tb.Fatalf("after %d tokens: %s", sent, evs[len(evs)-1].Raw)
		}
		tr, ok := h.sh.Traces.Get(resp.ID)
		if !ok {
			tb.Fatal("no trace")
		}
		_, compacted := tr.Span(api.StageCompaction)
		s.turns = append(s.turns, sessionTurn{sent: sent, inputTokens: resp.Usage.InputTokens, preInference: tr.PreInference(),
			compacted: compacted, stateBytes: kept.of(resp.ID)})
		prev = resp.ID
		input = input[:0]
		for _, it := range resp.Output {
			if it.Type == api.TypeFunctionCall {
				input = append(input, map[string]any{"type": "function_call_output", "call_id": it.CallID, "output": workload.Text(step)})
				sent += step
			}
		}
		if len(input) == 0 {
			tb.Fatalf("no call to answer after %d tokens", sent)
		}
	}
	return s
}

// The connection cache holds the compacted state: after a compaction it
// keeps a small fraction of what it held just before.
func TestCompactionShrinksTheConnectionCache(t *testing.T) {
	t.Parallel()
	s := runLongSession(t, 0, 20_000, 2000, 40_000)
	var before, after int
	for i, turn := range s.turns {
		if turn.compacted && i > 0 {
			before, after = s.turns[i-1].stateBytes, turn.stateBytes
			break
		}
	}
	if before == 0 || after == 0 || after*4 > before {
		t.Fatalf("the connection cache held %d bytes before the compaction and %d after", before, after)
	}
}

// BenchmarkCompactedWebSocketSession: a 300k-token WebSocket session that
// compacts at 100k tokens, against the same session uncompacted in a
// 400k-token window. It reports the median pre-inference time of the
// continuations in each 100k band (compacting turns apart) and the
// connection cache's memory at the session's end, and logs the table of
// docs/protocol.md, "Compaction":
//
//	go test -run '^$' -bench CompactedWebSocketSession -benchtime 1x -v ./server/
func BenchmarkCompactedWebSocketSession(b *testing.B) {
	for b.Loop() {
		for _, c := range []struct {
			name      string
			window    int
			compactAt int
		}{{"compacted", 128_000, 100_000}, {"whole", 400_000, 0}} {
			s := runLongSession(b, c.window, c.compactAt, 2000, 300_000)
			bands := map[int][]time.Duration{}
			var compactions []time.Duration
			for i, turn := range s.turns[1:] { // the first request is not a continuation
				if turn.compacted {
					compactions = append(compactions, turn.preInference)
					b.Logf("%-9s compaction at %dk tokens sent: prompt %d → %d tokens, connection cache %d → %d bytes", c.name, turn.sent/1000,
						s.turns[i].inputTokens, turn.inputTokens, s.turns[i].stateBytes, turn.stateBytes)
					continue
				}
				bands[turn.sent/100_000] = append(bands[turn.sent/100_000], turn.preInference)
			}
			last := s.turns[len(s.turns)-1]
			for band := 0; band < 3; band++ {
				m := bench.Median(bands[band])
				b.ReportMetric(float64(m.Microseconds()), fmt.Sprintf("µs-%s-%dk-%dk", c.name, band*100, band*100+100))
				b.Logf("%-9s continuation pre-inference, %3dk–%3dk tokens sent: median %v (%d turns)", c.name, band*100, band*100+100, m, len(bands[band]))
			}
			if len(compactions) > 0 {
				b.Logf("%-9s compacting turns: %d, median pre-inference %v", c.name, len(compactions), bench.Median(compactions))
			}
			b.ReportMetric(float64(last.stateBytes), "cache-bytes-"+c.name)
			b.Logf("%-9s at the end (%d tokens sent): prompt %d tokens, connection cache %d bytes", c.name, last.sent, last.inputTokens, last.stateBytes)
		}
	}
}
