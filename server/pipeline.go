package server

import (
	"context"
	"errors"
	"strconv"
	"time"

	"agentloop/api"
	"agentloop/policy"
	"agentloop/store"
)

// ctxItem is an item of a reconstructed context; key is its store key once
// it has been stored (0 before).
type ctxItem struct {
	api.Item
	key int64
}

// chainState is everything known about a finished response that a
// continuation needs: what the connection cache holds for WebSocket, and
// what a store load rebuilds (without tokens) for everyone else.
type chainState struct {
	id       string
	response *api.Response
	context  []ctxItem // the full input context
	output   []ctxItem
	stored   bool

	// Present only for state this engine built in memory: the resolved
	// model, the instructions, and the rendered tokens of context+output.
	// A state hydrated from the store has none of them.
	model        *resolvedModel
	instructions string
	tokens       []int
	callIDs      map[string]struct{}
}

// turn is one request going through the pipeline. The transport fills in
// trace, body, cached and admit; the stages fill in the rest.
type flight struct {
	trace  *trace
	body   []byte      // the request, until parse has decoded it
	cached *chainState // the connection's latest response, or nil; only read
	// admit applies a transport's own rules to the decoded envelope, within
	// parse (WebSocket: the message type; nil for HTTP).
	admit func(*api.CreateRequest) *api.Error
	// parsed, when set, runs once parse has succeeded, between its span and
	// the next (outside every span): HTTP reports its turn in flight there,
	// once the body has named its session.
	parsed func()

	req      *api.CreateRequest
	newItems []api.Item

	partition  string
	model      *resolvedModel
	parent     *chainState
	context    []ctxItem
	inputStart int
	fresh      int // set by render: the first context item rendered anew, and classified
	callIDs    map[string]struct{}
	tokens     []int
	seed       int64
	safety     []SafetyFlag
	response   *api.Response

	// The modelled API stack this request runs under, and the work its
	// stages are costed on: a resolved-model cache miss, the bytes of a
	// parent loaded from the store, the tokens rendered (and so classified)
	// anew.
	stack         api.Stack
	resolvedCold  bool
	loadedBytes   int
	renderedFresh int

	// For the trace's Shape: each context item's rendered tokens from
	// fresh on, and the instructions' (-1 when a parent held them).
	itemTokens         []int
	instructionsTokens int

	stream  streamed // how streaming ended, for finalize
	outcome outcome  // set by finalize

	// The prototype (prototype.go): the connection a paused response waits on
	// for response.append (nil elsewhere), and the segments so far.
	proto *wsConn
	seg   segments
}

// stage is one step of the pipeline and the span it records. A measured
// stage's span is the wall time of run; a modelled stage (a hop of a
// modelled API stack) reports its duration as stageResult.cost.
type stage struct {
	name string
	kind string // api.Measured or api.Modelled
	run  func(e *Engine, ctx context.Context, fl *flight) (stageResult, *api.Error)
}

// stageResult is what a stage reports for its span.
type stageResult struct {
	items, tokens, bytes int
	note                 string
	cost                 time.Duration // a modelled stage's duration
	skip                 bool          // the stage did no work and records no span
}

// addNote appends s to the span's note.
func (r *stageResult) addNote(s string) {
	if r.note != "" {
		r.note += "; "
	}
	r.note += s
}

// The stages, in order (docs/decisions.md, "Stage order"). A new stage is
// one line here; queue, prefill and generate (modelled, paced by the
// scheduler) run between the two lists, in generate.
var (
	preInference = []stage{
		{api.StageParse, api.Measured, (*Engine).parse},
		{api.StageResolve, api.Measured, (*Engine).resolve},
		{api.StageStackConfigHop, api.Modelled, (*Engine).stackConfigHop},
		{api.StageStackSprintHops, api.Modelled, (*Engine).stackSprintHops},
		{api.StageLoad, api.Measured, (*Engine).load},
		{api.StageStackStateLoad, api.Modelled, (*Engine).stackStateLoad},
		{api.StageValidate, api.Measured, (*Engine).validate},
		{api.StageRender, api.Measured, (*Engine).render},
		{api.StageSafety, api.Measured, (*Engine).classify},
		{api.StageStackClassify, api.Modelled, (*Engine).stackClassify},
	}
	postInference = []stage{
		{api.StageFinalize, api.Measured, (*Engine).finalize},
		{api.StageStackBilling, api.Modelled, (*Engine).stackBilling},
	}
)

