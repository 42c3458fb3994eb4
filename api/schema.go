package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The rules a schema must follow, in one table (docs/protocol.md,
// "Structured outputs"). Every schema must compile as JSON Schema; a
// strict one (text.format json_schema with strict, or a function tool
// with strict) must also stay inside the subset the hosted API's
// structured outputs accept:
//   - the root is an object (not anyOf);
//   - every object lists every property in required and sets
//     additionalProperties to false, and has properties;
//   - every array has items; every schema has a type, or is an anyOf, a
//     $ref, an enum or a const;
//   - $ref is local (#, #/$defs/…, #/definitions/…) and resolves;
//   - only strictKeywords appear;
//   - at most strictMaxDepth levels of nesting, strictMaxProperties
//     properties and strictMaxEnumValues enum values in all.
//
// The chat policy's generator (policy/arguments.go) fills every schema
// that passes the strict rules with an instance that validates.
var strictKeywords = map[string]bool{
	// Structure.
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "anyOf": true, "$ref": true, "$defs": true, "definitions": true,
	// Strings, numbers, arrays: what the hosted API documents as supported.
	"pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true,
	// Annotations, which change no instance.
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true, "examples": true,
}

// Limits of a strict schema, as the hosted API documents them.
const (
	strictMaxDepth      = 10
	strictMaxProperties = 5000
	strictMaxEnumValues = 1000
)

var strictTypes = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "object": true, "array": true, "null": true}

// SchemaError says why a schema was refused and where: Context is the path
// of keys from the root, written as the hosted API writes it (a Python
// tuple: "In context=('properties', 'city'), ...").
type SchemaError struct {
	Context []string
	Reason  string
}

func (e *SchemaError) Error() string {
	if e.Context == nil {
		return e.Reason
	}
	return "In context=" + pyTuple(e.Context) + ", " + e.Reason
}

// pyTuple writes path as Python's repr of a tuple of strings.
func pyTuple(path []string) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, p := range path {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + strings.ReplaceAll(p, "'", `\'`) + "'")
	}
	if len(path) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}

// CheckSchema reports why schema (decoded JSON) cannot be used, or nil:
// it must compile as JSON Schema, and a strict one must follow the strict
// rules above. rootObject also asks for a root of type object (function
// parameters always; a strict text format too).
func CheckSchema(schema any, strict, rootObject bool) error {
	if err := compileSchema(schema); err != nil {
		return &SchemaError{Reason: err.Error()}
	}
	root, isObject := schema.(map[string]any)
	if (rootObject || strict) && (!isObject || root["type"] != "object") {
		got := "None"
		if isObject {
			if t, ok := root["type"]; ok {
				got = fmt.Sprint(t)
			}
		}
		return &SchemaError{Reason: fmt.Sprintf("schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%s\"'", got)}
	}
	if !strict {
		return nil
	}
	c := &strictCheck{root: root}
	if err := c.check(root, []string{}, 0); err != nil {
		return err
	}
	return nil
}

// compileSchema compiles schema with the validator every test uses.
func compileSchema(schema any) error {
	raw, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		return err
	}
	_, err = c.Compile("mem://schema.json")
	return err
}

type strictCheck struct {
	root               map[string]any
	properties, values int
}

func (c *strictCheck) check(s map[string]any, ctx []string, depth int) *SchemaError {
	at := func(format string, args ...any) *SchemaError {
		return &SchemaError{Context: append([]string{}, ctx...), Reason: fmt.Sprintf(format, args...)}
	}
	if depth > strictMaxDepth {
		return at("the schema nests more than %d levels deep", strictMaxDepth)
	}
	for _, k := range sortedKeys(s) {
		if !strictKeywords[k] {
			return at("'%s' is not permitted", k)
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		if ResolveLocalRef(c.root, ref) == nil {
			return at("reference to component '%s' which was not found in the schema", ref)
		}
	}
	for _, defs := range []string{"$defs", "definitions"} {
		if m, ok := s[defs].(map[string]any); ok {
			for _, name := range sortedKeys(m) {
				sub, _ := m[name].(map[string]any)
				if err := c.check(sub, append(ctx, defs, name), depth+1); err != nil {
					return err
				}
			}
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		if c.values += len(enum); c.values > strictMaxEnumValues {
			return at("the schema has more than %d enum values in all", strictMaxEnumValues)
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for i, a := range alts {
			sub, _ := a.(map[string]any)
			if err := c.check(sub, append(ctx, "anyOf", strconv.Itoa(i)), depth+1); err != nil {
				return err
			}
		}
	}
	types := schemaTypes(s["type"])
	if len(types) == 0 {
		if _, ok := s["type"]; ok {
			return at("'type' must be one of 'string', 'number', 'integer', 'boolean', 'object', 'array' or 'null', or a list of them")
		}
		if s["anyOf"] == nil && s["$ref"] == nil && s["enum"] == nil && s["const"] == nil {
			return at("schema must have a 'type' key")
		}
	}
	for _, t := range types {
		if !strictTypes[t] {
			return at("'type' must be one of 'string', 'number', 'integer', 'boolean', 'object', 'array' or 'null', or a list of them")
		}
	}
	if has(types, "object") {
		props, ok := s["properties"].(map[string]any)
		if !ok {
			return at("object schema missing properties")
		}
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			return at("'additionalProperties' is required to be supplied and to be false")
		}
		required := map[string]bool{}
		if r, ok := s["required"].([]any); ok {
			for _, x := range r {
				name, _ := x.(string)
				if _, ok := props[name]; !ok {
					return at("'required' includes '%s', which is not among the properties", name)
				}
				required[name] = true
			}
		}
		names := sortedKeys(props)
		for _, n := range names {
			if !required[n] {
				return at("'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", n)
			}
		}
		if c.properties += len(props); c.properties > strictMaxProperties {
			return at("the schema has more than %d properties in all", strictMaxProperties)
		}
		for _, n := range names {
			sub, _ := props[n].(map[string]any)
			if err := c.check(sub, append(ctx, "properties", n), depth+1); err != nil {
				return err
			}
		}
	}
	if has(types, "array") {
		items, ok := s["items"].(map[string]any)
		if !ok {
			return at("array schema missing items")
		}
		if err := c.check(items, append(ctx, "items"), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// schemaTypes returns the type names of a "type" keyword (a name or a
// list), nil when it has none or it is malformed.
func schemaTypes(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			name, ok := x.(string)
			if !ok {
				return nil
			}
			out = append(out, name)
		}
		return out
	}
	return nil
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ResolveLocalRef resolves a local reference, "#", "#/$defs/X" or
// "#/definitions/X" (any JSON pointer into root), nil when it does not.
// The policy's generator follows references with it too.
func ResolveLocalRef(root map[string]any, ref string) map[string]any {
	if ref == "#" {
		return root
	}
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = root
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	m, _ := cur.(map[string]any)
	return m
}
