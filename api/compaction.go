package api

import (
	"bytes"
	"encoding/json"
	"math"
)

// Long sessions on the wire (docs/protocol.md, "Context windows" and
// "Compaction"): the compaction item, context_management's threshold, the
// standalone compaction's answer and the context window's error, in the
// shapes of the openai npm package's types (7.59.0).

// TypeCompaction is a compaction item (ResponseCompactionItem): what a
// compaction replaced, as an opaque blob only this server opens
// (encrypted_content, sealed by package seal).
const TypeCompaction = "compaction"

// ContextManagementCompaction is the one context_management entry type
// the SDK declares.
const ContextManagementCompaction = "compaction"

// ObjectCompactedResponse is the object type of POST /v1/responses/compact's
// answer (CompactedResponse).
const ObjectCompactedResponse = "response.compaction"

// CompactedResponse is POST /v1/responses/compact's answer: the kept user
// messages followed by one compaction item, and the compaction pass's usage.
type CompactedResponse struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	Output    []Item `json:"output"`
	Usage     Usage  `json:"usage"`
}

// ContextLengthExceeded is the hosted API's 400 for a prompt over the
// model's context window.
func ContextLengthExceeded() *Error {
	return BadRequest("input", CodeContextLengthExceeded,
		"Your input exceeds the context window of this model. Please adjust your input and try again.")
}

// Compaction is a create's context_management compaction entry: whether
// it has one, and its threshold (0: none given, the model's context
// window is the threshold).
type Compaction struct {
	On        bool
	Threshold int
}

// Compaction reads context_management (the parameter list has held each
// entry to its shape): the compaction entry, and a 400 for a threshold
// that is not a positive whole number of tokens.
func (r *CreateRequest) Compaction() (Compaction, *Error) {
	if len(r.ContextManagement) == 0 {
		return Compaction{}, nil
	}
	var entries []struct {
		Type      string   `json:"type"`
		Threshold *float64 `json:"compact_threshold"`
	}
	if json.Unmarshal(r.ContextManagement, &entries) != nil {
		return Compaction{}, nil // null; a create's parse refused any other shape
	}
	var c Compaction
	for _, e := range entries {
		if e.Type != ContextManagementCompaction {
			continue
		}
		c.On = true
		if t := e.Threshold; t != nil {
			if *t < 1 || *t != math.Trunc(*t) || *t > math.MaxInt32 {
				return Compaction{}, BadRequest("context_management.compact_threshold", CodeInvalidValue,
					"Invalid 'context_management.compact_threshold': expected a whole number of tokens from 1 to %d, got %v.", math.MaxInt32, *t)
			}
			c.Threshold = int(*t)
		}
	}
	return c, nil
}

// compactionKeeps says whether an item stays, as itself, beside the
// compaction item that replaces the rest of a context: the first system or
// developer message (where the scenarios' marker lives) and every user
// message, as the hosted API's compaction keeps the user messages.
func compactionKeeps(it *Item, firstSystem bool) bool {
	return it.Type == TypeMessage && (it.Role == "user" || (firstSystem && (it.Role == "system" || it.Role == "developer")))
}

// CompactionKept marks, for items before a compaction item, which stay
// beside it (compactionKeeps); the rest are what it replaced. The engine's
// compaction and a client pruning its history before a compaction item
// (rollout) use the one rule.
func CompactionKept(items []Item) []bool {
	kept := make([]bool, len(items))
	first := true
	for i := range items {
		it := &items[i]
		kept[i] = compactionKeeps(it, first)
		if it.Type == TypeMessage && (it.Role == "system" || it.Role == "developer") {
			first = false
		}
	}
	return kept
}

// CompactionSummary is what the model reads of a compaction item: its
// opened blob, once the engine has opened it (SetCompactionSummary); ""
// before.
func (it *Item) CompactionSummary() string {
	if len(it.Summary) == 0 {
		return ""
	}
	return it.Summary[0].Text
}

// SetCompactionSummary keeps a compaction item's opened blob.
func (it *Item) SetCompactionSummary(text string) {
	it.Summary = []Part{{Type: "summary_text", Text: text}}
}

// paramsNamed is the create parameters of these names.
func paramsNamed(names ...string) map[string]param {
	m := make(map[string]param, len(names))
	for _, n := range names {
		p, ok := createParams[n]
		if !ok {
			panic("api: no create parameter " + n)
		}
		m[n] = p
	}
	return m
}

// ValidateCompact holds a POST /v1/responses/compact body to the SDK's
// ResponseCompactParams: its parameters only, a model, and input items of
// their shapes.
func ValidateCompact(body []byte) *Error {
	var top map[string]rawSpan
	if err := json.Unmarshal(bytes.TrimSpace(body), &top); err != nil {
		return BadRequest("", CodeInvalidJSON, badJSONMessage)
	}
	if err := checkObject(top, "", compactParams); err != nil {
		return err
	}
	if isNull(json.RawMessage(top["model"])) {
		return MissingParameter("model")
	}
	_, err := checkInput(json.RawMessage(top["input"]))
	return err
}
