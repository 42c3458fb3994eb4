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

// turn is one request going through the pipeline.
type turn struct {
	trace     *trace
	req       *api.CreateRequest
	newItems  []api.Item
	bodyBytes int

	partition  string
	model      *resolvedModel
	parent     *chainState
	context    []ctxItem
	inputStart int
	callIDs    map[string]struct{}
	tokens     []int
	seed       int64
	safety     []SafetyFlag
	response   *api.Response
}

// parse decodes a request body: the envelope and the items it carries.
func (e *Engine) parse(t *trace, from time.Time, body []byte) (*api.CreateRequest, []api.Item, *api.Error) {
	req, err := api.DecodeCreate(body)
	if err != nil {
		t.measure(api.StageParse, from, 0, 0, len(body))
		return nil, nil, err
	}
	items, err := req.DecodeInput()
	t.measure(api.StageParse, from, len(items), 0, len(body))
	if err != nil {
		return nil, nil, err
	}
	return req, items, nil
}

// prepare runs resolve, load, validate, render and safety. cached is the
// connection's latest response, or nil; it is only ever read here.
func (e *Engine) prepare(ctx context.Context, t *trace, req *api.CreateRequest, items []api.Item, bodyBytes int, cached *chainState) (*turn, *api.Error) {
	tu := &turn{trace: t, req: req, newItems: items, bodyBytes: bodyBytes, partition: req.PromptCacheKey}
	tu.seed = seedOf(req)

	// resolve: the model configuration, reused from the parent state when
	// it was resolved for the same model and tools.
	from := time.Now()
	if cached != nil && req.PreviousResponseID == cached.id && cached.model != nil &&
		cached.model.model == req.Model && cached.model.toolsRaw == string(req.Tools) && cached.model.partition == tu.partition {
		tu.model = cached.model
		t.measure(api.StageResolve, from, 0, 0, 0)
		t.note("connection cache")
		e.sh.Metrics.cacheLookup("connection_model", true)
	} else {
		m, hit, err := e.resolveModel(tu.partition, req)
		if err != nil {
			t.measure(api.StageResolve, from, 0, 0, len(req.Tools))
			return nil, err
		}
		tu.model = m
		t.measure(api.StageResolve, from, len(m.tools), len(m.toolTokens), len(req.Tools))
		if hit {
			t.note("config cache")
		}
		if e.models != nil {
			e.sh.Metrics.cacheLookup("config", hit)
		}
	}

	// load: the parent, from the connection cache or the store.
	from = time.Now()
	if id := req.PreviousResponseID; id != "" {
		if cached != nil {
			e.sh.Metrics.cacheLookup("connection", cached.id == id)
		}
		if cached != nil && cached.id == id {
			tu.parent = cached
			t.measure(api.StageLoad, from, 0, 0, 0)
			t.note("connection cache")
		} else {
			p, n, err := e.hydrate(ctx, id)
			t.measure(api.StageLoad, from, len(p.contextOrNil())+len(p.outputOrNil()), 0, n)
			if err != nil {
				return nil, err
			}
			tu.parent = p
			t.note("store")
		}
	} else {
		t.measure(api.StageLoad, from, 0, 0, 0)
	}

	// validate: expand item references and check that every tool output
	// answers a call, over the items that are new to this engine.
	from = time.Now()
	if err := e.validate(ctx, tu); err != nil {
		t.measure(api.StageValidate, from, len(items), 0, 0)
		return nil, err
	}
	t.measure(api.StageValidate, from, len(tu.context)-tu.freshFrom(), 0, 0)

	// render: tokens of instructions, tools and context. A parent built in
	// memory with the same instructions and tools already holds them.
	from = time.Now()
	instructions := ""
	if req.Instructions != nil {
		instructions = *req.Instructions
	}
	p := tu.parent
	fresh := tu.freshFrom()
	hits := 0
	if p != nil && p.tokens != nil && p.model == tu.model && p.instructions == instructions {
		tu.tokens, hits = e.renderItems(p.tokens, tu.partition, tu.context[fresh:])
		t.measure(api.StageRender, from, len(tu.context)-fresh, len(tu.tokens)-len(p.tokens), 0)
		t.note("appended to cached tokens")
	} else {
		fresh = 0
		toks := make([]int, 0, len(tu.model.toolTokens)+64*len(tu.context))
		if instructions != "" {
			toks = append(toks, e.sh.Tokenizer.Encode("<|start|>system<|message|>"+instructions+"<|end|>")...)
		}
		toks = append(toks, tu.model.toolTokens...)
		toks, hits = e.renderItems(toks, tu.partition, tu.context)
		tu.tokens = toks
		t.measure(api.StageRender, from, len(tu.context), len(toks), 0)
	}
	if hits > 0 {
		t.note(strconv.Itoa(hits) + " token cache hits")
	}

	// safety: the classifier reads what it has not read before.
	from = time.Now()
	texts := make([]string, 0, len(tu.context)-fresh+1)
	if fresh == 0 && instructions != "" {
		texts = append(texts, instructions)
	}
	for i := fresh; i < len(tu.context); i++ {
		texts = append(texts, tu.context[i].Text())
	}
	flags, n := e.safety.Scan(texts)
	tu.safety = flags
	t.measure(api.StageSafety, from, len(texts), 0, n)
	if len(flags) > 0 {
		t.note(strconv.Itoa(len(flags)) + " flags: " + flags[0].Kind)
	}
	return tu, nil
}

