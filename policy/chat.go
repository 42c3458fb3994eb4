package policy

import (
	"encoding/json"
	"fmt"
	"iter"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"agentloop/inference"
)

// NewChatPolicy returns the general-purpose policy. Its replies are
// deterministic for the seed and the input:
//   - with tools offered and the last user message asking for an
//     action that matches a tool (or tool_choice "required" or a forced
//     function), it calls the tool with arguments that satisfy the tool's
//     schema (see argumentsFor for the supported subset), or a custom
//     tool with an input its grammar accepts (customInput); a custom tool
//     with a grammar is called only when tool_choice names it;
//   - with text.format json_schema, the message is JSON valid against
//     the schema (structuredOutput); with json_object, a JSON object;
//   - after tool outputs, it answers with text that mentions their values;
//   - otherwise it writes a few sentences (up to about 150 tokens) that
//     refer to the user's question.
//
// With tool_choice "none" it never calls. ExactTokens > 0 always gives one
// message of exactly that many tokens.
func NewChatPolicy(tok *inference.Tokenizer) Policy {
	c := &chatPolicy{tok: tok, sentencePieces: make([][]string, len(bodySentences))}
	for i, s := range bodySentences {
		c.sentencePieces[i] = tok.Pieces(" " + s)
	}
	return c
}

type chatPolicy struct {
	tok *inference.Tokenizer
	// sentencePieces are the token pieces of each body sentence led by its
	// space. The bank is fixed, so it is tokenized once, here, and not in
	// every reply. A sentence's pieces are the same inside a reply: the
	// split pattern starts a new chunk at a space that follows a non-space
	// and precedes one, and every reply's text before it ends in one.
	sentencePieces [][]string
}

// maxChatTokens bounds a free-form chat reply.
const maxChatTokens = 150

func (c *chatPolicy) Respond(req *Request) Reply {
	question := lastUserText(req.Items)
	h := inference.HashStrings(uint64(req.Seed), req.Instructions, question, fmt.Sprint(len(req.Items)))
	if req.ExactTokens > 0 {
		base, basePieces := c.compose(req, question, h)
		head, pieces, filler := exactPieces(c.tok, base, basePieces, req.ExactTokens)
		return Reply{Items: []OutputItem{{Type: OutputMessage, Text: head, Pieces: pieces, Filler: filler}}}
	}
	if tool, ok := chooseTool(req, question); ok {
		if tool.Type == ToolCustom {
			return Reply{Items: []OutputItem{{
				Type:      OutputCustomToolCall,
				Name:      tool.Name,
				Namespace: tool.Namespace,
				Arguments: customInput(tool, question, h),
			}}}
		}
		return Reply{Items: []OutputItem{{
			Type:      OutputFunctionCall,
			Name:      tool.Name,
			Namespace: tool.Namespace,
			Arguments: argumentsFor(tool.Parameters, question, h),
		}}}
	}
	switch req.Format.Type {
	case FormatJSONSchema:
		return Reply{Items: []OutputItem{{Type: OutputMessage, Text: structuredOutput(req.Format.Schema, question, h)}}}
	case FormatJSONObject:
		text, _ := c.compose(req, question, h)
		return Reply{Items: []OutputItem{{Type: OutputMessage, Text: jsonObjectReply(text, question)}}}
	}
	text, pieces := c.compose(req, question, h)
	return Reply{Items: []OutputItem{{Type: OutputMessage, Text: text, Pieces: pieces}}}
}

// compose writes the reply text: an answer built on tool outputs when they
// end the conversation, else a short reply about the question. It returns
// the text's token pieces when it knows them (nil otherwise).
func (c *chatPolicy) compose(req *Request, question string, h uint64) (string, []string) {
	if outs := trailingOutputs(req.Items); len(outs) > 0 {
		return answerFromOutputs(outs, question, h), nil
	}
	return c.chatReply(question, h)
}

// chooseTool decides whether to call a tool, and which.
func chooseTool(req *Request, question string) (Tool, bool) {
	if len(req.Tools) == 0 {
		return Tool{}, false
	}
	switch req.ToolChoice {
	case "none":
		return Tool{}, false
	case "", "auto":
		if req.ToolTurns > 0 {
			return keepCalling(req, question)
		}
		if trailingOutputs(req.Items) != nil {
			return Tool{}, false // the outputs are in: answer with them
		}
		return bestTool(pickable(req.Tools), question, 2)
	case "required":
		tools := pickable(req.Tools)
		if t, ok := bestTool(tools, question, 1); ok {
			return t, true
		}
		if len(tools) > 0 {
			return tools[0], true
		}
		return req.Tools[0], true // only grammar tools: a call is required
	default:
		for _, t := range req.Tools {
			if t.Name == req.ToolChoice || (t.Namespace != "" && t.Namespace+"."+t.Name == req.ToolChoice) {
				return t, true
			}
		}
		// An unknown forced name is the engine's to reject; behave as "auto".
		return chooseTool(&Request{Items: req.Items, Tools: req.Tools, ToolChoice: "auto"}, question)
	}
}

