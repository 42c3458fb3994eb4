package policy

import (
	"testing"

	"agentloop/workload"
)

// TestWorkloadPolicyReplaysReasoning: a replayed turn's reasoning tokens
// go to Reply.ReasoningTokens, and the message holds what the reasoning
// and the calls leave of the output.
func TestWorkloadPolicyReplaysReasoning(t *testing.T) {
	for _, c := range []struct {
		reply             workload.Reply
		reasoning, filler int
	}{
		{workload.Reply{OutputTokens: 40, ArgumentTokens: []int{10}}, 0, 30},
		{workload.Reply{OutputTokens: 40, ReasoningTokens: 25, ArgumentTokens: []int{10}}, 25, 5},
		{workload.Reply{OutputTokens: 40, ReasoningTokens: 30, ArgumentTokens: []int{10}}, 30, 0},
	} {
		req := &Request{Metadata: map[string]string{workload.ReplyKey: c.reply.String()}}
		got := NewWorkloadPolicy().Respond(req)
		message := 0
		if got.Items[0].Type == OutputMessage {
			message = len(got.Items[0].Pieces)
		}
		if got.ReasoningTokens != c.reasoning || message != c.filler || got.Items[len(got.Items)-1].Type != OutputFunctionCall {
			t.Errorf("%s: reasoning %d, message %d tokens, items %+v", c.reply, got.ReasoningTokens, message, got.Items)
		}
	}
}
