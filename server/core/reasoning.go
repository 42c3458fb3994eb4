package core

import (
	"context"
	"strings"

	"agentloop/api"
	"agentloop/policy"
	"agentloop/seal"
)

// Reasoning (docs/protocol.md, "Reasoning items"): a create that asks for
// reasoning.effort gets a reasoning phase before its output. The reasoning
// stage decides that it reasons; plan puts a reasoning item first, of as
// many reasoning tokens as the profile gives the effort for this seed and
// turn (inference.Profile.ReasoningTokens). A replayed workload turn that
// recorded reasoning tokens (policy.Reply.ReasoningTokens) reasons that
// many, whether or not the request names an effort, so that its output
// tokens are the recording's. Those tokens decode through the
// scheduler like any other (inference.Job.ReasoningTokens), count in
// output_tokens and output_tokens_details.reasoning_tokens, and record the
// trace's reasoning span. The policy writes only the summary's text.
//
// A reasoning item's encrypted_content, when include asks for it, is a
// seal blob of the item's tokens (seal.ReasoningPayload) under the
// process's key; one sent back as input must open (validate), or the
// request gets the hosted API's 400. The engine never reads a count out of
// a blob. A reasoning input item renders to no tokens: the model's earlier
// reasoning is not text it reads again.

// reasoningOut is what the reasoning stage decided.
type reasoningOut struct {
	on     bool          // the response reasons before its output
	asked  api.Reasoning // what reasoning asked for: the effort and the summary
	sealed bool          // include asks for reasoning.encrypted_content
}

// reason is the reasoning stage: whether this create reasons, and how. It
// records no span; the reasoning tokens' decode records the reasoning span.
func (e *Engine) reason(_ context.Context, fl *Flight) (StageResult, *api.Error) {
	req := fl.parsed.req
	asked := req.ReasoningOf()
	fl.reasoning = reasoningOut{on: req.Generates() && asked.Reasons(), asked: asked,
		sealed: req.Includes(api.IncludeReasoningEncryptedContent)}
	return Skip, nil
}

// priorTurns is the number of agent turns before the response in its
// context: the runs of items the model wrote. A client that leaves its
// reasoning items out (or sends them) counts the same turns.
func priorTurns(context []ctxItem) int {
	n := 0
	for i := range context {
		if modelWrote(&context[i].Item) && (i == 0 || !modelWrote(&context[i-1].Item)) {
			n++
		}
	}
	return n
}

// planReasoning is the reasoning item that comes first in a reply, cut to
// limit tokens (limit < 0: none). cut reports that the limit cut it; a
// reasoning item of no tokens is not emitted (ok false).
func (e *Engine) planReasoning(fl *Flight, reply *policy.Reply, limit int) (p plannedItem, ok, cut bool) {
	tokens := reply.ReasoningTokens
	if tokens <= 0 {
		tokens = fl.resolved.model.profile.ReasoningTokens(fl.reasoning.asked.Effort, fl.parsed.seed, priorTurns(fl.built.context))
	}
	if limit >= 0 && tokens > limit {
		tokens, cut = limit, true
	}
	if tokens <= 0 {
		return plannedItem{}, false, cut
	}
	it := api.Item{Type: api.TypeReasoning, ID: api.NewID("rs")}
	if cut {
		it.Status = "incomplete"
	}
	p = plannedItem{item: it, thinking: tokens}
	if summary := reply.ReasoningSummary; fl.reasoning.asked.Summary != "" && summary != "" {
		p.item.Summary = []api.Part{{Type: "summary_text", Text: summary}}
		p.summary = e.sh.Tokenizer.Pieces(summary)
	}
	if fl.reasoning.sealed {
		p.item.EncryptedContent = e.sh.sealer().Seal(seal.KindReasoning, seal.ReasoningPayload(it.ID, tokens))
	}
	return p, true, cut
}

// checkReasoningBlobs opens the encrypted_content of every reasoning item among
// a request's new input items: one this server did not seal under its key,
// or one that was changed, is the hosted API's 400. Items the engine
// already holds (a parent's, the connection cache's) are not opened again.
func (e *Engine) checkReasoningBlobs(items []api.Item) *api.Error {
	for i := range items {
		it := &items[i]
		if it.Type != api.TypeReasoning || it.EncryptedContent == "" {
			continue
		}
		if _, err := e.sh.sealer().Open(seal.KindReasoning, it.EncryptedContent); err != nil {
			return api.InvalidEncryptedContent(it.EncryptedContent)
		}
	}
	return nil
}

