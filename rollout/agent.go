package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"agentloop/api"
	"agentloop/scenario"
	"agentloop/workload"
)

// maxTurns bounds a rollout whose plan never finishes.
const maxTurns = 60

// laneRun is one lane of one repeat: the agent loop.
type laneRun struct {
	lane     string
	repeat   int
	sc       *scenario.Scenario
	wl       *workload.Workload // when set, the lane replays it instead of sc
	cfg      Config
	cacheKey string
	tr       Transport
	// clock is the lane's own clock: it waits for its turn before each
	// step when the lanes take turns (turns.go).
	clock *laneClock
	// onTurn is called after each turn (for the live view and the store).
	onTurn func(Turn)

	turns []Turn
	// pending are recoveries made before a turn was sent (a refused
	// upgrade at the start); the next turn carries them.
	pending      []Recovery
	pendingSince time.Time
	recoveries   []Recovery // the turn being recorded's
}

// open opens the transport; a WebSocket whose upgrade is refused falls
// back to HTTP, and the first turn records that recovery.
func (l *laneRun) open(ctx context.Context, req Request) error {
	start := time.Now()
	err := l.tr.Open(ctx, req)
	if err == nil || !errors.Is(err, errUpgradeRefused) {
		return err
	}
	rec, _, _ := recoveryFor(err, 1)
	l.fallBack()
	rec.DurationNS = time.Since(start).Nanoseconds()
	l.pending, l.pendingSince = append(l.pending, rec), start
	return l.tr.Open(ctx, req)
}

// recovered moves a turn's start back to its first attempt (or to a
// recovery made before it) and keeps its recoveries for record.
func (l *laneRun) recovered(res *Result, recs []Recovery, first time.Time) {
	if len(l.pending) > 0 {
		recs = append(l.pending, recs...)
		first, l.pending = l.pendingSince, nil
	}
	l.recoveries = recs
	if len(recs) > 0 {
		res.Sent = first
	}
}

func messageItem(role, text string) json.RawMessage {
	typ := "input_text"
	if role == "assistant" {
		typ = "output_text"
	}
	b, _ := json.Marshal(map[string]any{"type": "message", "role": role, "content": []map[string]string{{"type": typ, "text": text}}})
	return b
}

func toolsJSON(sc *scenario.Scenario) json.RawMessage {
	tools := make([]map[string]any, len(sc.Tools))
	for i, t := range sc.Tools {
		tools[i] = map[string]any{"type": "function", "name": t.Name, "description": t.Description, "parameters": t.Parameters, "strict": false}
	}
	b, _ := json.Marshal(tools)
	return b
}

// warmup is Codex's flow on a WebSocket: warm up with the developer
// message (the history's first item), then send the rest as a
// continuation. Other transports skip it.
func (l *laneRun) warmup(ctx context.Context, req *Request) error {
	if _, ok := l.tr.(*wsTransport); !ok {
		return nil
	}
	warm := *req
	warm.History = req.History[:1]
	warm.Reply = ""
	res, recs, first, err := l.attempt(ctx, &warm, true)
	if err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	if res != nil { // nil: the lane fell back to HTTP, where a warm-up means nothing
		req.Previous = res.Response.ID
		req.New = req.History[1:]
		l.recovered(res, recs, first)
		l.record(-1, res, nil, 0, 0, "")
	} else {
		if len(l.pending) == 0 {
			l.pendingSince = first
		}
		l.pending = append(l.pending, recs...)
	}
	return nil
}

// begin starts the lane's own clock and waits for its first step: opening
// the transport and the warm-up.
func (l *laneRun) begin(ctx context.Context) error {
	if l.clock == nil {
		l.clock = freeClock()
	}
	l.clock.begin()
	return l.clock.take(ctx)
}

