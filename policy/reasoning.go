package policy

import "strings"

// withReasoningSummary gives a reply to a request that reasons the summary
// of its reasoning, unless the policy that answered wrote one: every
// policy (chat, scenario, workload) gets the same summary of what it
// decided, written from the reply and the request alone.
func withReasoningSummary(req *Request, reply Reply) Reply {
	if req.Reasoning && reply.ReasoningSummary == "" {
		reply.ReasoningSummary = reasoningSummary(req, reply)
	}
	return reply
}

// reasoningSummary is the summary a reasoning model shows for reply: a
// bold heading that says what it decided, then a sentence on why, as the
// hosted models' summaries read.
func reasoningSummary(req *Request, reply Reply) string {
	var calls []string
	for _, it := range reply.Items {
		if it.Type == OutputFunctionCall || it.Type == OutputCustomToolCall {
			calls = append(calls, "`"+it.Name+"`")
		}
	}
	after := "the request"
	if outs := trailingOutputs(req.Items); len(outs) > 0 {
		after = "the tool output"
		if len(outs) > 1 {
			after = "the tool outputs"
		}
	}
	switch {
	case len(calls) > 0:
		them := "it with the arguments it asks for"
		if len(calls) > 1 {
			them = "them with the arguments they ask for"
		}
		return "**Calling " + joinAnd(calls) + "**\n\nReading " + after +
			", the next step needs " + joinAnd(calls) + ", so I'll call " + them + "."
	case req.Format.Type == FormatJSONSchema || req.Format.Type == FormatJSONObject:
		return "**Writing the JSON reply**\n\nReading " + after +
			", I have what the answer needs, so I'll write it as JSON in the requested format."
	}
	return "**Answering directly**\n\nReading " + after + ", I have what I need, so I'll answer without calling a tool."
}

// joinAnd joins names as a sentence lists them: "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
