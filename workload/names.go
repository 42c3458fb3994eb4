package workload

import (
	"encoding/json"
	"slices"
)

// fieldNames are every field name of the format, at any depth.
var fieldNames = []string{
	"version", "source", "description", "instructions_tokens", "tools_tokens", "tools", "turns",
	"input", "input_tokens", "output_tokens", "reasoning_tokens", "calls", "tool_time_ms", "kind", "tokens", "argument_tokens",
}

// exactNames refuses an object key that is not exactly one of the
// format's field names: encoding/json, which decodes the rest, matches
// names case-insensitively ("VERSION" would pass for "version"). Every
// name is lower case, so a key that encoding/json matched at its depth and
// that is some field name here is that depth's field. It runs once the
// decoder took b, so b is well-formed JSON with no unknown field in any
// case; it reads b once.
func exactNames(b []byte) error {
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		start, escaped := i+1, false
		for i++; i < len(b) && b[i] != '"'; i++ {
			if b[i] == '\\' {
				escaped = true
				i++
			}
		}
		if i >= len(b) {
			return nil
		}
		raw := b[start:i]
		j := i + 1
		for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
			j++
		}
		if j >= len(b) || b[j] != ':' {
			continue // a string value, not a key
		}
		name := string(raw)
		if escaped {
			if err := json.Unmarshal(b[start-1:i+1], &name); err != nil {
				return nil
			}
		}
		if !slices.Contains(fieldNames, name) {
			return errorf(name, "unknown field; field names are matched exactly, in lower case")
		}
	}
	return nil
}