// sealerFor is a Sealer and the key it was made for.
type sealerFor struct {
	key    seal.Key
	sealer *seal.Sealer
}

// sealer is the Sealer of SealKey, made once per key (app replaces the key
// at start-up, before serving).
func (s *Shared) sealer() *seal.Sealer {
	if c := s.sealers.Load(); c != nil && c.key == s.SealKey {
		return c.sealer
	}
	c := &sealerFor{key: s.SealKey, sealer: seal.New(s.SealKey)}
	s.sealers.Store(c)
	return c.sealer
}

// rendersNothing says an item adds no tokens to the prompt and nothing for
// the safety classifiers to read: a reasoning item, whose text the model
// does not read again (and whose blob is not text).
func rendersNothing(it *api.Item) bool { return it.Type == api.TypeReasoning }

// The streamer's side of a reasoning item: it opens with summary [], its
// reasoning tokens go out as summary text deltas spread over them (none
// when no summary was asked for), and it closes with the whole summary.

// openReasoning sends output_item.added and, with a summary, its part.
func (s *streamer) openReasoning(idx int, it *api.Item) error {
	started := api.Item{Type: api.TypeReasoning, ID: it.ID}
	s.buf = api.AppendOutputItemEvent(s.buf, api.EventOutputItemAdded, s.seq, idx, &started)
	if err := s.emit(api.EventOutputItemAdded); err != nil {
		return err
	}
	if len(it.Summary) == 0 {
		return nil
	}
	s.buf = api.AppendReasoningSummaryPartEvent(s.buf, api.EventReasoningSummaryPartAdded, s.seq, it.ID, idx, 0, "")
	return s.emit(api.EventReasoningSummaryPartAdded)
}

// think streams n more reasoning tokens of pi: the summary text that falls
// due with them, as one delta.
func (s *streamer) think(pi *plannedItem, n int) error {
	s.reasoned += n
	if s.quiet {
		return nil
	}
	if !s.opened {
		if err := s.openReasoning(s.base+s.cur, &pi.item); err != nil {
			return err
		}
		s.opened = true
	}
	if len(pi.summary) == 0 {
		return nil
	}
	from, to := pi.summaryDue(s.piece), pi.summaryDue(s.piece+n)
	if from == to {
		return nil
	}
	delta := strings.Join(pi.summary[from:to], "")
	if delta == "" {
		return nil // pieces that only complete a split character
	}
	s.buf = api.AppendReasoningSummaryTextDelta(s.buf, s.seq, pi.item.ID, s.base+s.cur, 0, delta)
	return s.emit(api.EventReasoningSummaryTextDelta)
}

// summaryDue is how many summary pieces have gone out once k of the item's
// reasoning tokens have: spread evenly, all of them at the last.
func (p *plannedItem) summaryDue(k int) int {
	return len(p.summary) * k / p.thinking
}

// closeReasoning sends the summary's done events and output_item.done.
func (s *streamer) closeReasoning(idx int, it *api.Item) error {
	if len(it.Summary) > 0 {
		text := it.Summary[0].Text
		s.buf = api.AppendReasoningSummaryTextDone(s.buf, s.seq, it.ID, idx, 0, text)
		if err := s.emit(api.EventReasoningSummaryTextDone); err != nil {
			return err
		}
		s.buf = api.AppendReasoningSummaryPartEvent(s.buf, api.EventReasoningSummaryPartDone, s.seq, it.ID, idx, 0, text)
		if err := s.emit(api.EventReasoningSummaryPartDone); err != nil {
			return err
		}
	}
	s.buf = api.AppendOutputItemEvent(s.buf, api.EventOutputItemDone, s.seq, idx, it)
	return s.emit(api.EventOutputItemDone)
}

// reasoning is the reasoning tokens the planned reply starts with: its
// first item's, when that is a reasoning item.
func (g *streamed) reasoning() int {
	if len(g.items) > 0 {
		return g.items[0].thinking
	}
	return 0
}
