package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ToolDef is a function tool the agent may call. Parameters is a JSON Schema
// object (type object, properties, required, additionalProperties false).
type ToolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// ToolCall is one function call as the model emits it.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON object as text
}

// Tool names shared by every scenario.
const (
	ToolListFiles  = "list_files"
	ToolReadFile   = "read_file"
	ToolSearch     = "search"
	ToolApplyPatch = "apply_patch"
	ToolRunTests   = "run_tests"
)

// Bounds on untrusted arguments. They keep a hostile caller from making a
// tool call cost more than a real agent's call would.
const (
	maxArgumentBytes = 1 << 20 // whole arguments text
	maxPathBytes     = 512
	maxPatternBytes  = 1024
	maxPatchBytes    = maxArgumentBytes
)

// ErrUnknownTool is returned (wrapped) for a tool name no scenario defines.
var ErrUnknownTool = errors.New("unknown tool")

// ArgumentError says why arguments do not fit a tool's schema.
type ArgumentError struct {
	Tool   string
	Reason string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("%s: invalid arguments: %s", e.Tool, e.Reason)
}

// ListFilesArgs are the arguments of list_files.
type ListFilesArgs struct {
	Path string // directory prefix; empty lists the whole repository
}

// ReadFileArgs are the arguments of read_file. Zero lines mean "not given".
type ReadFileArgs struct {
	Path      string
	StartLine int
	EndLine   int
}

// SearchArgs are the arguments of search.
type SearchArgs struct {
	Pattern    string
	Path       string // file or directory prefix
	Regex      bool
	IgnoreCase bool
}

// ApplyPatchArgs are the arguments of apply_patch.
type ApplyPatchArgs struct {
	Input string // the patch text, *** Begin Patch ... *** End Patch
}

// RunTestsArgs are the arguments of run_tests.
type RunTestsArgs struct {
	Target  string // package directory or test file; empty runs everything
	Verbose bool
}

// paramKind is the subset of JSON Schema types the tools use.
type paramKind int

const (
	kindString paramKind = iota
	kindInteger
	kindBoolean
)

type paramSpec struct {
	name        string
	kind        paramKind
	description string
	required    bool
	maxBytes    int // strings
	minimum     int // integers
}

type toolSpec struct {
	name        string
	description string
	params      []paramSpec
}

// toolSpecs is the single source of both the JSON Schemas handed to the model
// and the strict decoder, so the two cannot drift apart.
var toolSpecs = []toolSpec{
	{
		name:        ToolListFiles,
		description: "List the files of the repository, one path per line, sorted. Give a directory to list only the files under it.",
		params: []paramSpec{
			{name: "path", kind: kindString, maxBytes: maxPathBytes, description: "Directory to list, relative to the repository root. Omit for the whole repository."},
		},
	},
	{
		name:        ToolReadFile,
		description: "Read a text file of the repository. Lines are numbered like `cat -n`. Give start_line and end_line (1-based, inclusive) to read part of a long file.",
		params: []paramSpec{
			{name: "path", kind: kindString, required: true, maxBytes: maxPathBytes, description: "File path relative to the repository root."},
			{name: "start_line", kind: kindInteger, minimum: 1, description: "First line to read (1-based)."},
			{name: "end_line", kind: kindInteger, minimum: 1, description: "Last line to read (inclusive)."},
		},
	},
	{
		name:        ToolSearch,
		description: "Search file contents like grep -n. Prints path:line:text for every matching line. The pattern is a plain substring unless regex is true (RE2 syntax).",
		params: []paramSpec{
			{name: "pattern", kind: kindString, required: true, maxBytes: maxPatternBytes, description: "Substring, or regular expression when regex is true."},
			{name: "path", kind: kindString, maxBytes: maxPathBytes, description: "Restrict the search to this file or directory."},
			{name: "regex", kind: kindBoolean, description: "Treat pattern as a regular expression."},
			{name: "ignore_case", kind: kindBoolean, description: "Match case-insensitively."},
		},
	},
	{
		name: ToolApplyPatch,
		description: "Edit files with a patch in this format:\n" +
			"*** Begin Patch\n*** Update File: path/to/file\n@@ optional line that introduces the hunk, e.g. a function signature\n" +
			" context line\n-removed line\n+added line\n context line\n*** Add File: path/new_file\n+line of the new file\n" +
			"*** Delete File: path/old_file\n*** End Patch\n" +
			"Context lines must match the file; when they do not, nothing is changed and the error says where matching failed.",
		params: []paramSpec{
			{name: "input", kind: kindString, required: true, maxBytes: maxPatchBytes, description: "The whole patch, from *** Begin Patch to *** End Patch."},
		},
	},
	{
		name:        ToolRunTests,
		description: "Run the repository's test suite (or one package, directory or test file) and print the test runner's output.",
		params: []paramSpec{
			{name: "target", kind: kindString, maxBytes: maxPathBytes, description: "Package directory or test file to run. Omit to run everything."},
			{name: "verbose", kind: kindBoolean, description: "List every test, not only failures."},
		},
	},
}

func lookupToolSpec(name string) (*toolSpec, bool) {
	for i := range toolSpecs {
		if toolSpecs[i].name == name {
			return &toolSpecs[i], true
		}
	}
	return nil, false
}

