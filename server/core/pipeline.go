package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"agentloop/api"
	"agentloop/store"
)

// preInference are the stages before the scheduler, in order
// (docs/decisions.md, "Stage order"). A new stage is one line here; queue,
// prefill and generate (modelled, paced by the scheduler) follow, then
// postInference, both in generate.go.
var preInference = []Stage{
	{api.StageParse, api.Measured, (*Engine).parse},
	{stepFindParent, Unrecorded, (*Engine).findParent},
	{api.StageResolve, api.Measured, (*Engine).resolve},
	{api.StageStackConfigHop, api.Modelled, (*Engine).stackConfigHop},
	{api.StageStackSprintHops, api.Modelled, (*Engine).stackSprintHops},
	{api.StageLoad, api.Measured, (*Engine).load},
	{api.StageStackStateLoad, api.Modelled, (*Engine).stackStateLoad},
	{api.StageValidate, api.Measured, (*Engine).validate},
	{stepCompactionItems, Unrecorded, (*Engine).openCompactionItems},
	{api.StageRender, api.Measured, (*Engine).render},
	{StageCompaction, api.Modelled, (*Engine).compact},
	{StageContextWindow, api.Measured, (*Engine).fitWindow},
	{api.StageSafety, api.Measured, (*Engine).classify},
	{api.StageStackClassify, api.Modelled, (*Engine).stackClassify},
	{StageReasoning, Unrecorded, (*Engine).reason},
}

// countStages are the stages that turn a create body into the prompt's
// tokens: the measured pre-inference stages up to render. Counting is the
// same work a create does to learn its input_tokens, so the count equals
// the usage that create would report.
var countStages = []Stage{
	{api.StageParse, api.Measured, (*Engine).decode},
	{api.StageResolve, api.Measured, (*Engine).resolve},
	{api.StageLoad, api.Measured, (*Engine).load},
	{api.StageValidate, api.Measured, (*Engine).validate},
	{stepCompactionItems, Unrecorded, (*Engine).openCompactionItems},
	{api.StageRender, api.Measured, (*Engine).render},
}

// prepare runs the pre-inference stages, from the request's first byte to
// a flight ready for the scheduler.
func (e *Engine) Prepare(ctx context.Context, fl *Flight) *api.Error {
	return e.runStages(ctx, fl, e.pre, fl.Trace.start)
}

// parse decodes the body, the envelope and the items it carries, and
// holds a create to the hosted API's rules (api.ValidateCreateWith, the
// tools' checks cached per partition and raw tools), once the transport has admitted it
// as one.
func (e *Engine) parse(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	body := fl.body
	res, err := e.decode(ctx, fl)
	if err != nil {
		return res, err
	}
	partition, tools := fl.parsed.partition, fl.parsed.req.Tools
	err = api.ValidateCreateWith(body, func(raw json.RawMessage) (api.ToolNames, *api.Error) {
		sum := fl.parsed.toolsSum
		if !bytes.Equal(raw, tools) { // the same member of the same body: decode has hashed it
			sum = sumTools(raw)
		}
		return e.checks.check(partition, sum, raw)
	})
	fl.parsed.toolsChecked = err == nil
	return res, err
}

// decode is parse without the hosted API's rules: input_tokens counts
// what a create would, and takes the parameters a create takes leniently.
func (e *Engine) decode(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	res := StageResult{bytes: len(fl.body)}
	req, err := api.DecodeCreate(fl.body)
	if err != nil {
		return res, err
	}
	fl.parsed.partition = req.PromptCacheKey // names the session even if the input is bad
	items, err := req.DecodeInput()
	res.items = len(items)
	if err != nil {
		return res, err
	}
	fl.body = nil
	fl.parsed.req, fl.parsed.items = req, items
	fl.Trace.Chain = &api.Chain{PreviousResponseID: req.PreviousResponseID, Store: req.Stored(), InputItems: len(items)}
	for i := range items {
		if modelWrote(&items[i]) {
			fl.Trace.Chain.ModelItems++
		}
	}
	fl.parsed.seed = seedOf(req)
	fl.parsed.toolsSum = sumTools(req.Tools)
	if fl.Via.Admit != nil {
		err = fl.Via.Admit(req)
	}
	return res, err
}

// stepFindParent names the step that finds a request's parent in its
// connection's cache. It records no span: its time, a map lookup, falls in
// the next span.
const stepFindParent = "find_parent"

// findParent decides, once, whether the connection cache holds the parent
// that previous_response_id names (a WebSocket continuation; over HTTP
// there is no connection cache). resolve and load read its answer.
func (e *Engine) findParent(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	if fl.Via.Conn != nil {
		fl.found.parent, fl.found.held, fl.found.dropped = fl.Via.Conn.ParentFor(fl.parsed.req.PreviousResponseID)
		if fl.found.parent != nil {
			fl.found.parent.expand() // the cache keeps it packed (statepack.go)
		}
	}
	return StageResult{skip: true}, nil
}

