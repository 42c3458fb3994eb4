package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"agentloop/api"
	"agentloop/store"
	"agentloop/workload"
)

// WorkloadScenario is the scenario name a race of a workload is stored
// and listed under.
const WorkloadScenario = "workload"

// replayTool is the one tool a replay offers; its description is the
// workload's tools size in filler, and every recorded call goes to it.
const replayTool = "replay"

func replayToolsJSON(w *workload.Workload) json.RawMessage {
	b, _ := json.Marshal([]map[string]any{{"type": "function", "name": replayTool,
		"description": workload.Text(w.ToolsTokens), "parameters": map[string]any{"type": "object"}, "strict": false}})
	return b
}

// replay plays the lane's workload turn by turn: each request adds the
// turn's recorded inputs as filler (tool outputs answer the previous
// response's calls in order) and carries the turn's reply as metadata, and
// the lane waits the recorded tool time (or the config's fixed one) before
// the next. It passes when every response holds the recorded calls.
func (l *laneRun) replay(ctx context.Context) error {
	w := l.wl
	req := Request{Tools: replayToolsJSON(w), Model: l.cfg.Model(), CacheKey: l.cacheKey, Seed: l.cfg.Seed, Reasoning: l.cfg.Reasoning,
		CompactThreshold: l.cfg.CompactThreshold}
	if w.InstructionsTokens > 0 {
		req.History = []json.RawMessage{messageItem("developer", workload.Text(w.InstructionsTokens))}
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	if err := l.open(ctx, req); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer func() { l.tr.Close() }() // a fallback may replace the transport
	if len(req.History) > 0 {
		if err := l.warmup(ctx, &req); err != nil {
			return err
		}
	}
	l.clock.give()
	var callIDs []string // the previous response's calls, answered in order
	for i := range w.Turns {
		if err := ctx.Err(); err != nil {
			return errStopped
		}
		if err := l.clock.take(ctx); err != nil {
			return err
		}
		t := &w.Turns[i]
		var items []json.RawMessage
		next := 0
		for _, in := range t.Input {
			switch in.Kind {
			case workload.KindToolOutput:
				item, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": callIDs[next], "output": workload.Text(in.Tokens)})
				items = append(items, item)
				next++
			default:
				items = append(items, messageItem("user", workload.Text(in.Tokens)))
			}
		}
		req.History = append(req.History, items...)
		switch {
		case req.Previous == "":
			req.New = req.History
		case i == 0:
			req.New = req.History[1:] // after the warm-up, which holds the developer message
		default:
			req.New = items
		}
		req.Reply = workload.ReplyOf(t).String()
		res, recs, first, err := l.attempt(ctx, &req, false)
		if err != nil {
			l.recordError(i, err)
			return fmt.Errorf("turn %d: %w", i, err)
		}
		l.recovered(res, recs, first)
		var calls []Call
		callIDs = callIDs[:0]
		compacted := false
		for _, it := range res.Response.Output {
			req.History = append(req.History, it.AppendJSON(nil))
			compacted = compacted || it.Type == api.TypeCompaction
			if it.Type == api.TypeFunctionCall {
				// Content is filler: the record keeps the call, not its text.
				calls = append(calls, Call{Name: it.Name, CallID: it.CallID})
				callIDs = append(callIDs, it.CallID)
			}
		}
		if compacted {
			req.History = pruneCompacted(req.History)
		}
		if len(calls) != len(t.Calls) {
			err := fmt.Errorf("turn %d: the engine answered with %d calls, the workload recorded %d (is %s honoured?)", i, len(calls), len(t.Calls), workload.ReplyKey)
			l.recordError(i, err)
			return err
		}
		var wait time.Duration
		if i+1 < len(w.Turns) {
			wait = time.Duration(t.ToolTimeMs * float64(time.Millisecond))
			if l.cfg.FixedToolTime {
				wait = l.cfg.ToolTime()
			}
			if wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return errStopped
				}
			}
		}
		l.record(i, res, calls, 0, wait, "")
		l.clock.give()
		req.Previous = res.Response.ID
	}
	return nil
}

// storeWorkload stores cfg's workload under its content's id, or refreshes
// the stored copy the run API read (workload_id), and drops it from cfg:
// the run names it by WorkloadID. A race loads it back when it runs
// (loadWorkload).
func (r *Runner) storeWorkload(ctx context.Context, cfg *Config) error {
	if cfg.Workload == nil {
		return nil
	}
	b, err := cfg.Workload.Canonical()
	if err != nil {
		return err
	}
	if cfg.WorkloadID == "" {
		cfg.WorkloadID = workload.ID(b)
	}
	if err := r.db.SaveWorkload(ctx, &store.Workload{ID: cfg.WorkloadID, CreatedAt: time.Now(), Source: cfg.Workload.Source,
		Turns: len(cfg.Workload.Turns), JSON: b}); err != nil {
		return err
	}
	cfg.Workload = nil
	return nil
}

// loadWorkload reads the workload a race replays, by its id.
func (r *Runner) loadWorkload(ctx context.Context, id string) (*workload.Workload, error) {
	sw, err := r.db.GetWorkload(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", id, err)
	}
	return workload.ParseStored(sw.JSON)
}
