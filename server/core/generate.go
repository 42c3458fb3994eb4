package core

import (
	"context"
	"time"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/store"
)

// postInference are the stages after the scheduler, in order: they settle
// and bill the response however its generation ended.
var postInference = []Stage{
	{api.StageFinalize, api.Measured, (*Engine).finalize},
	{api.StageStackBilling, api.Modelled, (*Engine).stackBilling},
}

// generate runs queue, prefill and generate, streams the events to out and
// finalizes. It returns the final state for the connection cache.
func (e *Engine) Generate(ctx context.Context, fl *Flight, out Sink) Outcome {
	t := fl.Trace
	req := fl.parsed.req
	resp := fl.newResponse()
	fl.response = resp
	t.ResponseID = resp.ID
	ctx = outlive(ctx, out)
	out = e.wrapSink(ctx, fl, out)

	running := e.sh.Metrics.generating(t.Transport)
	running.Inc()
	defer running.Dec()
	_, quiet := out.(Discard)
	st := &streamer{out: out, quiet: quiet, buf: make([]byte, 0, 512), gapBounds: e.sh.Metrics.itl.bounds}
	fl.queued.resume(st)
	e.wireSteering(fl, st)
	writeErr := st.begin(resp)
	writeErr = st.compacted(fl.managed.compaction, writeErr)

	// The model decides, then the accelerator paces it.
	ready := time.Now()
	g := &fl.stream
	if req.Generates() {
		g.items, g.total, g.truncated = e.plan(fl, e.sh.Policy.Respond(fl.policyRequest(e.sh.ToolTurns)))
	}
	g.matched = e.sh.Prefix.Match(fl.parsed.partition, fl.rendered.tokens)
	e.sh.Metrics.prefixLookup(len(fl.rendered.tokens), g.matched)
	job := inference.Job{Profile: fl.resolved.model.profile, PrefillTokens: len(fl.rendered.tokens) - g.matched, OutputTokens: g.total,
		JitterSeed: jitterSeed(fl), ReasoningTokens: g.reasoning()}
	var gen *inference.Generation
	var first inference.GenerationTimings
	// One segment, or on a prototype connection one per function call:
	// the response pauses after the call and resumes with the appended
	// outputs (prototype.go).
	for {
		job.Hold = fl.Via.Prototype && g.pauses()
		if fl.seg.held != nil {
			gen = e.sh.Scheduler.Resume(fl.seg.held, job)
		} else {
			gen = e.sh.Scheduler.Submit(job)
		}
		st.items, st.cur, st.piece, st.sent, st.opened = g.items, 0, 0, 0, false
		cancelled, stopped, err := e.pace(ctx, gen, st, writeErr)
		writeErr, g.steered = handedOver(err)
		g.cancelled, g.stopped = cancelled || writeErr != nil, stopped
		g.sent, g.cur, g.reasoned = st.sent, st.cur, st.reasoned
		tm := gen.Timings()
		if fl.Trace.segment == 0 {
			first = tm
		}
		e.recordModelled(t, ready, tm, job)
		if !job.Hold || g.cancelled || g.stopped {
			break
		}
		fl.seg.held = gen
		var ok bool
		if job, ready, ok = e.resume(ctx, fl, st); !ok {
			break
		}
	}
	// However the response ended (completed, cut short, or while paused:
	// gone, stopped, expired, or a failed resume), a slot it still keeps
	// comes back. On a generation that kept none this does nothing.
	gen.Release()

	// Finalize reports a failure in the outcome, never as an error.
	_ = e.runStages(ctx, fl, e.post, time.Now())
	res := fl.outcome
	afterTerminal := e.endSteering(fl, st, res)
	e.sh.Traces.Add(&t.Trace)
	for _, f := range e.finished {
		f(fl)
	}
	if fl.Trace.segment > 0 {
		first.LastToken = time.Time{} // no per-token time across pauses
	}
	e.sh.Metrics.observe(t, first, fl.seg.sent+st.sent, resp.Status)
	e.sh.Metrics.itl.merge(t.Transport, &st.gaps)

	if res.Terminal != "" && !quiet {
		st.buf = api.AppendResponseEvent(st.buf, res.Terminal, st.seq, res.Snapshot)
		if err := st.emit(res.Terminal); err == nil {
			_ = out.Flush()
		}
	}
	afterTerminal()
	return res
}

