package conformance

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// goTypes makes openai-go's typed struct for each SDK type a capture can be.
var goTypes = map[string]func() any{
	typeResponse:    func() any { return new(responses.Response) },
	typeStreamEvent: func() any { return new(responses.ResponseStreamEventUnion) },
	typeServerEvent: func() any { return new(responses.ResponsesServerEventUnion) },
	typeOutputItem:  func() any { return new(responses.ResponseOutputItemUnion) },
	typeItemList:    func() any { return new(responses.ResponseItemList) },
	typeErrorBody: func() any {
		return new(struct {
			Error shared.ErrorObject `json:"error"`
		})
	},
}

// checkGo decodes every capture into openai-go's typed struct and holds it
// to what openai-go declares: the raw JSON kept whole (RawJSON), no field
// it does not know (JSON.ExtraFields, at any depth), no required field
// missing, and every union (an event, an item, a content part) of a type
// it knows.
//
// Each problem is reported once, with the number of captures that show it
// and the first of them.
func checkGo(t *testing.T, cs []capture) {
	var order []string
	seen := map[string][]capture{}
	note := func(problem string, c capture) {
		if seen[problem] == nil {
			order = append(order, problem)
		}
		seen[problem] = append(seen[problem], c)
	}
	for _, c := range cs {
		v := goTypes[c.typ]()
		if err := json.Unmarshal(c.json, v); err != nil {
			note(fmt.Sprintf("openai-go cannot decode a %s: %v", c.typ, err), c)
			continue
		}
		if r, ok := v.(interface{ RawJSON() string }); ok && r.RawJSON() != string(c.json) {
			note("RawJSON is not the JSON sent", c)
		}
		for _, p := range goProblems(reflect.ValueOf(v), c.typ, nil) {
			note(p, c)
		}
	}
	for _, p := range order {
		first := seen[p][0]
		t.Errorf("%s (%d captures; the first: %s)\n%s", p, len(seen[p]), first.name, first.json)
	}
}

// checkGoCatchesMutations proves the openai-go check bites: each mutated
// capture it is meant to catch (openai-go does not hold strings to their
// enums) must show a problem.
func checkGoCatchesMutations(t *testing.T, cs []capture) {
	for i, c := range mutated(t, cs) {
		if !mutations[i].goCatches {
			continue
		}
		v := goTypes[c.typ]()
		if err := json.Unmarshal(c.json, v); err == nil && len(goProblems(reflect.ValueOf(v), c.typ, nil)) == 0 {
			t.Errorf("openai-go's check accepted %s as a %s: %s", c.name, c.typ, c.json)
		}
	}
}

// goProblems walks a decoded openai-go value and lists what openai-go did
// not expect. outer holds the JSON names an embedding struct declares
// (openai-go embeds, e.g., ResponseCustomToolCall in
// ResponseCustomToolCallItem, and each level lists the other's fields as
// extra).
func goProblems(v reflect.Value, path string, outer map[string]bool) []string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	var out []string
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = append(out, goProblems(v.Index(i), path+"[]", nil)...)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			out = append(out, goProblems(v.MapIndex(k), path+"[]", nil)...)
		}
	case reflect.Struct:
		t := v.Type()
		meta := v.FieldByName("JSON")
		if !meta.IsValid() || meta.Kind() != reflect.Struct {
			for i := range t.NumField() {
				if t.Field(i).IsExported() {
					out = append(out, goProblems(v.Field(i), path+"."+t.Field(i).Name, nil)...)
				}
			}
			return out
		}
		if raw := meta.FieldByName("raw"); !raw.IsValid() || raw.String() == "" {
			return nil // not in the JSON (an empty union, an absent object)
		}
		if any := v.MethodByName("AsAny"); any.IsValid() && strings.HasSuffix(t.Name(), "Union") {
			variant := any.Call(nil)[0]
			// openai-go's ResponseItemUnion reads every message as the
			// model's; an input message is its AsMessage.
			if t.Name() == "ResponseItemUnion" && v.FieldByName("Type").String() == "message" && v.FieldByName("Role").String() != "assistant" {
				variant = v.MethodByName("AsMessage").Call(nil)[0]
			} else if variant.IsNil() {
				return []string{fmt.Sprintf("%s: its type %q is none openai-go knows", path, v.FieldByName("Type"))}
			}
			return goProblems(variant, path+"("+reflect.Indirect(reflect.ValueOf(variant.Interface())).Type().Name()+")", nil)
		}
		declared := map[string]bool{}
		for k := range outer {
			declared[k] = true
		}
		for i := range t.NumField() {
			if name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]; name != "" {
				declared[name] = true
			}
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.Anonymous {
				for j := range f.Type.NumField() {
					declared[strings.Split(f.Type.Field(j).Tag.Get("json"), ",")[0]] = true
				}
			}
		}
		if extra := meta.FieldByName("ExtraFields"); extra.IsValid() {
			for _, k := range extra.MapKeys() {
				if !declared[k.String()] {
					out = append(out, fmt.Sprintf("%s.%s: a field openai-go's %s does not declare", path, k, t.Name()))
				}
			}
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "JSON" {
				continue
			}
			if f.Anonymous {
				out = append(out, goProblems(v.Field(i), path, declared)...)
				continue
			}
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if m := meta.FieldByName(f.Name); m.IsValid() && m.Type() == reflect.TypeFor[respjson.Field]() {
				field := m.Interface().(respjson.Field)
				switch raw := field.Raw(); {
				case raw == "" && f.Tag.Get("api") == "required" && !strings.HasSuffix(t.Name(), "Union"):
					out = append(out, fmt.Sprintf("%s.%s: required by openai-go's %s, missing", path, name, t.Name()))
				case raw != "" && raw != respjson.Null && !field.Valid():
					out = append(out, fmt.Sprintf("%s.%s: not of the type openai-go's %s declares", path, name, t.Name()))
				}
			}
			out = append(out, goProblems(v.Field(i), path+"."+name, nil)...)
		}
	}
	return out
}
