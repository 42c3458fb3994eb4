package server

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/policy"
	"agentloop/store"
)

// sink receives a response's events. Each event is one complete JSON object;
// flush ends a batch (SSE flushes, WebSocket frames are already sent).
type sink interface {
	event(typ string, b []byte) error
	flush() error
}

// discard is the sink of a non-streaming request.
type discard struct{}

func (discard) event(string, []byte) error { return nil }
func (discard) flush() error               { return nil }

// plannedItem is one output item and the token pieces it streams as.
type plannedItem struct {
	item   api.Item
	pieces []string
	// filler tokens follow pieces in an exact-length reply (see
	// policy.OutputItem.Filler): their text is written as they stream, and
	// the item's whole text only when it closes, so a reply that may run
	// to 128,000 tokens holds what it has streamed, not what it may.
	filler   int
	expanded bool // the item's text includes the filler
}

// tokens is the number of tokens the item streams.
func (p *plannedItem) tokens() int { return len(p.pieces) + p.filler }

// appendText appends the text of tokens [from, to).
func (p *plannedItem) appendText(dst []byte, from, to int) []byte {
	for i := from; i < min(to, len(p.pieces)); i++ {
		dst = append(dst, p.pieces[i]...)
	}
	if to > len(p.pieces) {
		dst = policy.AppendFiller(dst, max(from-len(p.pieces), 0), to-len(p.pieces), len(p.pieces) == 0)
	}
	return dst
}

// piece returns token i's text.
func (p *plannedItem) piece(i int) string {
	if i < len(p.pieces) {
		return p.pieces[i]
	}
	return policy.FillerPiece(i-len(p.pieces), len(p.pieces) == 0)
}

// blank says whether tokens [from, to) carry no text: they only complete
// a split character. Filler words always carry text.
func (p *plannedItem) blank(from, to int) bool {
	if to > len(p.pieces) {
		return false
	}
	for _, piece := range p.pieces[from:to] {
		if piece != "" {
			return false
		}
	}
	return true
}

// expand writes the item's whole text, filler included, once: when it
// closes on the stream or when the response is settled.
func (p *plannedItem) expand() *api.Item {
	if p.filler > 0 && !p.expanded {
		p.item.Content[0].Text = string(p.appendText(nil, 0, p.tokens()))
		p.expanded = true
	}
	return &p.item
}

// plan turns the policy's reply into output items with ids and pieces, cut
// at max_output_tokens.
func (e *Engine) plan(fl *flight, reply policy.Reply) (items []plannedItem, total int, truncated bool) {
	limit := -1
	if fl.parsed.req.MaxOutputTokens != nil {
		limit = max(*fl.parsed.req.MaxOutputTokens-fl.seg.sent, 0) // a resumed segment gets what is left
	}
	for _, out := range reply.Items {
		var it api.Item
		var text string
		switch out.Type {
		case "function_call":
			it = api.Item{Type: api.TypeFunctionCall, ID: api.NewID("fc"), Status: "completed", Name: out.Name,
				Namespace: out.Namespace, CallID: api.NewCallID(), Arguments: out.Arguments}
			text = out.Arguments
		default:
			it = api.Item{Type: api.TypeMessage, ID: api.NewID("msg"), Status: "completed", Role: "assistant",
				Content: []api.Part{{Type: "output_text", Text: out.Text}}}
			text = out.Text
		}
		p := plannedItem{item: it, pieces: out.Pieces}
		if it.Type == api.TypeMessage {
			p.filler = out.Filler // only a message is written to an exact length
		}
		if p.filler == 0 {
			if len(p.pieces) == 0 {
				p.pieces = e.sh.Tokenizer.Pieces(text)
			}
			if len(p.pieces) == 0 {
				p.pieces = []string{""}
			}
		}
		if limit >= 0 && total+p.tokens() > limit {
			keep := limit - total
			p.filler = max(min(p.filler, keep-len(p.pieces)), 0)
			p.pieces = p.pieces[:min(keep, len(p.pieces))]
			truncated = true
			p.item.Status = "incomplete"
			if p.filler == 0 {
				cut := strings.Join(p.pieces, "")
				if p.item.Type == api.TypeFunctionCall {
					p.item.Arguments = cut
				} else {
					p.item.Content[0].Text = cut
				}
			}
			if p.tokens() == 0 {
				break
			}
		}
		items = append(items, p)
		total += p.tokens()
		if truncated {
			break
		}
	}
	return items, total, truncated
}

