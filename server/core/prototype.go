package core

import (
	"context"
	"strconv"
	"time"

	"agentloop/api"
	"agentloop/inference"
)

// The prototype: the seed's first design of WebSocket mode, the
// "long-running response" (docs/protocol.md, "The prototype"), served only on a connection
// whose upgrade carried the legacy beta value in OpenAI-Beta. A response
// pauses after a sampled function call with response.done (status
// in_progress, the output so far); the client's response.append carries the
// tool outputs, and sampling resumes in the same response as its next
// segment. Pre-inference work runs once per response plus incremental work
// per append; finalize runs once, at the end.

// maxPause bounds how long a paused response waits for response.append,
// besides the connection's lifetime.
const maxPause = 10 * time.Minute

// appendStages are the incremental pre-inference work of a resumed
// segment: only the appended items are decoded, checked, rendered onto the
// response's tokens and classified.
var appendStages = []Stage{
	{api.StageParse, api.Measured, (*Engine).parseAppend},
	{api.StageValidate, api.Measured, (*Engine).validateAppend},
	{api.StageRender, api.Measured, (*Engine).renderAppend},
	{api.StageSafety, api.Measured, (*Engine).classify},
	{api.StageStackClassify, api.Modelled, (*Engine).stackClassify},
}

// resume ends the segment that just sampled a function call (pause sends
// response.done), waits for the response.append that answers it, runs the
// incremental stages and asks the policy again over the grown context. It
// returns the next segment's job and when it became ready, or false when
// the response ends while paused (the stream records why).
func (e *Engine) resume(ctx context.Context, fl *Flight, st *streamer) (inference.Job, time.Time, bool) {
	if !e.pause(fl, st) {
		return inference.Job{}, time.Time{}, false
	}
	g := &fl.stream
	wait := min(e.cfg.WSLifetime, maxPause)
	if wait <= 0 {
		wait = maxPause
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	conn := fl.Via.Conn
	for {
		ent, why := conn.NextMessage(ctx, e.stopCtx, timer.C)
		switch why {
		case WaitGone:
			g.cancelled = true
			return inference.Job{}, time.Time{}, false
		case WaitStopped:
			g.stopped = true
			return inference.Job{}, time.Time{}, false
		case WaitExpired:
			g.expired = true
			return inference.Job{}, time.Time{}, false
		}
		if ent.Reply != nil {
			e.sh.Metrics.Rejected("websocket", e.cfg.Name, ent.Reply.Status)
			conn.SendError(ent.Reply)
			continue
		}
		spans, segment := len(fl.Trace.Spans), fl.Trace.segment
		fl.Trace.segment = segment + 1
		fl.body, ent.Body = ent.Body, nil
		carried := e.sh.Budget.carry(len(fl.body))
		aerr := e.runStages(ctx, fl, appendStages, ent.Started)
		carried()
		if aerr != nil {
			// A failed append changes nothing: the response stays paused.
			fl.Trace.Spans, fl.Trace.segment = fl.Trace.Spans[:spans], segment
			fl.body = nil
			if aerr == ErrProcessed {
				continue
			}
			if e.stopCtx.Err() != nil && ctx.Err() == nil {
				// Stopped during a modelled stage, after response.created:
				// the response ends with response.failed.
				g.stopped = true
				return inference.Job{}, time.Time{}, false
			}
			e.sh.Metrics.Rejected("websocket", e.cfg.Name, aerr.Status)
			conn.SendError(aerr)
			if ctx.Err() != nil {
				g.cancelled = true
				return inference.Job{}, time.Time{}, false
			}
			continue
		}
		fl.seg.input += fl.rendered.freshTokens
		ready := time.Now()
		g.items, g.total, g.truncated = e.plan(fl, e.sh.Policy.Respond(fl.policyRequest(e.sh.ToolTurns)))
		job := inference.Job{Profile: fl.resolved.model.profile, PrefillTokens: fl.rendered.freshTokens, OutputTokens: g.total,
			JitterSeed: jitterSeed(fl), Resumed: true, ReasoningTokens: g.reasoning()}
		return job, ready, true
	}
}

// parseAppend decodes a message sent while a response is paused: only
// response.append resumes it (response.processed is ignored).
func (e *Engine) parseAppend(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	res := StageResult{bytes: len(fl.body)}
	req, err := api.DecodeCreate(fl.body)
	if err != nil {
		return res, err
	}
	switch req.Type {
	case api.ClientResponseAppend:
	case api.ClientResponseProcessed:
		return res, ErrProcessed
	case "":
		return res, api.BadRequest("type", api.CodeMissingRequiredParameter, "Missing required parameter: 'type'.")
	default:
		return res, api.BadRequest("type", api.CodeInvalidValue,
			"A response is paused on this connection: send response.append with the outputs of its function calls (got '%s').", req.Type)
	}
	items, err := req.DecodeInput()
	res.items = len(items)
	if err != nil {
		return res, err
	}
	if len(items) == 0 {
		return res, api.BadRequest("input", api.CodeMissingRequiredParameter, "response.append needs 'input': the outputs of the paused response's function calls.")
	}
	fl.body = nil
	fl.parsed.items = items
	return res, nil
}

// validateAppend checks the appended items against the response's context
// and output so far (each function_call_output must answer a call), and
// appends them to the context.
func (e *Engine) validateAppend(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	res := StageResult{items: len(fl.parsed.items)}
	appended := len(fl.built.context)
	chain, err := e.admitItems(ctx, fl.built.context, fl.parsed.items)
	if err == nil {
		_, err = e.openCompactions(chain[appended:]) // opened, not pruned: the paused response's context stays
	}
	if err == nil {
		err = checkCallPairs(chain, appended)
	}
	if err != nil {
		return res, err
	}
	fl.built.appended, fl.built.context = appended, chain
	fl.parsed.items = nil
	return res, nil
}

// renderAppend renders the appended items onto the response's tokens.
func (e *Engine) renderAppend(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	before := len(fl.rendered.tokens)
	fl.rendered.fresh = fl.built.appended
	toks, hits, err := e.renderItems(ctx, fl.rendered.tokens, fl.parsed.partition, fl.built.context[fl.rendered.fresh:])
	if err != nil {
		// The response's tokens stay as they were: the append is dropped.
		return StageResult{items: len(fl.built.context) - fl.rendered.fresh}, clientGone()
	}
	fl.rendered.tokens = toks
	fl.rendered.freshTokens = len(fl.rendered.tokens) - before
	res := StageResult{items: len(fl.built.context) - fl.rendered.fresh, tokens: fl.rendered.freshTokens, note: "appended to the response's tokens"}
	if hits > 0 {
		res.addNote(strconv.Itoa(hits) + " token cache hits")
	}
	return res, nil
}

// pause ends a segment that sampled a function call: what it sampled joins
// the context and the response's tokens, and response.done sends the
// response so far, still in progress. It reports false, the response
// cancelled, when response.done could not be sent.
func (e *Engine) pause(fl *Flight, st *streamer) bool {
	g, resp := &fl.stream, fl.response
	output := g.keptOutput()
	if fl.Trace.segment == 0 {
		fl.seg.input = len(fl.rendered.tokens)
	}
	fl.seg.earlier = append(fl.seg.earlier, output...)
	fl.seg.sent += g.sent
	st.base += len(output)
	// What was sampled joins the context, as the model holds it.
	fl.built.context = append(fl.built.context, output...)
	// Sampled output is rendered whole, whatever the client does meanwhile.
	fl.rendered.tokens, _, _ = e.renderItems(context.Background(), fl.rendered.tokens, fl.parsed.partition, output)
	g.items, g.total, g.sent, g.cur, g.truncated = nil, 0, 0, 0, false
	st.lastDelta = time.Time{} // the pause is no inter-token gap

	// response.done: the response so far, still in progress.
	resp.Output = make([]api.Item, len(fl.seg.earlier))
	for i := range fl.seg.earlier {
		resp.Output[i] = fl.seg.earlier[i].Item
	}
	snapshot := api.MarshalResponse(resp)
	resp.Output = []api.Item{}
	st.buf = api.AppendResponseEvent(st.buf, api.EventDone, st.seq, snapshot)
	if err := st.emit(api.EventDone); err != nil || st.out.Flush() != nil {
		g.cancelled = true
		return false
	}
	return true
}