// pace streams the generation's tokens as they are released, unless
// writeErr already ended the stream. It waits on the generation alone, a
// one-channel receive per wake-up: the client going away or the engine
// stopping cancels the generation, which wakes it.
func (e *Engine) pace(ctx context.Context, gen *inference.Generation, st *streamer, writeErr error) (cancelled, stopped bool, _ error) {
	stopOnGone := context.AfterFunc(ctx, gen.Cancel)
	stopOnStop := context.AfterFunc(e.stopCtx, gen.Cancel)
	for writeErr == nil && !(gen.Done() && st.sent >= gen.Released()) {
		<-gen.Ready()
		if cancelled, stopped = e.cutShort(ctx, gen); cancelled || stopped {
			break
		}
		// Everything released since the last wake-up goes out now, as one
		// delta per item, then one flush.
		seq := st.seq
		writeErr = st.advance(gen.Released())
		if writeErr == nil {
			writeErr = st.acknowledge()
		}
		if writeErr == nil && st.seq != seq {
			writeErr = st.out.Flush()
		}
	}
	stopOnGone()
	stopOnStop()
	if writeErr == nil && !cancelled && !stopped {
		// Ended while the last wake-up was writing, with nothing more
		// released: the loop saw it done, but it may not have completed.
		cancelled, stopped = e.cutShort(ctx, gen)
	}
	if cancelled || stopped || writeErr != nil {
		gen.Cancel()
	}
	return cancelled, stopped, writeErr
}

// cutShort says whether gen ended before releasing all its tokens because
// its client went away (cancelled) or because the engine is stopping.
func (e *Engine) cutShort(ctx context.Context, gen *inference.Generation) (cancelled, stopped bool) {
	if !gen.Cancelled() {
		return false, false
	}
	cancelled = ctx.Err() != nil
	return cancelled, !cancelled && e.stopCtx.Err() != nil
}

// finalize settles the response from how its stream ended, keeps what a
// continuation needs, and stores the response (store:true) and its ledger
// row before the terminal event goes out.
func (e *Engine) finalize(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	g, resp := &fl.stream, fl.response
	output := g.keptOutput()
	resp.Output = make([]api.Item, 0, len(fl.seg.earlier)+len(output))
	for _, items := range [][]ctxItem{fl.managed.output(), fl.seg.earlier, output} {
		for i := range items {
			resp.Output = append(resp.Output, items[i].Item)
		}
	}
	usage := &api.Usage{InputTokens: len(fl.rendered.tokens), OutputTokens: fl.seg.sent + g.sent}
	if fl.Trace.segment > 0 {
		usage.InputTokens = fl.seg.input // every segment's prefilled prompt, not its output again
	}
	usage.InputTokensDetails.CachedTokens = inference.BillableCached(g.matched)
	usage.OutputTokensDetails.ReasoningTokens = g.reasoned
	usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	resp.Usage = usage
	counts := *usage
	fl.Trace.Usage = &counts
	fl.Trace.Shape = fl.shape()
	terminal, failure := settle(resp, g)

	state, outTokens := e.continuation(fl, output)
	kept := terminal == api.EventCompleted || terminal == api.EventIncomplete
	if kept {
		e.sh.Prefix.Insert(fl.parsed.partition, state.tokens)
	}
	snapshot := api.MarshalResponse(resp)
	err := e.save(ctx, fl, state, snapshot, kept)
	if err == nil && kept {
		err = e.appendToConversation(ctx, fl, output)
	}
	if err != nil {
		failure = fail(resp, api.StoreError(err, "The response could not be stored").Message)
		terminal = api.EventFailed
		snapshot = api.MarshalResponse(resp)
		kept = false
	}
	fl.outcome = Outcome{Response: resp, Snapshot: snapshot, Err: failure, Terminal: terminal}
	if kept {
		fl.outcome.State = state
	}
	return StageResult{items: len(output), tokens: outTokens, bytes: len(snapshot)}, nil
}

