package core

import (
	"context"
	"strconv"
	"time"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/policy"
	"agentloop/seal"
)

// Compaction (docs/protocol.md, "Compaction"). A compaction replaces a
// context's items with one compaction item, except those that stay beside
// it (api.CompactionKept: the first system or developer message and the
// user messages). The item's encrypted_content seals, as
// seal.KindCompaction under Shared.SealKey, the summary the model reads in
// place of what it replaced; render renders that summary. Three steps use
// it:
//   - stepCompactionItems, before render: every compaction item in the
//     input is opened (a blob that does not open is the hosted API's 400),
//     and the items before the latest one that it replaced are dropped, so
//     a client that appends output items "as usual" sends what one that
//     prunes sends;
//   - compact (StageCompaction), after render: a create whose
//     context_management asks for compaction and whose prompt passes the
//     threshold is compacted before it generates; the compaction item is
//     its first output item;
//   - CompactStandalone: POST /v1/responses/compact.
//
// The compacted context is the response's own, so the WebSocket
// connection cache and a stored response hold it: a continuation sends
// only its new items.

// The modelled compaction pass (docs/stack.md, "Context windows and
// compaction"): the summary is CompactionSummaryShare of the tokens it
// replaces, at least one and at most CompactionSummaryMax; the pass costs
// the profile's base time to first token (its prompt, the context just
// rendered, is in the prefix cache) and the summary decoded at the
// profile's rate.
const (
	CompactionSummaryShare = 0.05
	CompactionSummaryMax   = 1024
)

// compactionIDPrefix starts a compaction item's id.
const compactionIDPrefix = "cmp"

// stepCompactionItems names the step that opens the input's compaction
// items. It records no span: its time falls in render's.
const stepCompactionItems = "compaction_items"

// managedOut is what the context-management stages did to the context.
type managedOut struct {
	// compaction is the item this response's compaction made: its first
	// output item. nil when it compacted nothing.
	compaction *api.Item
	// pruned counts the items a compaction item in the input replaced.
	pruned int
	// compacted is the prompt tokens the compaction replaced.
	compacted int
}

// output is the compaction item as the response's first output item.
func (m *managedOut) output() []ctxItem {
	if m.compaction == nil {
		return nil
	}
	return []ctxItem{{Item: *m.compaction}}
}

// openCompactionItems opens the compaction items this engine has not
// opened yet (those of the new input, or of a context loaded from the
// store) and drops what the latest one replaced.
func (e *Engine) openCompactionItems(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	from := fl.freshFrom()
	latest, err := e.openCompactions(fl.built.context[from:])
	if err != nil || latest < 0 {
		return Skip, err
	}
	if n := fl.replaceBefore(from+latest, nil); n > 0 {
		fl.managed.pruned = n
	}
	return Skip, nil
}

// openCompactions opens the compaction items of items not opened yet, and
// returns the index of the latest compaction item (-1 when none), or the
// hosted API's 400 for a blob that does not open.
func (e *Engine) openCompactions(items []ctxItem) (latest int, _ *api.Error) {
	latest = -1
	var s *seal.Sealer
	for i := range items {
		it := &items[i].Item
		if it.Type != api.TypeCompaction {
			continue
		}
		latest = i
		if it.CompactionSummary() != "" {
			continue
		}
		if s == nil {
			s = seal.New(e.sh.SealKey)
		}
		summary, err := s.Open(seal.KindCompaction, it.EncryptedContent)
		if err != nil || len(summary) == 0 {
			return latest, api.InvalidEncryptedContent(it.EncryptedContent)
		}
		it.SetCompactionSummary(string(summary))
	}
	return latest, nil
}