// runStages runs stages in order and records each one's span, a failing
// stage's included; it stops at the first error. The first span starts at
// from, and each next one where the one before it ended.
func (e *Engine) runStages(ctx context.Context, fl *flight, stages []stage, from time.Time) *api.Error {
	for i := range stages {
		s := &stages[i]
		res, err := s.run(e, ctx, fl)
		if res.skip {
			continue
		}
		if s.kind == api.Modelled && err == nil {
			// A stage cut short records what it really waited.
			res.cost, err = e.waitModelled(ctx, s.name, res.cost)
		}
		from = fl.trace.record(s, from, &res)
		if err != nil {
			return err
		}
		if s.name == api.StageParse && fl.parsed != nil {
			fl.parsed()
			from = time.Now()
		}
	}
	return nil
}

// prepare runs the pre-inference stages, from the request's first byte to
// a turn ready for the scheduler.
func (e *Engine) prepare(ctx context.Context, fl *flight) *api.Error {
	return e.runStages(ctx, fl, preInference, fl.trace.start)
}

// parse decodes the body: the envelope and the items it carries.
func (e *Engine) parse(_ context.Context, fl *flight) (stageResult, *api.Error) {
	res := stageResult{bytes: len(fl.body)}
	req, err := api.DecodeCreate(fl.body)
	if err != nil {
		return res, err
	}
	fl.partition = req.PromptCacheKey // names the session even if the input is bad
	items, err := req.DecodeInput()
	res.items = len(items)
	if err != nil {
		return res, err
	}
	fl.body = nil
	fl.req, fl.newItems = req, items
	fl.seed = seedOf(req)
	if fl.admit != nil {
		err = fl.admit(req)
	}
	return res, err
}

// resolve finds the model configuration, reused from the connection's
// latest response when that was resolved for the same model and tools.
func (e *Engine) resolve(_ context.Context, fl *flight) (stageResult, *api.Error) {
	req, c := fl.req, fl.cached
	if c != nil && req.PreviousResponseID == c.id && c.model != nil &&
		c.model.model == req.Model && c.model.toolsRaw == string(req.Tools) && c.model.partition == fl.partition {
		fl.model = c.model
		e.sh.Metrics.cacheLookup("connection_model", true)
		return stageResult{note: "connection cache"}, nil
	}
	m, hit, err := e.resolveModel(fl.partition, req)
	if err != nil {
		return stageResult{bytes: len(req.Tools)}, err
	}
	fl.model, fl.resolvedCold = m, !hit
	if e.models != nil {
		e.sh.Metrics.cacheLookup("config", hit)
	}
	res := stageResult{items: len(m.tools), tokens: len(m.toolTokens), bytes: len(req.Tools)}
	if hit {
		res.note = "config cache"
	}
	return res, nil
}

// load finds the parent, in the connection cache or the store.
func (e *Engine) load(ctx context.Context, fl *flight) (stageResult, *api.Error) {
	id, c := fl.req.PreviousResponseID, fl.cached
	if id == "" {
		return stageResult{}, nil
	}
	evicted := c != nil && c.id == id && e.evictDrill(fl)
	if evicted {
		c = nil // evict-cache: the connection forgets its cached response
	}
	if c != nil {
		e.sh.Metrics.cacheLookup("connection", c.id == id)
		if c.id == id {
			fl.parent = c
			return stageResult{note: "connection cache"}, nil
		}
	}
	p, n, err := e.hydrate(ctx, id)
	res := stageResult{items: len(p.contextOrNil()) + len(p.outputOrNil()), bytes: n}
	if err != nil {
		if evicted {
			drillError(err, api.DrillEvictCache)
		}
		return res, err
	}
	fl.parent, fl.loadedBytes = p, n
	res.note = "store"
	return res, nil
}