// resolve finds the model configuration, reused from the connection's
// latest response when that was resolved for the same model and tools.
func (e *Engine) resolve(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	req, c := fl.parsed.req, fl.found.parent
	if c != nil && c.model != nil &&
		c.model.serves(fl.parsed.partition, req.Model, fl.parsed.toolsSum) {
		fl.resolved.model = c.model
		e.sh.Metrics.cacheLookup("connection_model", true)
		return StageResult{note: "connection cache"}, nil
	}
	m, hit, err := e.resolveModel(fl.parsed.partition, req, fl.parsed.toolsSum, fl.parsed.toolsChecked)
	if err != nil {
		return StageResult{bytes: len(req.Tools)}, err
	}
	fl.resolved.model, fl.resolved.cold = m, !hit
	if e.models != nil {
		e.sh.Metrics.cacheLookup("config", hit)
	}
	res := StageResult{items: len(m.tools), tokens: len(m.toolTokens), bytes: len(req.Tools)}
	if hit {
		res.note = "config cache"
	}
	return res, nil
}

// load finds the parent, in the connection cache or the store.
func (e *Engine) load(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	id, found := fl.parsed.req.PreviousResponseID, fl.found
	if id == "" {
		return e.loadConversation(ctx, fl)
	}
	if found.held {
		e.sh.Metrics.cacheLookup("connection", found.parent != nil)
	}
	if found.parent != nil {
		fl.loaded.parent = found.parent
		return StageResult{note: "connection cache"}, nil
	}
	p, n, err := e.hydrate(ctx, id)
	res := StageResult{items: len(p.contextOrNil()) + len(p.outputOrNil()), bytes: n}
	if found.dropped {
		res.note = NoteStateDropped
	}
	if err != nil {
		return res, err
	}
	fl.loaded.parent, fl.loaded.bytes = p, n
	res.addNote("store")
	return res, nil
}

// NoteStateDropped is the load span's note on a continuation whose parent
// the state budget dropped from its connection's cache (statebudget.go).
const NoteStateDropped = "connection state dropped by the state budget"

// validate expands item references and checks that every tool output
// answers a call, over the items that are new to this engine.
func (e *Engine) validate(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	if err := e.buildContext(ctx, fl); err != nil {
		return StageResult{items: len(fl.parsed.items)}, err
	}
	return StageResult{items: len(fl.built.context) - fl.freshFrom()}, nil
}

// render tokenizes instructions, tools and context. A parent built in
// memory with the same instructions and tools already holds them.
func (e *Engine) render(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	instructions := fl.instructionsText()
	p := fl.loaded.parent
	var res StageResult
	var hits int
	var err error
	if p != nil && p.tokens != nil && p.model == fl.resolved.model && p.instructions == instructions {
		fl.rendered.fresh = fl.freshFrom()
		fl.rendered.itemTokens, fl.rendered.instructionsTokens = make([]int, len(fl.built.context)-fl.rendered.fresh), -1
		fl.rendered.prefixLen = p.prefixLen
		fl.rendered.tokens, hits, err = e.renderItemsCounted(ctx, p.tokens, fl.parsed.partition, fl.built.context[fl.rendered.fresh:], fl.rendered.itemTokens)
		res = StageResult{items: len(fl.built.context) - fl.rendered.fresh, tokens: len(fl.rendered.tokens) - len(p.tokens), note: "appended to cached tokens"}
	} else {
		res, hits, err = e.renderWhole(ctx, fl, instructions)
	}
	if err != nil {
		return res, clientGone()
	}
	if hits > 0 {
		res.addNote(strconv.Itoa(hits) + " token cache hits")
	}
	fl.rendered.freshTokens = res.tokens
	return res, nil
}

// renderWhole renders instructions, tools and the whole context anew:
// render without a parent to extend, and the context-management stages
// after they change the context.
func (e *Engine) renderWhole(ctx context.Context, fl *Flight, instructions string) (StageResult, int, error) {
	fl.rendered.fresh = 0
	fl.rendered.itemTokens = make([]int, len(fl.built.context))
	toks := make([]int, 0, len(fl.resolved.model.toolTokens)+64*len(fl.built.context))
	var hits int
	var err error
	if instructions != "" {
		toks, err = e.sh.Tokenizer.AppendEncodeWrapped(ctx, toks, "<|start|>system<|message|>", instructions, "<|end|>")
	}
	fl.rendered.instructionsTokens = len(toks)
	if err == nil {
		toks = append(toks, fl.resolved.model.toolTokens...)
		fl.rendered.prefixLen = len(toks)
		toks, hits, err = e.renderItemsCounted(ctx, toks, fl.parsed.partition, fl.built.context, fl.rendered.itemTokens)
	}
	fl.rendered.tokens = toks
	fl.rendered.freshTokens = len(toks)
	return StageResult{items: len(fl.built.context), tokens: len(toks)}, hits, err
}