// freshFrom is the index of the first context item this engine has not
// already rendered and classified: the new input after an in-memory parent,
// or 0 when the whole context must be processed.
func (tu *turn) freshFrom() int {
	if tu.parent != nil && tu.parent.tokens != nil {
		return tu.inputStart
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
		return nil, 0, api.Errorf(503, "", "server_error", "The stored response could not be read; try again.")
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

// validate builds the context and checks the new items against it.
func (e *Engine) validate(ctx context.Context, tu *turn) *api.Error {
	p := tu.parent
	var callIDs map[string]struct{}
	if p != nil {
		tu.context = make([]ctxItem, 0, len(p.context)+len(p.output)+len(tu.newItems))
		tu.context = append(tu.context, p.context...)
		tu.context = append(tu.context, p.output...)
		if p.callIDs != nil {
			callIDs = p.callIDs
		} else {
			callIDs = map[string]struct{}{}
			for i := range tu.context {
				if tu.context[i].Type == api.TypeFunctionCall {
					callIDs[tu.context[i].CallID] = struct{}{}
				}
			}
		}
	} else {
		tu.context = make([]ctxItem, 0, len(tu.newItems))
		callIDs = map[string]struct{}{}
	}
	tu.inputStart = len(tu.context)
	var added []string
	for i := range tu.newItems {
		it := tu.newItems[i]
		var key int64
		if it.Type == api.TypeItemReference {
			ref, k, err := e.resolveReference(ctx, tu.context, it.ID, i)
			if err != nil {
				return err
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
				for _, id := range added {
					delete(callIDs, id)
				}
				return api.BadRequest("input", "invalid_value",
					"No tool call found for function call output with call_id %s.", it.CallID)
			}
		}
		tu.context = append(tu.context, ctxItem{Item: it, key: key})
	}
	tu.callIDs = callIDs
	return nil
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
			return api.Item{}, 0, api.Errorf(503, "", "server_error", "The referenced item could not be read; try again.")
		}
	}
	return api.Item{}, 0, api.BadRequest("input", "invalid_value",
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
func (tu *turn) policyRequest() *policy.Request {
	pr := &policy.Request{Tools: tu.model.tools, ToolChoice: tu.req.ToolChoiceName(), Seed: tu.seed}
	if tu.req.Instructions != nil {
		pr.Instructions = *tu.req.Instructions
	}
	pr.Items = make([]policy.Item, len(tu.context))
	for i := range tu.context {
		it := &tu.context[i].Item
		pr.Items[i] = policy.Item{Type: it.Type, Role: it.Role, Name: it.Name, Arguments: it.Arguments,
			CallID: it.CallID, Namespace: it.Namespace}
		switch it.Type {
		case api.TypeMessage:
			pr.Items[i].Text = it.Text()
		case api.TypeFunctionCallOutput:
			pr.Items[i].Output = it.Text()
		}
	}
	if tu.req.IgnoreEOS && tu.req.MaxOutputTokens != nil {
		pr.ExactTokens = *tu.req.MaxOutputTokens
	}
	return pr
}
