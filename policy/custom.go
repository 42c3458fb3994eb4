package policy

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// customInput writes a custom tool call's input:
//   - for a regex grammar, a string the whole regex matches
//     (matchingString; if the subset cannot build one, h's next values
//     are tried, then "");
//   - for a lark grammar, a short input larkInput builds (its limits are
//     listed there);
//   - for free text, the question's first back-quoted text, else its
//     topic.
func customInput(tool Tool, question string, h uint64) string {
	if g := tool.Grammar; g != nil {
		switch g.Syntax {
		case "regex":
			whole, err := regexp.Compile(`^(?:` + g.Definition + `)$`)
			if err != nil {
				return ""
			}
			for i := range uint64(8) {
				if s, ok := matchingString(g.Definition, h+i); ok && whole.MatchString(s) {
					return s
				}
			}
			return ""
		case "lark":
			return larkInput(g.Definition, h)
		}
	}
	if _, rest, ok := strings.Cut(question, "`"); ok {
		if quoted, _, ok := strings.Cut(rest, "`"); ok && quoted != "" {
			return quoted
		}
	}
	if topic := topicOf(question); topic != "" {
		return topic
	}
	return "example input"
}

// jsonObjectReply is the message for text.format json_object: the reply
// text as a JSON object, with the question it answers.
func jsonObjectReply(text, question string) string {
	v := map[string]string{"answer": text}
	if topic := topicOf(question); topic != "" {
		v["question"] = topic
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings always encode
	return strings.TrimSuffix(buf.String(), "\n")
}