// run drives the scenario to its end and checks success.
func (l *laneRun) run(ctx context.Context) error {
	if l.wl != nil {
		return l.replay(ctx)
	}
	ws := l.sc.NewWorkspace()
	req := Request{Tools: toolsJSON(l.sc), Model: l.cfg.Model(), CacheKey: l.cacheKey, Seed: l.cfg.Seed, Reasoning: l.cfg.Reasoning}
	developer := messageItem("developer", l.sc.DeveloperMessage(l.cfg.Seed))
	task := messageItem("user", l.sc.Task)
	req.History = []json.RawMessage{developer, task}
	req.New = req.History
	if err := l.begin(ctx); err != nil {
		return err
	}
	if err := l.open(ctx, req); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer func() { l.tr.Close() }() // a fallback may replace the transport
	if err := l.warmup(ctx, &req); err != nil {
		return err
	}
	l.clock.give()
	for turn := 0; turn < maxTurns; turn++ {
		if err := ctx.Err(); err != nil {
			return errStopped
		}
		if err := l.clock.take(ctx); err != nil {
			return err
		}
		res, recs, first, err := l.attempt(ctx, &req, false)
		if err != nil {
			l.recordError(turn, err)
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		l.recovered(res, recs, first)
		var calls []Call
		var text string
		var newItems []json.RawMessage
		for _, it := range res.Response.Output {
			raw := it.AppendJSON(nil)
			req.History = append(req.History, raw)
			switch it.Type {
			case api.TypeFunctionCall:
				calls = append(calls, Call{Name: it.Name, Arguments: it.Arguments, CallID: it.CallID})
			case api.TypeMessage:
				text += it.Text()
			}
		}
		// The tools run here, for real, on the workspace.
		toolStart := time.Now()
		for i := range calls {
			out, err := ws.Call(calls[i].Name, calls[i].Arguments)
			if err != nil {
				out = "error: " + err.Error()
			}
			calls[i].Output = out
			item, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": calls[i].CallID, "output": out})
			newItems = append(newItems, item)
		}
		measuredTool := time.Since(toolStart)
		if len(calls) > 0 && l.cfg.ToolTime() > 0 {
			select {
			case <-time.After(l.cfg.ToolTime()):
			case <-ctx.Done():
				return errStopped
			}
		}
		var modelledTool time.Duration
		if len(calls) > 0 {
			modelledTool = l.cfg.ToolTime()
		}
		l.record(turn, res, calls, measuredTool, modelledTool, text)
		l.clock.give()
		if len(calls) == 0 {
			break
		}
		req.History = append(req.History, newItems...)
		req.New = newItems
		req.Previous = res.Response.ID
	}
	if err := l.sc.Check(ws); err != nil {
		return fmt.Errorf("success check: %w", err)
	}
	return nil
}

// record keeps a turn: measuredTool is the client's own tool work after
// it, modelledTool the time it then waited (--tool-time, or a workload's
// recorded tool time).
func (l *laneRun) record(index int, res *Result, calls []Call, measuredTool, modelledTool time.Duration, text string) {
	off := l.clock.offset // the lane's own clock: its waits for its turn left out
	t := Turn{Lane: l.lane, Repeat: l.repeat, Index: index, ResponseID: res.Response.ID,
		SentNS: off(res.Sent), FirstEventNS: off(res.FirstEvent), FirstTokenNS: off(res.FirstToken), LastTokenNS: off(res.LastToken),
		DoneNS: off(res.Done), SentUnixNS: res.Sent.UnixNano(), BytesSent: res.BytesSent, BytesReceived: res.BytesRecv,
		Calls: calls, Text: text}
	if len(calls) > 0 || modelledTool > 0 {
		t.ToolNS = (measuredTool + modelledTool).Nanoseconds()
		t.Stages = append(t.Stages, StageTime{Name: StageTool, DurationNS: measuredTool.Nanoseconds(), Kind: "measured"})
		if modelledTool > 0 {
			t.Stages = append(t.Stages, StageTime{Name: StageTool, DurationNS: modelledTool.Nanoseconds(), Kind: "modelled"})
		}
	}
	if res.NewConn {
		t.ConnectNS = l.cfg.RTT().Nanoseconds()
	}
	t.Recoveries, l.recoveries = l.recoveries, nil
	for _, r := range t.Recoveries {
		t.RecoveryNS += r.DurationNS
		if r.Drill != "" && !slices.Contains(t.Drills, r.Drill) {
			t.Drills = append(t.Drills, r.Drill)
		}
	}
	if u := res.Response.Usage; u != nil {
		t.InputTokens, t.CachedTokens, t.OutputTokens = u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens
		t.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
	}
	l.turns = append(l.turns, t)
	if l.onTurn != nil {
		l.onTurn(t)
	}
}

func (l *laneRun) recordError(index int, err error) {
	t := Turn{Lane: l.lane, Repeat: l.repeat, Index: index, Error: err.Error(), SentNS: l.clock.own(time.Now()).Nanoseconds()}
	l.turns = append(l.turns, t)
	if l.onTurn != nil {
		l.onTurn(t)
	}
}
