package policy

import (
	"agentloop/workload"
)

// NewWorkloadPolicy returns the policy that replays a recorded workload: it
// answers each request with the reply its metadata carries
// (workload.ReplyKey): the turn's reasoning tokens (Reply.ReasoningTokens),
// then a message of the tokens the reasoning and the calls leave, then the
// calls, all of workload.Filler. Without the key it says so.
func NewWorkloadPolicy() Policy { return workloadPolicy{} }

type workloadPolicy struct{}

func (workloadPolicy) Respond(req *Request) Reply {
	spec, ok := req.Metadata[workload.ReplyKey]
	if !ok {
		return Reply{Items: []OutputItem{{Type: OutputMessage,
			Text: "This request carries no " + workload.ReplyKey + " metadata, so there is no workload turn to replay."}}}
	}
	return playWorkload(spec, req)
}

// playWorkload answers with exactly the reply's sizes. The pieces are given,
// one filler per token, so the engine's usage counts them as recorded. The
// calls go to the request's first tool (a replay offers one), or to
// "replay" when it offers none.
func playWorkload(spec string, req *Request) Reply {
	r, err := workload.ParseReply(spec)
	if err != nil {
		return Reply{Items: []OutputItem{{Type: OutputMessage, Text: "The workload reply could not be read: " + err.Error()}}}
	}
	name, namespace := "replay", ""
	if len(req.Tools) > 0 {
		name, namespace = req.Tools[0].Name, req.Tools[0].Namespace
	}
	var items []OutputItem
	if n := r.MessageTokens(); n > 0 {
		items = append(items, OutputItem{Type: OutputMessage, Text: workload.Text(n), Pieces: fillerRun(n)})
	}
	for _, a := range r.ArgumentTokens {
		items = append(items, OutputItem{Type: OutputFunctionCall, Name: name, Namespace: namespace,
			Arguments: workload.Text(a), Pieces: fillerRun(a)})
	}
	return Reply{Items: items, ReasoningTokens: r.ReasoningTokens}
}

func fillerRun(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = workload.Filler
	}
	return out
}