// streamer turns released tokens into events. When the consumer is behind,
// all released tokens of an item go out as one delta.
type streamer struct {
	out    sink
	quiet  bool // nobody reads the events (a non-streaming request): only count tokens
	buf    []byte
	seq    int
	items  []plannedItem
	cur    int // item being streamed
	base   int // output index of items[0]: the items earlier segments streamed
	piece  int // next piece within it
	opened bool
	sent   int
	text   []byte // scratch for a delta of several tokens

	// Inter-token gaps as written, for the metrics: carried counts tokens
	// released without text of their own, which ride with the next delta.
	gaps      tokenGaps
	gapBounds []float64
	lastDelta time.Time
	carried   int
}

// delivered records the gaps of a delta carrying k tokens, just written.
func (s *streamer) delivered(k int) {
	now := time.Now()
	if s.lastDelta.IsZero() {
		s.gaps.zeros(k - 1)
	} else {
		s.gaps.add(now.Sub(s.lastDelta), k-1, s.gapBounds)
	}
	s.lastDelta = now
}

func (s *streamer) emit(typ string) error {
	err := s.out.event(typ, s.buf)
	s.seq++
	s.buf = s.buf[:0]
	return err
}

func (s *streamer) open(idx int, it *api.Item) error {
	started := *it
	started.Status = "in_progress"
	if started.Type == api.TypeMessage {
		started.Content = []api.Part{}
	} else {
		started.Arguments = ""
	}
	s.buf = api.AppendOutputItemEvent(s.buf, api.EventOutputItemAdded, s.seq, idx, &started)
	if err := s.emit(api.EventOutputItemAdded); err != nil {
		return err
	}
	if it.Type == api.TypeMessage {
		s.buf = api.AppendContentPartEvent(s.buf, api.EventContentPartAdded, s.seq, it.ID, idx, 0, "")
		return s.emit(api.EventContentPartAdded)
	}
	return nil
}

func (s *streamer) close(idx int, it *api.Item) error {
	if it.Type == api.TypeMessage {
		text := it.Content[0].Text
		s.buf = api.AppendTextDone(s.buf, s.seq, it.ID, idx, 0, text)
		if err := s.emit(api.EventOutputTextDone); err != nil {
			return err
		}
		s.buf = api.AppendContentPartEvent(s.buf, api.EventContentPartDone, s.seq, it.ID, idx, 0, text)
		if err := s.emit(api.EventContentPartDone); err != nil {
			return err
		}
	} else {
		s.buf = api.AppendArgumentsDone(s.buf, s.seq, it.ID, idx, it.Arguments)
		if err := s.emit(api.EventArgumentsDone); err != nil {
			return err
		}
	}
	s.buf = api.AppendOutputItemEvent(s.buf, api.EventOutputItemDone, s.seq, idx, it)
	return s.emit(api.EventOutputItemDone)
}

// advance emits events for tokens up to released.
func (s *streamer) advance(released int) error {
	for s.cur < len(s.items) && s.sent < released {
		pi := &s.items[s.cur]
		n := min(released-s.sent, pi.tokens()-s.piece)
		if s.quiet {
			// A non-streaming reply is built once, when it is settled.
			if !pi.blank(s.piece, s.piece+n) {
				s.delivered(n + s.carried)
				s.carried = 0
			} else {
				s.carried += n
			}
		} else if err := s.stream(pi, n); err != nil {
			return err
		}
		s.piece += n
		s.sent += n
		if s.piece == pi.tokens() {
			if !s.quiet {
				if err := s.close(s.base+s.cur, pi.expand()); err != nil {
					return err
				}
			}
			s.cur++
			s.piece = 0
			s.opened = false
		}
	}
	return nil
}

