package workload

import (
	"fmt"
	"strconv"
	"strings"
)

// Filler is the synthetic content of a replay: one o200k token which,
// repeated, counts one token per repeat, because each repeat starts a new
// chunk of the encoding's split pattern (a server test checks it with the
// engine's tokenizer). So a replaying client needs no tokenizer.
const Filler = " the"

// Text returns n tokens of filler.
func Text(n int) string { return strings.Repeat(Filler, max(n, 0)) }

// ReplyKey is the metadata key a replayed request carries its turn's reply
// in, so that the engine's workload policy answers with the recorded sizes
// from the request alone (docs/workload.md).
const ReplyKey = "agentloop_reply"

// Reply is what one replayed turn's response holds: its output tokens in
// all, the reasoning tokens among them, and each call's argument tokens
// (part of the output).
type Reply struct {
	OutputTokens    int
	ReasoningTokens int
	ArgumentTokens  []int
}

// ReplyOf is turn t's reply.
func ReplyOf(t *Turn) Reply {
	r := Reply{OutputTokens: t.OutputTokens, ReasoningTokens: t.ReasoningTokens}
	for _, c := range t.Calls {
		r.ArgumentTokens = append(r.ArgumentTokens, c.ArgumentTokens)
	}
	return r
}

// MessageTokens is the reply's message part: what the reasoning and the
// arguments leave.
func (r Reply) MessageTokens() int {
	n := r.OutputTokens - r.ReasoningTokens
	for _, a := range r.ArgumentTokens {
		n -= a
	}
	return max(n, 0)
}

// String is the metadata value: "output=120;reasoning=30;calls=35,80",
// "output=120;calls=35,80" for a reply without reasoning, "output=40" for
// one without calls either. Within the bounds it is at most 512
// characters, the API's limit on a metadata value.
func (r Reply) String() string {
	b := strconv.AppendInt([]byte("output="), int64(r.OutputTokens), 10)
	if r.ReasoningTokens > 0 {
		b = append(b, ";reasoning="...)
		b = strconv.AppendInt(b, int64(r.ReasoningTokens), 10)
	}
	if len(r.ArgumentTokens) > 0 {
		b = append(b, ";calls="...)
		for i, a := range r.ArgumentTokens {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(a), 10)
		}
	}
	return string(b)
}

// ParseReply reads a metadata value written by Reply.String, with the
// workload's bounds.
func ParseReply(s string) (Reply, error) {
	var r Reply
	head, calls, hasCalls := strings.Cut(s, ";calls=")
	head, reasoning, hasReasoning := strings.Cut(head, ";reasoning=")
	n, ok := strings.CutPrefix(head, "output=")
	if !ok {
		return r, fmt.Errorf("%s must start with \"output=\"", ReplyKey)
	}
	out, err := strconv.Atoi(n)
	if err != nil || out < 1 || out > MaxItemTokens {
		return r, fmt.Errorf("%s: output must be 1 to %d tokens", ReplyKey, MaxItemTokens)
	}
	r.OutputTokens = out
	if hasReasoning {
		rt, err := strconv.Atoi(reasoning)
		if err != nil || rt < 1 || rt >= out {
			return r, fmt.Errorf("%s: reasoning must be 1 to %d tokens, fewer than the output's", ReplyKey, out-1)
		}
		r.ReasoningTokens = rt
	}
	if hasCalls {
		parts := strings.Split(calls, ",")
		if len(parts) > MaxCallsPerTurn {
			return r, fmt.Errorf("%s: at most %d calls", ReplyKey, MaxCallsPerTurn)
		}
		sum := 0
		for _, p := range parts {
			a, err := strconv.Atoi(p)
			if err != nil || a < 1 || a > MaxItemTokens {
				return r, fmt.Errorf("%s: each call's arguments must be 1 to %d tokens", ReplyKey, MaxItemTokens)
			}
			sum += a
			r.ArgumentTokens = append(r.ArgumentTokens, a)
		}
		if sum+r.ReasoningTokens > out {
			return r, fmt.Errorf("%s: the calls' %d argument tokens and %d reasoning tokens exceed the output's %d", ReplyKey, sum, r.ReasoningTokens, out)
		}
	}
	return r, nil
}

// InputFraming is the most a replayed turn's input_tokens may exceed the
// sum of its parts (instructions, tools, every earlier input and output,
// its own new input): the engine renders each item with a few tokens of
// framing (role, type, call id), the tool definition with its name and
// schema. docs/workload.md states the same bound.
func InputFraming(w *Workload, i int) int {
	items := 1 // the instructions (developer message)
	for j := 0; j <= i && j < len(w.Turns); j++ {
		items += len(w.Turns[j].Input)
		if j < i {
			items += len(w.Turns[j].Calls) + 1 // the calls and a message
		}
	}
	return FramingFixed + FramingPerItem*items
}

// The framing bound's parts (see InputFraming).
const (
	FramingFixed   = 64
	FramingPerItem = 48
)