// replaceBefore rebuilds the context as the items before index end that a
// compaction keeps, then with (when not nil), then the items from end on.
// It returns how many items it replaced; a rebuilt context is rendered
// whole (render finds no parent to extend).
func (fl *Flight) replaceBefore(end int, with *api.Item) int {
	old := fl.built.context
	kept := api.CompactionKept(fl.items(end))
	out := make([]ctxItem, 0, len(old)-end+8)
	inputStart := 0
	for i := 0; i < end; i++ {
		if kept[i] {
			out = append(out, old[i])
			if i < fl.built.inputStart {
				inputStart++
			}
		}
	}
	replaced := end - len(out)
	if replaced == 0 && with == nil {
		return 0
	}
	if with != nil {
		out = append(out, ctxItem{Item: *with})
	}
	inputStart += max(fl.built.inputStart-end, 0) // the items after end keep their place in the input
	out = append(out, old[end:]...)
	fl.built.context, fl.built.inputStart = out, min(inputStart, len(out))
	if p := fl.loaded.parent; p != nil && p.tokens != nil {
		whole := *p
		whole.tokens = nil
		fl.loaded.parent = &whole
	}
	return replaced
}

// replaceable says whether a compaction would replace any item of the
// context: one that is not kept beside it.
func (fl *Flight) replaceable() bool {
	for _, kept := range api.CompactionKept(fl.items(len(fl.built.context))) {
		if !kept {
			return true
		}
	}
	return false
}

// items is the context's first n items, as api's rules take them.
func (fl *Flight) items(n int) []api.Item {
	flat := make([]api.Item, n)
	for i := range flat {
		flat[i] = fl.built.context[i].Item
	}
	return flat
}

// compact is the compaction stage: it compacts the context once its
// rendered prompt passes context_management's threshold (the model's
// context window when none is given), and renders the compacted context.
// Its span, modelled, is the compaction pass; it also records the items a
// compaction item in the input replaced.
func (e *Engine) compact(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	c, err := fl.parsed.req.Compaction()
	if err != nil {
		return Skip, err
	}
	res := StageResult{items: fl.managed.pruned}
	if fl.managed.pruned > 0 {
		res.note = strconv.Itoa(fl.managed.pruned) + " items replaced by the input's compaction item"
	}
	profile := fl.resolved.model.profile
	threshold := c.Threshold
	if threshold == 0 {
		threshold = profile.ContextWindow
	}
	before := len(fl.rendered.tokens)
	if !c.On || threshold <= 0 || before <= threshold || !fl.replaceable() {
		res.skip = fl.managed.pruned == 0
		return res, nil
	}
	summaryTokens := compactionSummaryTokens(before)
	item := e.newCompactionItem(summaryTokens)
	replaced := fl.replaceBefore(len(fl.built.context), &item)
	fl.managed.compaction, fl.managed.compacted = &item, before
	if _, _, err := e.renderWhole(ctx, fl, fl.instructionsText()); err != nil {
		return res, clientGone()
	}
	after := len(fl.rendered.tokens)
	res.items += replaced
	res.tokens = before - after
	res.addNote("compacted " + strconv.Itoa(before) + " → " + strconv.Itoa(after) + " tokens")
	res.cost = e.compactionCost(profile, summaryTokens)
	return res, nil
}

// newCompactionItem makes a compaction item whose summary is n tokens.
func (e *Engine) newCompactionItem(n int) api.Item {
	summary := string(policy.AppendFiller(nil, 0, n, true))
	item := api.Item{Type: api.TypeCompaction, ID: api.NewID(compactionIDPrefix),
		EncryptedContent: seal.New(e.sh.SealKey).Seal(seal.KindCompaction, []byte(summary))}
	item.SetCompactionSummary(summary)
	return item
}

// compactStages turn a POST /v1/responses/compact body into its
// compacted items: a create's stages up to render, then the compaction.
var compactStages = []Stage{
	{api.StageParse, api.Measured, (*Engine).parseCompact},
	{api.StageResolve, api.Measured, (*Engine).resolve},
	{api.StageLoad, api.Measured, (*Engine).load},
	{api.StageValidate, api.Measured, (*Engine).validate},
	{stepCompactionItems, Unrecorded, (*Engine).openCompactionItems},
	{api.StageRender, api.Measured, (*Engine).render},
	{StageCompaction, api.Modelled, (*Engine).compactWhole},
}