// stream emits the delta of the item's next n tokens, opening the item
// first.
func (s *streamer) stream(pi *plannedItem, n int) error {
	if !s.opened {
		if err := s.open(s.base+s.cur, &pi.item); err != nil {
			return err
		}
		s.opened = true
	}
	if pi.blank(s.piece, s.piece+n) {
		// A token that only completes a split character carries no
		// text of its own; it goes out with the next delta.
		s.carried += n
		return nil
	}
	var delta string
	if n == 1 {
		delta = pi.piece(s.piece)
	} else {
		s.text = pi.appendText(s.text[:0], s.piece, s.piece+n)
		delta = string(s.text)
	}
	if pi.item.Type == api.TypeMessage {
		s.buf = api.AppendTextDelta(s.buf, s.seq, pi.item.ID, s.base+s.cur, 0, delta)
		if err := s.emit(api.EventOutputTextDelta); err != nil {
			return err
		}
	} else {
		s.buf = api.AppendArgumentsDelta(s.buf, s.seq, pi.item.ID, s.base+s.cur, delta)
		if err := s.emit(api.EventArgumentsDelta); err != nil {
			return err
		}
	}
	s.delivered(n + s.carried)
	s.carried = 0
	return nil
}

// outcome is how a generation ended.
type outcome struct {
	response *api.Response
	snapshot []byte
	state    *chainState
	err      *api.Error // set when the response failed after streaming began
	terminal string     // the terminal event; "" for a cancelled response
}

// streamed is how a response's streaming ended: what finalize settles it
// from.
type streamed struct {
	items     []plannedItem
	total     int // tokens planned
	sent      int // tokens streamed
	cur       int // the item being streamed when it ended
	matched   int // prompt tokens found in the prefix cache
	truncated bool
	cancelled bool // the client went away, or a write failed
	stopped   bool // the engine is shutting down
	expired   bool // a paused response waited too long for response.append
}

// pauses says whether a prototype response pauses after this segment: it
// sampled a function call and was not cut short.
func (g *streamed) pauses() bool {
	if g.truncated {
		return false
	}
	for i := range g.items {
		if g.items[i].item.Type == api.TypeFunctionCall {
			return true
		}
	}
	return false
}