// settle sets the response's status from how its stream ended. It returns
// the terminal event ("" when cancelled) and, when failed, the error.
func settle(resp *api.Response, g *streamed) (string, *api.Error) {
	switch {
	case g.cancelled:
		resp.Status = "cancelled"
		return "", nil
	case g.stopped:
		return api.EventFailed, fail(resp, "The server is shutting down; the response was cut short.")
	case g.expired:
		return api.EventFailed, fail(resp, "The response was paused longer than allowed waiting for response.append.")
	case g.steered:
		resp.Status = "incomplete"
		resp.IncompleteDetails = &api.IncompleteDetails{Reason: api.IncompleteSteered}
		return api.EventIncomplete, nil
	case g.truncated:
		resp.Status = "incomplete"
		resp.IncompleteDetails = &api.IncompleteDetails{Reason: "max_output_tokens"}
		return api.EventIncomplete, nil
	}
	now := time.Now().Unix()
	resp.Status = "completed"
	resp.CompletedAt = &now
	return api.EventCompleted, nil
}

// fail marks the response failed with a server error, and returns the
// error a non-streaming caller gets.
func fail(resp *api.Response, msg string) *api.Error {
	resp.Status = "failed"
	resp.Error = &api.ResponseError{Code: api.CodeServerError, Message: msg}
	resp.CompletedAt = nil
	return api.Errorf(503, "", api.CodeServerError, "%s", msg)
}

// continuation builds the state a continuation needs, context and output with
// their tokens, and returns it with the number of output tokens rendered.
func (e *Engine) continuation(fl *Flight, output []ctxItem) (*ChainState, int) {
	state := &ChainState{id: fl.response.ID, createdAt: fl.response.CreatedAt, context: fl.built.context, output: output,
		stored: fl.parsed.req.Stored(), model: fl.resolved.model, instructions: fl.instructionsText(), tokens: fl.rendered.tokens,
		prefixLen: fl.rendered.prefixLen, tok: e.sh.Tokenizer}
	if len(output) == 0 {
		return state, 0
	}
	before := len(state.tokens)
	// The output was just generated: rendering it finishes even if the
	// client has gone, so the state stays whole.
	state.tokens, _, _ = e.renderItems(context.Background(), state.tokens, fl.parsed.partition, output)
	return state, len(state.tokens) - before
}

// save appends the response's ledger row; a kept store:true response is
// persisted with it, in one transaction. The tokens were spent either way,
// so a failed persist still appends the row, and returns the error.
func (e *Engine) save(ctx context.Context, fl *Flight, state *ChainState, snapshot []byte, kept bool) error {
	if e.sh.Store == nil {
		return nil
	}
	resp, t := fl.response, fl.Trace
	usage := resp.Usage
	ledger := store.LedgerRow{ResponseID: resp.ID, CreatedAt: resp.CreatedAt, Model: fl.parsed.req.Model, Transport: t.Transport,
		Engine: t.Engine, InputTokens: usage.InputTokens, CachedTokens: usage.InputTokensDetails.CachedTokens,
		OutputTokens: usage.OutputTokens}
	if !kept || !fl.parsed.req.Stored() {
		e.sh.Store.AppendLedger(ledger)
		return nil
	}
	ledger.Stored = true
	err := e.persist(ctx, fl, state, snapshot, ledger)
	if err != nil {
		e.sh.Log.Error("persist response", "id", resp.ID, "err", err)
		ledger.Stored = false
		e.sh.Store.AppendLedger(ledger)
	}
	return err
}