// schema renders the spec as a JSON Schema object.
func (t *toolSpec) schema() map[string]any {
	props := map[string]any{}
	required := []any{}
	for _, p := range t.params {
		prop := map[string]any{"description": p.description}
		switch p.kind {
		case kindString:
			prop["type"] = "string"
			if p.maxBytes > 0 {
				// maxLength counts characters; a byte bound is at least as strict.
				prop["maxLength"] = p.maxBytes
			}
		case kindInteger:
			prop["type"] = "integer"
			prop["minimum"] = p.minimum
		case kindBoolean:
			prop["type"] = "boolean"
		}
		props[p.name] = prop
		if p.required {
			required = append(required, p.name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// toolDefs returns fresh ToolDefs for the named tools, so callers may not
// alter shared schemas.
func toolDefs(names ...string) []ToolDef {
	defs := make([]ToolDef, 0, len(names))
	for _, n := range names {
		spec, ok := lookupToolSpec(n)
		if !ok {
			panic("scenario: no tool spec " + n)
		}
		defs = append(defs, ToolDef{Name: spec.name, Description: spec.description, Parameters: spec.schema()})
	}
	return defs
}

// ParseToolArguments decodes arguments for the named tool strictly: the text
// must be one JSON object of valid UTF-8 with only the tool's fields, each of
// the declared type, required fields present and no nulls. It returns one of
// ListFilesArgs, ReadFileArgs, SearchArgs, ApplyPatchArgs or RunTestsArgs.
func ParseToolArguments(name, arguments string) (any, error) {
	spec, ok := lookupToolSpec(name)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, truncateForError(name))
	}
	fields, err := decodeFields(spec, arguments)
	if err != nil {
		return nil, &ArgumentError{Tool: name, Reason: err.Error()}
	}
	str := func(k string) string { s, _ := fields[k].(string); return s }
	num := func(k string) int { n, _ := fields[k].(int); return n }
	flag := func(k string) bool { b, _ := fields[k].(bool); return b }
	switch name {
	case ToolListFiles:
		return ListFilesArgs{Path: str("path")}, nil
	case ToolReadFile:
		return ReadFileArgs{Path: str("path"), StartLine: num("start_line"), EndLine: num("end_line")}, nil
	case ToolSearch:
		return SearchArgs{Pattern: str("pattern"), Path: str("path"), Regex: flag("regex"), IgnoreCase: flag("ignore_case")}, nil
	case ToolApplyPatch:
		return ApplyPatchArgs{Input: str("input")}, nil
	case ToolRunTests:
		return RunTestsArgs{Target: str("target"), Verbose: flag("verbose")}, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
}

// decodeFields checks arguments against spec and returns the present fields
// as string, int or bool values.
func decodeFields(spec *toolSpec, arguments string) (map[string]any, error) {
	if len(arguments) > maxArgumentBytes {
		return nil, fmt.Errorf("arguments are %d bytes, more than the limit of %d", len(arguments), maxArgumentBytes)
	}
	if !utf8.ValidString(arguments) {
		return nil, errors.New("arguments are not valid UTF-8")
	}
	trimmed := strings.TrimSpace(arguments)
	if !strings.HasPrefix(trimmed, "{") {
		return nil, errors.New("arguments must be a JSON object")
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(trimmed))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("arguments are not a valid JSON object: %s", jsonErrorText(err))
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the JSON object")
	}
	out := make(map[string]any, len(raw))
	known := make(map[string]*paramSpec, len(spec.params))
	for i := range spec.params {
		known[spec.params[i].name] = &spec.params[i]
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first error reported must not depend on map order
	for _, k := range keys {
		p, ok := known[k]
		if !ok {
			return nil, fmt.Errorf("unknown field %q", truncateForError(k))
		}
		v, err := decodeValue(p, raw[k])
		if err != nil {
			return nil, fmt.Errorf("field %q %s", k, err)
		}
		out[k] = v
	}
	for _, p := range spec.params {
		if _, ok := out[p.name]; p.required && !ok {
			return nil, fmt.Errorf("missing required field %q", p.name)
		}
	}
	return out, nil
}

func decodeValue(p *paramSpec, raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("must not be null")
	}
	switch p.kind {
	case kindString:
		if raw[0] != '"' {
			return nil, errors.New("must be a string")
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("must be a string")
		}
		if p.maxBytes > 0 && len(s) > p.maxBytes {
			return nil, fmt.Errorf("is longer than %d bytes", p.maxBytes)
		}
		if strings.ContainsRune(s, 0) {
			return nil, errors.New("must not contain NUL")
		}
		return s, nil
	case kindInteger:
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return nil, errors.New("must be an integer")
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			// JSON Schema counts 3.0 as an integer.
			f, ferr := strconv.ParseFloat(string(raw), 64)
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return nil, errors.New("must be an integer")
			}
			n = int64(f)
		}
		if n < int64(p.minimum) {
			return nil, fmt.Errorf("must be at least %d", p.minimum)
		}
		if n > math.MaxInt32 {
			return nil, errors.New("is too large")
		}
		return int(n), nil
	case kindBoolean:
		switch string(raw) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, errors.New("must be a boolean")
	}
	return nil, errors.New("has an unsupported type")
}

func jsonErrorText(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%s (at byte %d)", syn.Error(), syn.Offset)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return "must be a JSON object"
	}
	return truncateForError(err.Error())
}

// truncateForError keeps hostile names from bloating error messages.
func truncateForError(s string) string {
	const max = 64
	if len(s) <= max {
		return strings.ToValidUTF8(s, "?")
	}
	return strings.ToValidUTF8(s[:max], "?") + "..."
}
