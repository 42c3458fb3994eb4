package api

import (
	"bytes"
	"encoding/json"
	"iter"
)

// The scanners below read well-formed JSON (a value json.Unmarshal
// accepted) in one pass, following only strings and nesting: no second
// decode of input the engine has already decoded once.

// topFields yields the top-level fields of a well-formed JSON object: each
// key as written (quoted, escapes kept) and its value's span.
func topFields(obj []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, value []byte) bool) {
		i := 1
		for {
			i = skipSpace(obj, i)
			if i >= len(obj) || obj[i] != '"' {
				return
			}
			end := skipValue(obj, i)
			key := obj[i:end]
			i = skipSpace(obj, end)
			if i >= len(obj) || obj[i] != ':' {
				return
			}
			i = skipSpace(obj, i+1)
			end = skipValue(obj, i)
			if !yield(key, obj[i:end]) {
				return
			}
			i = skipSpace(obj, end)
			if i >= len(obj) || obj[i] != ',' {
				return
			}
			i++
		}
	}
}

// unquote is the JSON string b holds ("" when b is not a string).
func unquote(b []byte) string {
	if len(b) < 2 || b[0] != '"' {
		return ""
	}
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b[1 : len(b)-1])
	}
	var s string
	_ = json.Unmarshal(b, &s)
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the well-formed JSON value starting at i.
func skipValue(b []byte, i int) int {
	depth, inString := 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
				if depth == 0 {
					return i + 1
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i // the end of the enclosing value
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return i
		}
	}
	return i
}