// generate runs queue, prefill and generate, streams the events to out and
// finalizes. It returns the final state for the connection cache.
func (e *Engine) generate(ctx context.Context, fl *flight, out sink) outcome {
	t := fl.trace
	req := fl.parsed.req
	resp := api.NewResponse(api.NewID("resp"), time.Now().Unix(), req)
	fl.response = resp
	t.ResponseID = resp.ID
	out = e.streamDrill(ctx, fl, out)

	running := e.sh.Metrics.generating(t.Transport)
	running.Inc()
	defer running.Dec()
	_, quiet := out.(discard)
	st := &streamer{out: out, quiet: quiet, buf: make([]byte, 0, 512), gapBounds: e.sh.Metrics.itl.bounds}
	writeErr := st.begin(resp)

	// The model decides, then the accelerator paces it.
	ready := time.Now()
	g := &fl.stream
	if req.Generates() {
		g.items, g.total, g.truncated = e.plan(fl, e.sh.Policy.Respond(fl.policyRequest()))
	}
	g.matched = e.sh.Prefix.Match(fl.parsed.partition, fl.rendered.tokens)
	e.sh.Metrics.prefixLookup(len(fl.rendered.tokens), g.matched)
	job := inference.Job{Profile: fl.resolved.model.profile, PrefillTokens: len(fl.rendered.tokens) - g.matched, OutputTokens: g.total,
		JitterSeed: jitterSeed(fl)}
	var gen *inference.Generation
	var first inference.GenerationTimings
	// One segment, or on a prototype connection one per function call:
	// the response pauses after the call and resumes with the appended
	// outputs (prototype.go).
	for {
		job.Hold = fl.via.prototype && g.pauses()
		if fl.seg.held != nil {
			gen = e.sh.Scheduler.Resume(fl.seg.held, job)
		} else {
			gen = e.sh.Scheduler.Submit(job)
		}
		st.items, st.cur, st.piece, st.sent, st.opened = g.items, 0, 0, 0, false
		cancelled, stopped, err := e.pace(ctx, gen, st, writeErr)
		writeErr = err
		g.cancelled, g.stopped = cancelled || writeErr != nil, stopped
		g.sent, g.cur = st.sent, st.cur
		tm := gen.Timings()
		if fl.trace.segment == 0 {
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
	_ = e.runStages(ctx, fl, postInference, time.Now())
	res := fl.outcome
	e.sh.Traces.Add(&t.Trace)
	e.sh.Drills.finished(t.Session)
	if fl.trace.segment > 0 {
		first.LastToken = time.Time{} // no per-token time across pauses
	}
	e.sh.Metrics.observe(t, first, fl.seg.sent+st.sent, resp.Status)
	e.sh.Metrics.itl.merge(t.Transport, &st.gaps)

	if res.terminal != "" && !quiet {
		st.buf = api.AppendResponseEvent(st.buf, res.terminal, st.seq, res.snapshot)
		if err := st.emit(res.terminal); err == nil {
			_ = out.flush()
		}
	}
	return res
}

// begin sends response.created and response.in_progress.
func (s *streamer) begin(resp *api.Response) error {
	if s.quiet {
		return nil // nobody reads the events: do not build two snapshots
	}
	snapshot := api.MarshalResponse(resp)
	s.buf = api.AppendResponseEvent(s.buf, api.EventCreated, s.seq, snapshot)
	err := s.emit(api.EventCreated)
	if err == nil {
		s.buf = api.AppendResponseEvent(s.buf, api.EventInProgress, s.seq, snapshot)
		err = s.emit(api.EventInProgress)
	}
	if err == nil {
		err = s.out.flush()
	}
	return err
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
		if writeErr == nil && st.seq != seq {
			writeErr = st.out.flush()
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
func (e *Engine) finalize(ctx context.Context, fl *flight) (stageResult, *api.Error) {
	g, resp := &fl.stream, fl.response
	output := g.output()
	resp.Output = make([]api.Item, 0, len(fl.seg.earlier)+len(output))
	for _, items := range [][]ctxItem{fl.seg.earlier, output} {
		for i := range items {
			resp.Output = append(resp.Output, items[i].Item)
		}
	}
	usage := &api.Usage{InputTokens: len(fl.rendered.tokens), OutputTokens: fl.seg.sent + g.sent}
	if fl.trace.segment > 0 {
		usage.InputTokens = fl.seg.input // every segment's prefilled prompt, not its output again
	}
	usage.InputTokensDetails.CachedTokens = inference.BillableCached(g.matched)
	usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	resp.Usage = usage
	counts := *usage
	fl.trace.Usage = &counts
	fl.trace.Shape = fl.shape()
	terminal, failure := settle(resp, g)

	state, outTokens := e.chain(fl, output)
	kept := terminal == api.EventCompleted || terminal == api.EventIncomplete
	if kept {
		e.sh.Prefix.Insert(fl.parsed.partition, state.tokens)
	}
	snapshot := api.MarshalResponse(resp)
	if err := e.save(ctx, fl, state, snapshot, kept); err != nil {
		failure = fail(resp, "The response could not be stored: "+storeReason(err))
		terminal = api.EventFailed
		snapshot = api.MarshalResponse(resp)
		kept = false
	}
	fl.outcome = outcome{response: resp, snapshot: snapshot, err: failure, terminal: terminal}
	if kept {
		fl.outcome.state = state
	}
	return stageResult{items: len(output), tokens: outTokens, bytes: len(snapshot)}, nil
}

// output is what was streamed in full: the items the response keeps.
func (g *streamed) output() []ctxItem {
	output := make([]ctxItem, 0, len(g.items))
	for i := range g.items {
		if i < g.cur || (i == g.cur && g.sent == g.total) {
			output = append(output, ctxItem{Item: *g.items[i].expand()})
		}
	}
	return output
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

// chain builds the state a continuation needs, context and output with
// their tokens, and returns it with the number of output tokens rendered.
func (e *Engine) chain(fl *flight, output []ctxItem) (*chainState, int) {
	state := &chainState{id: fl.response.ID, response: fl.response, context: fl.built.context, output: output,
		stored: fl.parsed.req.Stored(), model: fl.resolved.model, instructions: fl.instructions(), tokens: fl.rendered.tokens, callIDs: fl.built.callIDs}
	if len(output) == 0 {
		return state, 0
	}
	before := len(state.tokens)
	// The output was just generated: rendering it finishes even if the
	// client has gone, so the state stays whole.
	state.tokens, _, _ = e.renderItems(context.Background(), state.tokens, fl.parsed.partition, output)
	for i := range output {
		if output[i].Type == api.TypeFunctionCall {
			state.callIDs[output[i].CallID] = struct{}{}
		}
	}
	return state, len(state.tokens) - before
}

// save appends the response's ledger row; a kept store:true response is
// persisted with it, in one transaction. The tokens were spent either way,
// so a failed persist still appends the row, and returns the error.
func (e *Engine) save(ctx context.Context, fl *flight, state *chainState, snapshot []byte, kept bool) error {
	if e.sh.Store == nil {
		return nil
	}
	resp, t := fl.response, fl.trace
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

func storeReason(err error) string {
	switch {
	case errors.Is(err, store.ErrBusy):
		return "the database is locked."
	case errors.Is(err, store.ErrFull):
		return "the disk is full."
	case errors.Is(err, store.ErrUnavailable):
		return "the database cannot be reached."
	case errors.Is(err, context.DeadlineExceeded):
		return "the database is locked or busy, and the write timed out."
	}
	return "a storage error occurred."
}

// persist stores a store:true response with its ledger row, in one
// transaction, before its terminal event goes out.
func (e *Engine) persist(ctx context.Context, fl *flight, state *chainState, snapshot []byte, ledger store.LedgerRow) error {
	toStore := func(items []ctxItem, input bool) []store.Item {
		out := make([]store.Item, len(items))
		for i := range items {
			it := &items[i]
			if it.key == 0 && input {
				if it.ID == "" {
					it.ID = api.NewID(idPrefix(it.Type))
				}
				if it.Status == "" && (it.Type == api.TypeMessage || it.Type == api.TypeFunctionCallOutput) {
					it.Status = "completed"
				}
			}
			out[i] = store.Item{Key: it.key, ItemID: it.ID, Type: it.Type}
			if it.key == 0 {
				out[i].JSON = it.AppendJSON(nil)
			}
		}
		return out
	}
	rec := &store.Response{ID: state.id, CreatedAt: state.response.CreatedAt, Model: fl.parsed.req.Model,
		PreviousResponseID: fl.parsed.req.PreviousResponseID, Snapshot: snapshot, Tools: fl.parsed.req.Tools,
		Context: toStore(state.context, true), InputStart: fl.built.inputStart, Output: toStore(state.output, false),
		RenderedTokens: len(state.tokens)}
	// Storing must finish even if the client has gone: the response exists.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
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

func idPrefix(typ string) string {
	switch typ {
	case api.TypeFunctionCall:
		return "fc"
	case api.TypeFunctionCallOutput:
		return "fco"
	case api.TypeReasoning:
		return "rs"
	}
	return "msg"
}

func jitterSeed(fl *flight) uint64 {
	last := ""
	if n := len(fl.built.context); n > 0 {
		last = fl.built.context[n-1].TextPrefix(256)
	}
	return inference.JitterSeed(fl.parsed.seed, strconv.Itoa(len(fl.built.context)), last)
}

func (e *Engine) recordModelled(t *trace, ready time.Time, tm inference.GenerationTimings, job inference.Job) {
	end := time.Now()
	admitted := orAfter(tm.Admitted, ready, end)
	first := orAfter(tm.FirstToken, admitted, end)
	last := orAfter(tm.LastToken, first, end)
	t.model(api.StageQueue, ready, admitted, 0)
	t.model(api.StagePrefill, admitted, first, job.PrefillTokens)
	t.model(api.StageGenerate, first, last, job.OutputTokens)
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