// keepCalling is a scope's K (Request.ToolTurns): a function tool, the
// best match for the question else the first, until the context holds K
// tool outputs; then no call, so the reply answers with the outputs.
func keepCalling(req *Request, question string) (Tool, bool) {
	outputs := 0
	for _, it := range req.Items {
		if isOutput(it) {
			outputs++
		}
	}
	if outputs >= req.ToolTurns {
		return Tool{}, false
	}
	var functions []Tool
	for _, t := range req.Tools {
		if t.Type == ToolFunction || t.Type == "" {
			functions = append(functions, t)
		}
	}
	if len(functions) == 0 {
		return Tool{}, false
	}
	if t, ok := bestTool(functions, question, 1); ok {
		return t, true
	}
	return functions[0], true
}

// pickable are the tools the policy may pick on its own: every one but a
// custom tool with a grammar, which is called only when tool_choice
// names it.
func pickable(tools []Tool) []Tool {
	for i, t := range tools {
		if t.Grammar != nil {
			out := append([]Tool(nil), tools[:i]...)
			for _, t := range tools[i+1:] {
				if t.Grammar == nil {
					out = append(out, t)
				}
			}
			return out
		}
	}
	return tools
}

// bestTool scores each tool by the question's words that appear in its name
// (2 points each) and description (1 point each) and returns the best tool
// that reaches minScore; ties go to the earlier tool.
func bestTool(tools []Tool, question string, minScore int) (Tool, bool) {
	asked := make(map[string]bool)
	for w := range contentWords(question) {
		asked[w] = true
	}
	best, bestScore := -1, 0
	for i, t := range tools {
		score := 0
		seen := make(map[string]bool)
		for w := range contentWords(splitIdentifier(t.Name)) {
			if asked[w] && !seen[w] {
				seen[w] = true
				score += 2
			}
		}
		for w := range contentWords(t.Description) {
			if asked[w] && !seen[w] {
				seen[w] = true
				score++
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 || bestScore < minScore {
		return Tool{}, false
	}
	return tools[best], true
}

// splitIdentifier turns get_weather, getWeather and get-weather into
// "get weather".
func splitIdentifier(name string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.':
			b.WriteByte(' ')
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	return b.String()
}

// stopWords carry no intent: matching them would call a tool for any question.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by can could do does for from get give how i in is it
		its me my of on or please set should tell than that the this to use using was what when where which who
		why will with would you your current given returns return value tool function call some any about like
		need want show let us we our there their them then into one all just also new make`) {
		stopWords[w] = true
	}
}

// contentWords returns the lowercased, lightly stemmed words of s that are
// not stop words.
//
// They are yielded one at a time, not collected: a 14 MiB tool
// description or question would otherwise cost a string header per word.
func contentWords(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for f := range strings.FieldsFuncSeq(strings.ToLower(s), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			if len(f) < 2 || stopWords[f] {
				continue
			}
			w := stem(f)
			if syn, ok := synonyms[w]; ok {
				w = syn
			}
			if !yield(w) {
				return
			}
		}
	}
}

// synonyms map a few words of requests to the word tools use for them.
var synonyms = map[string]string{
	"look": "search", "lookup": "search", "find": "search", "google": "search", "browse": "search",
	"open": "read", "view": "read",
	"forecast": "weather", "temperature": "weather", "rain": "weather",
	"execute": "run", "launch": "run",
}

// stem strips common English suffixes so "files" matches "file" and
// "searching" matches "search".
func stem(w string) string {
	for _, suf := range []string{"ing", "ies", "es", "ed", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			w = strings.TrimSuffix(w, suf)
			if suf == "ies" {
				w += "y"
			}
			return w
		}
	}
	return w
}

// topicOf returns the question's first sentence, at most 14 words, without
// its closing punctuation: the phrase a reply refers back to.
func topicOf(question string) string {
	// Its first 15 words decide it: a terminator within them cuts there,
	// and without one the topic is their first 14 words, as with all the
	// words (a long question is not split whole).
	var first []string
	for w := range strings.FieldsSeq(question) {
		if first = append(first, w); len(first) == 15 {
			break
		}
	}
	q := strings.Join(first, " ")
	if i := strings.IndexAny(q, "?!.\n"); i > 0 {
		q = q[:i]
	}
	if words := strings.Fields(q); len(words) > 14 {
		q = strings.Join(words[:14], " ") + "…"
	}
	return strings.TrimRight(q, " ,;:")
}

var openings = []string{
	"You asked: %q.",
	"On %q, here is a short answer.",
	"Good question: %q.",
	"Let me take %q step by step.",
	"Regarding %q, a few points stand out.",
}

var bodySentences = []string{
	"The short version is that it depends on the context, but a few principles hold in most cases.",
	"Start with the simplest approach that could work, then measure before changing anything.",
	"The details matter here, so it helps to check the assumptions one at a time.",
	"A common mistake is to optimize the wrong part first; look at where the time actually goes.",
	"If you share more detail about your setup, I can give a more specific answer.",
	"In practice, most people find that a small, focused change is easier to verify and to undo.",
	"It is worth writing down what you expect to happen before you try it, so surprises are easy to spot.",
	"There are trade-offs: the faster option usually costs some flexibility later.",
	"One useful check is to reproduce the behaviour with the smallest possible example.",
	"The documentation covers the edge cases well, and it is the best place to confirm the exact rules.",
	"Keep an eye on the boundary cases, because that is where behaviour tends to differ.",
	"Once the basic version works, you can refine it with real numbers from your own runs.",
	"As a rule of thumb, prefer the option you can explain in one sentence.",
	"That should cover the essentials; the rest is mostly tuning.",
}

// chatReply writes a few sentences about the question, up to about
// maxChatTokens tokens; the length and the sentences vary with h.
// Only the opening, which quotes the question, is tokenized per reply; it
// returns the reply's pieces with its text.
func (c *chatPolicy) chatReply(question string, h uint64) (string, []string) {
	var b strings.Builder
	if topic := topicOf(question); topic != "" {
		fmt.Fprintf(&b, openings[inference.Splitmix64(h)%uint64(len(openings))], topic)
	} else {
		b.WriteString("Hello! How can I help you today?")
	}
	budget := 20 + int(inference.Splitmix64(h^1)%uint64(maxChatTokens-30))
	pieces := c.tok.Pieces(b.String())
	// Every opening ends in punctuation, so the sentences' own pieces hold
	// after it (see sentencePieces); a text that did not would be
	// tokenized whole instead.
	known := b.Len() > 0 && !isSpace(b.String()[b.Len()-1])
	start := int(inference.Splitmix64(h^2) % uint64(len(bodySentences)))
	step := 1 + int(inference.Splitmix64(h^3)%3) // a few different walks through the bank
	for i := 0; i < len(bodySentences) && len(pieces) < budget; i++ {
		k := (start + i*step) % len(bodySentences)
		sp := c.sentencePieces[k]
		if len(pieces)+len(sp) > maxChatTokens {
			break
		}
		b.WriteByte(' ')
		b.WriteString(bodySentences[k])
		pieces = append(pieces, sp...)
	}
	if !known {
		return b.String(), nil
	}
	return b.String(), pieces
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// answerFromOutputs writes the reply that follows tool outputs: it names each
// tool and the values its output carried.
func answerFromOutputs(outs []answeredCall, question string, h uint64) string {
	var b strings.Builder
	for i, o := range outs {
		if i == 4 {
			fmt.Fprintf(&b, " %d more results came back as well.", len(outs)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		name := o.Name
		if name == "" {
			name = "the tool"
		}
		b.WriteString(describeOutput(name, o.Output))
	}
	closings := []string{
		"Let me know if you want more detail.",
		"That should answer %q.",
		"So, to your question %q: the results above are the answer.",
		"I can look further if anything seems off.",
	}
	closing := closings[inference.Splitmix64(h^4)%uint64(len(closings))]
	if strings.Contains(closing, "%q") {
		topic := topicOf(question)
		if topic == "" {
			closing = closings[0]
		} else {
			closing = fmt.Sprintf(closing, topic)
		}
	}
	return b.String() + " " + closing
}

// describeOutput turns one tool output into a sentence that quotes its values.
func describeOutput(name, output string) string {
	output = strings.TrimSpace(output)
	if output == "" {
		return fmt.Sprintf("%s returned nothing.", name)
	}
	var v any
	if json.Unmarshal([]byte(output), &v) == nil {
		switch v := v.(type) {
		case map[string]any:
			if len(v) == 0 {
				return fmt.Sprintf("%s returned an empty result.", name)
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var facts []string
			for _, k := range keys[:min(len(keys), 6)] {
				facts = append(facts, fmt.Sprintf("%s is %s", k, describeValue(v[k])))
			}
			return fmt.Sprintf("According to %s, %s.", name, strings.Join(facts, ", "))
		case []any:
			if len(v) == 0 {
				return fmt.Sprintf("%s returned no results.", name)
			}
			return fmt.Sprintf("%s returned %d result(s); the first is %s.", name, len(v), describeValue(v[0]))
		default:
			return fmt.Sprintf("%s returned %s.", name, describeValue(v))
		}
	}
	first, _, _ := strings.Cut(output, "\n")
	return fmt.Sprintf("%s returned: %q.", name, truncateRunes(first, 200))
}

// describeValue renders a JSON value for a sentence: scalars as they are,
// containers by their size.
func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", truncateRunes(v, 120))
	case map[string]any:
		return fmt.Sprintf("an object with %d field(s)", len(v))
	case []any:
		return fmt.Sprintf("a list of %d item(s)", len(v))
	default:
		raw, _ := json.Marshal(v)
		return string(raw)
	}
}

// truncateRunes cuts s to at most n runes, marking the cut with "…".
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	// Copy n-1 runes rather than convert all of s to runes: s may be a
	// tool output of many megabytes. An invalid byte is one rune, U+FFFD,
	// as in a conversion.
	var b []byte
	for _, r := range s {
		if n--; n == 0 {
			break
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b) + "…"
}