// Compact is POST /v1/responses/compact's work: the context the body
// names (its input after a stored previous response, if any) compacted
// whatever its size, as the hosted API answers it: the user messages,
// then one compaction item. Its trace is kept under the answer's id.
func (e *Engine) Compact(ctx context.Context, fl *Flight) (*api.CompactedResponse, *api.Error) {
	id := api.NewID("resp")
	fl.Trace.ResponseID = id
	aerr := e.runStages(ctx, fl, compactStages, fl.Trace.start)
	e.sh.Traces.Add(&fl.Trace.Trace)
	if aerr != nil {
		return nil, aerr
	}
	out := &api.CompactedResponse{ID: id, Object: api.ObjectCompactedResponse, CreatedAt: time.Now().Unix(),
		Output: make([]api.Item, len(fl.built.context))}
	for i := range fl.built.context {
		out.Output[i] = fl.built.context[i].Item
	}
	out.Usage = api.Usage{InputTokens: fl.managed.compacted, OutputTokens: compactionSummaryTokens(fl.managed.compacted)}
	out.Usage.TotalTokens = out.Usage.InputTokens + out.Usage.OutputTokens
	return out, nil
}

// parseCompact decodes a compact body, held to ResponseCompactParams.
func (e *Engine) parseCompact(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	if err := api.ValidateCompact(fl.body); err != nil {
		return StageResult{bytes: len(fl.body)}, err
	}
	return e.decode(ctx, fl)
}

// compactWhole compacts the whole context into its user messages and one
// compaction item (the standalone compaction's answer).
func (e *Engine) compactWhole(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	before := len(fl.rendered.tokens)
	n := compactionSummaryTokens(before)
	item := e.newCompactionItem(n)
	kept := make([]ctxItem, 0, 8)
	for _, ci := range fl.built.context {
		if ci.Type == api.TypeMessage && ci.Role == "user" {
			if ci.ID == "" {
				ci.ID, ci.Status = api.NewID("msg"), "completed"
			}
			kept = append(kept, ci)
		}
	}
	replaced := len(fl.built.context) - len(kept)
	fl.built.context = append(kept, ctxItem{Item: item})
	fl.managed.compaction, fl.managed.compacted = &item, before
	return StageResult{items: replaced, tokens: before, note: "compacted " + strconv.Itoa(before) + " tokens",
		cost: e.compactionCost(fl.resolved.model.profile, n)}, nil
}

// compactionSummaryTokens is the size of the summary of n tokens.
func compactionSummaryTokens(n int) int {
	return min(max(int(float64(n)*CompactionSummaryShare), 1), CompactionSummaryMax)
}

// compactionCost is the modelled compaction pass of a summary of n
// tokens on profile p.
func (e *Engine) compactionCost(p inference.Profile, n int) time.Duration {
	if e.cfg.Unmodelled {
		return 0
	}
	d := p.BaseTTFT
	if p.DecodeTPS > 0 {
		d += time.Duration(float64(n) / p.DecodeTPS * float64(time.Second))
	}
	return d
}

// compacted streams a compaction item as the response's first output
// item, and numbers the model's items after it.
func (s *streamer) compacted(it *api.Item, writeErr error) error {
	if it == nil {
		return writeErr
	}
	s.base = 1
	if writeErr != nil || s.quiet {
		return writeErr
	}
	for _, typ := range []string{api.EventOutputItemAdded, api.EventOutputItemDone} {
		s.buf = api.AppendOutputItemEvent(s.buf, typ, s.seq, 0, it)
		if err := s.emit(typ); err != nil {
			return err
		}
	}
	return s.out.Flush()
}

// Kept is the state a finished response keeps for its continuation (what
// the WebSocket connection cache holds); nil when it keeps none. Read it
// in an OnFinished hook.
func (fl *Flight) Kept() *ChainState { return fl.outcome.State }

// Bytes is the memory a kept state holds for a continuation: its rendered
// tokens (the slice's capacity, 8 bytes each) and the text of its items.
// The long-session figures read it (docs/protocol.md, "Compaction").
func (p *ChainState) Bytes() int {
	n := cap(p.tokens) * 8
	for _, items := range [][]ctxItem{p.context, p.output} {
		for i := range items {
			it := &items[i].Item
			n += len(it.Raw) + len(it.Output) + len(it.Arguments) + len(it.EncryptedContent) + len(it.CompactionSummary())
			for _, part := range it.Content {
				n += len(part.Text) + len(part.Raw)
			}
		}
	}
	return n
}