// validate expands item references and checks that every tool output
// answers a call, over the items that are new to this engine.
func (e *Engine) validate(ctx context.Context, fl *flight) (stageResult, *api.Error) {
	if err := e.buildContext(ctx, fl); err != nil {
		return stageResult{items: len(fl.newItems)}, err
	}
	return stageResult{items: len(fl.context) - fl.freshFrom()}, nil
}

// render tokenizes instructions, tools and context. A parent built in
// memory with the same instructions and tools already holds them.
func (e *Engine) render(ctx context.Context, fl *flight) (stageResult, *api.Error) {
	instructions := fl.instructions()
	p := fl.parent
	var res stageResult
	var hits int
	var err error
	if p != nil && p.tokens != nil && p.model == fl.model && p.instructions == instructions {
		fl.fresh = fl.freshFrom()
		fl.itemTokens, fl.instructionsTokens = make([]int, len(fl.context)-fl.fresh), -1
		fl.tokens, hits, err = e.renderItemsCounted(ctx, p.tokens, fl.partition, fl.context[fl.fresh:], fl.itemTokens)
		res = stageResult{items: len(fl.context) - fl.fresh, tokens: len(fl.tokens) - len(p.tokens), note: "appended to cached tokens"}
	} else {
		fl.fresh = 0
		fl.itemTokens = make([]int, len(fl.context))
		toks := make([]int, 0, len(fl.model.toolTokens)+64*len(fl.context))
		if instructions != "" {
			toks, err = e.sh.Tokenizer.AppendEncodeWrapped(ctx, toks, "<|start|>system<|message|>", instructions, "<|end|>")
		}
		fl.instructionsTokens = len(toks)
		if err == nil {
			toks = append(toks, fl.model.toolTokens...)
			toks, hits, err = e.renderItemsCounted(ctx, toks, fl.partition, fl.context, fl.itemTokens)
		}
		fl.tokens = toks
		res = stageResult{items: len(fl.context), tokens: len(toks)}
	}
	if err != nil {
		return res, clientGone()
	}
	if hits > 0 {
		res.addNote(strconv.Itoa(hits) + " token cache hits")
	}
	fl.renderedFresh = res.tokens
	return res, nil
}

// classify runs the safety classifier over what render rendered anew: it
// reads what it has not read before.
func (e *Engine) classify(ctx context.Context, fl *flight) (stageResult, *api.Error) {
	instructions := fl.instructions()
	texts := make([]string, 0, len(fl.context)-fl.fresh+1)
	if fl.fresh == 0 && instructions != "" {
		texts = append(texts, instructions)
	}
	for i := fl.fresh; i < len(fl.context); i++ {
		texts = append(texts, fl.context[i].Text())
	}
	flags, n, err := e.safety.Scan(ctx, texts)
	fl.safety = flags
	res := stageResult{items: len(texts), bytes: n}
	if err != nil {
		return res, clientGone()
	}
	if len(flags) > 0 {
		res.note = strconv.Itoa(len(flags)) + " flags: " + flags[0].Kind
	}
	return res, nil
}

func (fl *flight) instructions() string {
	if fl.req.Instructions != nil {
		return *fl.req.Instructions
	}
	return ""
}

// freshFrom is the index of the first context item this engine has not
// already rendered and classified: the new input after an in-memory parent,
// or 0 when the whole context must be processed.
func (fl *flight) freshFrom() int {
	if fl.parent != nil && fl.parent.tokens != nil {
		return fl.inputStart
	}
	return 0
}

func (p *chainState) contextOrNil() []ctxItem {
	if p == nil {
		return nil
	}
	return p.context
}

func (p *chainState) outputOrNil() []ctxItem {
	if p == nil {
		return nil
	}
	return p.output
}