// persist stores a store:true response with its ledger row, in one
// transaction, before its terminal event goes out.
func (e *Engine) persist(ctx context.Context, fl *Flight, state *ChainState, snapshot []byte, ledger store.LedgerRow) error {
	toStore := func(items []ctxItem, input bool) []store.Item {
		out := make([]store.Item, len(items))
		for i := range items {
			it := &items[i]
			if it.key == 0 && input {
				giveIdentity(&it.Item)
			}
			out[i] = store.Item{Key: it.key, ItemID: it.ID, Type: it.Type}
			if it.key == 0 {
				out[i].JSON = storedJSON(&it.Item)
			}
		}
		return out
	}
	rec := &store.Response{ID: state.id, CreatedAt: state.createdAt, Model: fl.parsed.req.Model,
		PreviousResponseID: fl.parsed.req.PreviousResponseID, Snapshot: snapshot, Tools: fl.parsed.req.Tools,
		Context: toStore(state.context, true), InputStart: fl.built.inputStart, Output: toStore(state.output, false),
		RenderedTokens: len(state.tokens)}
	// Storing must finish even if the client has gone: the response exists.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := e.sh.Store.SaveResponse(sctx, rec, ledger); err != nil {
		return err
	}
	for i := range rec.Context {
		state.context[i].key = rec.Context[i].Key
	}
	for i := range rec.Output {
		state.output[i].key = rec.Output[i].Key
	}
	return nil
}

// giveIdentity gives an input item the id and status it is stored and
// listed with, when it has none.
func giveIdentity(it *api.Item) {
	if it.ID == "" {
		it.ID = api.NewID(idPrefix(it.Type))
	}
	if it.Status == "" && carriesStatus(it.Type) {
		it.Status = "completed"
	}
}

// carriesStatus says whether an input item of this type is listed with a
// status (the SDK's ResponseItem types: input_items).
func carriesStatus(typ string) bool {
	switch typ {
	case api.TypeMessage, api.TypeFunctionCall, api.TypeFunctionCallOutput, api.TypeCustomToolCall, api.TypeCustomToolCallOutput:
		return true
	}
	return false
}

// storedJSON is an item as the store keeps it and input_items lists it,
// with the id and status persist gave it (api.Item.AppendListedJSON).
func storedJSON(it *api.Item) []byte { return it.AppendListedJSON(nil) }

func idPrefix(typ string) string {
	switch typ {
	case api.TypeFunctionCall:
		return "fc"
	case api.TypeFunctionCallOutput:
		return "fco"
	case api.TypeReasoning:
		return "rs"
	case api.TypeCustomToolCall:
		return "ctc"
	case api.TypeCustomToolCallOutput:
		return "ctco"
	case api.TypeCompaction:
		return compactionIDPrefix
	}
	return "msg"
}

func (e *Engine) recordModelled(t *Trace, ready time.Time, tm inference.GenerationTimings, job inference.Job) {
	end := time.Now()
	admitted := orAfter(tm.Admitted, ready, end)
	first := orAfter(tm.FirstToken, admitted, end)
	last := orAfter(tm.LastToken, first, end)
	t.modelledSpan(api.StageQueue, ready, admitted, 0)
	t.modelledSpan(api.StagePrefill, admitted, first, job.PrefillTokens)
	if job.ReasoningTokens > 0 {
		reasoned := orAfter(tm.ReasoningDone, first, last)
		t.modelledSpan(api.SpanReasoning, first, reasoned, job.ReasoningTokens)
		first = reasoned
	}
	t.modelledSpan(api.StageGenerate, first, last, job.OutputTokens-job.ReasoningTokens)
}

func orAfter(ts, floor, fallback time.Time) time.Time {
	if ts.IsZero() {
		return fallback
	}
	if ts.Before(floor) {
		return floor
	}
	return ts
}