// classify runs the safety classifier over what render rendered anew: it
// reads what it has not read before.
func (e *Engine) classify(ctx context.Context, fl *Flight) (StageResult, *api.Error) {
	instructions := fl.instructionsText()
	texts := make([]string, 0, len(fl.built.context)-fl.rendered.fresh+1)
	if fl.rendered.fresh == 0 && instructions != "" {
		texts = append(texts, instructions)
	}
	for i := fl.rendered.fresh; i < len(fl.built.context); i++ {
		if it := &fl.built.context[i].Item; !rendersNothing(it) {
			texts = append(texts, it.Text())
		}
	}
	flags, n, err := e.safety.Scan(ctx, texts)
	fl.safety = flags
	res := StageResult{items: len(texts), bytes: n}
	if err != nil {
		return res, clientGone()
	}
	if len(flags) > 0 {
		res.note = strconv.Itoa(len(flags)) + " flags: " + flags[0].Kind
	}
	return res, nil
}

// hydrate loads a stored response and decodes its items.
func (e *Engine) hydrate(ctx context.Context, id string) (*ChainState, int, *api.Error) {
	if e.sh.Store == nil {
		return nil, 0, api.PreviousResponseNotFound(id)
	}
	r, err := e.sh.Store.GetResponse(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, api.PreviousResponseNotFound(id)
	}
	if err != nil {
		e.sh.Log.Error("load previous response", "id", id, "err", err)
		return nil, 0, api.StoreError(err, "The stored response could not be read")
	}
	bytes := 0
	decode := func(in []store.Item) ([]ctxItem, *api.Error) {
		out := make([]ctxItem, len(in))
		for i, si := range in {
			bytes += len(si.JSON)
			it, err := api.DecodeItem(si.JSON, "stored")
			if err != nil {
				return nil, api.ServerError("Stored response %s is unreadable.", id)
			}
			out[i] = ctxItem{Item: it, key: si.Key}
		}
		return out, nil
	}
	p := &ChainState{id: r.ID, stored: true}
	var e2 *api.Error
	if p.context, e2 = decode(r.Context); e2 != nil {
		return nil, bytes, e2
	}
	if p.output, e2 = decode(r.Output); e2 != nil {
		return nil, bytes, e2
	}
	return p, bytes, nil
}

// buildContext builds the context and checks the new items against it.
func (e *Engine) buildContext(ctx context.Context, fl *Flight) *api.Error {
	p := fl.loaded.parent
	if p != nil {
		fl.built.context = make([]ctxItem, 0, len(p.context)+len(p.output)+len(fl.parsed.items))
		fl.built.context = append(fl.built.context, p.context...)
		fl.built.context = append(fl.built.context, p.output...)
	} else {
		fl.built.context = make([]ctxItem, 0, len(fl.parsed.items))
	}
	fl.built.inputStart = len(fl.built.context)
	var err *api.Error
	if fl.built.context, err = e.admitItems(ctx, fl.built.context, fl.parsed.items); err != nil {
		return err
	}
	if err := e.checkReasoningBlobs(fl.parsed.items); err != nil {
		return err
	}
	return checkCallPairs(fl.built.context, fl.built.inputStart)
}

// checkCallPairs is api.CheckCallPairs over a built context: every tool
// output answers a call, and no call is left unanswered before a new turn.
func checkCallPairs(context []ctxItem, inputStart int) *api.Error {
	items := make([]api.Item, len(context))
	for i := range context {
		items[i] = context[i].Item
	}
	return api.CheckCallPairs(items, inputStart)
}

// admitItems appends items to chain, each item_reference resolved (against
// chain as it grows, then the engine's output items). On an error the
// caller keeps its chain.
func (e *Engine) admitItems(ctx context.Context, chain []ctxItem, items []api.Item) ([]ctxItem, *api.Error) {
	for i := range items {
		it := items[i]
		var key int64
		if it.Type == api.TypeItemReference {
			ref, k, err := e.resolveReference(ctx, chain, it.ID, i)
			if err != nil {
				return nil, err
			}
			it, key = ref, k
		}
		chain = append(chain, ctxItem{Item: it, key: key})
	}
	return chain, nil
}

// resolveReference finds an item_reference among the caller's chain first,
// then among the output items this engine created.
func (e *Engine) resolveReference(ctx context.Context, chain []ctxItem, id string, index int) (api.Item, int64, *api.Error) {
	for j := len(chain) - 1; j >= 0; j-- {
		if chain[j].ID == id && chain[j].Type != api.TypeItemReference {
			return chain[j].Item, chain[j].key, nil
		}
	}
	if e.sh.Store != nil {
		si, err := e.sh.Store.FindOutputItem(ctx, id)
		if err == nil {
			it, derr := api.DecodeItem(si.JSON, "stored")
			if derr == nil {
				return it, si.Key, nil
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return api.Item{}, 0, api.StoreError(err, "The referenced item could not be read")
		}
	}
	return api.Item{}, 0, api.BadRequest("input", api.CodeInvalidValue,
		"Item with id '%s' not found (input[%d] is an item_reference).", id, index)
}

func seedOf(req *api.CreateRequest) int64 {
	if s, ok := req.Metadata["agentloop_seed"]; ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return 0
}