// hydrate loads a stored response and decodes its items.
func (e *Engine) hydrate(ctx context.Context, id string) (*chainState, int, *api.Error) {
	if e.sh.Store == nil {
		return nil, 0, api.PreviousResponseNotFound(id)
	}
	r, err := e.sh.Store.GetResponse(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, api.PreviousResponseNotFound(id)
	}
	if err != nil {
		e.sh.Log.Error("load previous response", "id", id, "err", err)
		return nil, 0, retryLater(api.Errorf(503, "", api.CodeServerError, "The stored response could not be read; try again."), err)
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
	p := &chainState{id: r.ID, stored: true}
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
func (e *Engine) buildContext(ctx context.Context, fl *flight) *api.Error {
	p := fl.parent
	var callIDs map[string]struct{}
	if p != nil {
		fl.context = make([]ctxItem, 0, len(p.context)+len(p.output)+len(fl.newItems))
		fl.context = append(fl.context, p.context...)
		fl.context = append(fl.context, p.output...)
		if p.callIDs != nil {
			callIDs = p.callIDs
		} else {
			callIDs = map[string]struct{}{}
			for i := range fl.context {
				if fl.context[i].Type == api.TypeFunctionCall {
					callIDs[fl.context[i].CallID] = struct{}{}
				}
			}
		}
	} else {
		fl.context = make([]ctxItem, 0, len(fl.newItems))
		callIDs = map[string]struct{}{}
	}
	fl.inputStart = len(fl.context)
	var err *api.Error
	if fl.context, err = e.admitItems(ctx, fl.context, callIDs, fl.newItems); err != nil {
		return err
	}
	fl.callIDs = callIDs
	return nil
}

// admitItems appends items to chain, each item_reference resolved (against
// chain as it grows, then the engine's output items), and checks that every
// function_call_output answers a call in callIDs, which gains the calls
// among items. On an error callIDs is as it was, and the caller keeps its
// chain.
func (e *Engine) admitItems(ctx context.Context, chain []ctxItem, callIDs map[string]struct{}, items []api.Item) ([]ctxItem, *api.Error) {
	var added []string
	undo := func() {
		for _, id := range added {
			delete(callIDs, id)
		}
	}
	for i := range items {
		it := items[i]
		var key int64
		if it.Type == api.TypeItemReference {
			ref, k, err := e.resolveReference(ctx, chain, it.ID, i)
			if err != nil {
				undo()
				return nil, err
			}
			it, key = ref, k
		}
		switch it.Type {
		case api.TypeFunctionCall:
			if _, ok := callIDs[it.CallID]; !ok {
				added = append(added, it.CallID)
			}
			callIDs[it.CallID] = struct{}{}
		case api.TypeFunctionCallOutput:
			if _, ok := callIDs[it.CallID]; !ok {
				undo()
				return nil, api.BadRequest("input", api.CodeInvalidValue,
					"No tool call found for function call output with call_id %s.", it.CallID)
			}
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
			return api.Item{}, 0, retryLater(api.Errorf(503, "", api.CodeServerError, "The referenced item could not be read; try again."), err)
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

// policyRequest is what the model sees.
func (fl *flight) policyRequest() *policy.Request {
	pr := &policy.Request{Tools: fl.model.tools, ToolChoice: fl.req.ToolChoiceName(), Seed: fl.seed, Metadata: fl.req.Metadata}
	if fl.req.Instructions != nil {
		pr.Instructions = *fl.req.Instructions
	}
	pr.Items = make([]policy.Item, len(fl.context))
	for i := range fl.context {
		it := &fl.context[i].Item
		pr.Items[i] = policy.Item{Type: it.Type, Role: it.Role, Name: it.Name, Arguments: it.Arguments,
			CallID: it.CallID, Namespace: it.Namespace}
		switch it.Type {
		case api.TypeMessage:
			pr.Items[i].Text = it.Text()
		case api.TypeFunctionCallOutput:
			pr.Items[i].Output = it.Text()
		}
	}
	if fl.req.IgnoreEOS && fl.req.MaxOutputTokens != nil {
		pr.ExactTokens = *fl.req.MaxOutputTokens
	}
	return pr
}
