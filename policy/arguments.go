package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"agentloop/api"
	"agentloop/inference"
)

// argumentsFor returns a JSON object of arguments for a function tool whose
// parameters are described by schema, filled from the user's question where
// that makes sense and with plausible values otherwise. h varies the choices
// deterministically.
//
// Supported JSON Schema subset: type (a name, or a list whose first non-null
// entry is used), object (properties, required, minProperties,
// maxProperties), string (enum, const, default, minLength, maxLength, and the
// formats date-time, date, time, email, uri, uuid, ipv4, ipv6, hostname,
// duration), number and integer (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum in both draft styles, multipleOf), boolean, null, array
// (items, minItems, maxItems, uniqueItems), enum and const of any type,
// nested objects, local $ref (#, #/$defs/..., #/definitions/...), anyOf and
// oneOf (the first non-null alternative), allOf (members merged), and
// pattern (a matching string when the plain value does not match; see
// matchingString for the regex subset).
// Not supported: patternProperties, prefixItems, contains, not,
// if/then/else and dependent schemas; a schema that needs them may get
// arguments that do not validate. Optional properties are included only when
// the question supplies their value.
func argumentsFor(schema map[string]any, question string, h uint64) string {
	out, _ := generateJSON(schema, question, h, false)
	return out
}

// structuredOutput returns the JSON a text.format json_schema asks for:
// the same generator as argumentsFor, filling (see argumentBuilder.fill).
// It also supports pattern (through matchingString).
func structuredOutput(schema map[string]any, question string, h uint64) string {
	out, _ := generateJSON(schema, question, h, true)
	return out
}

// generateJSON builds a value for schema and writes it as JSON. capped
// reports that a value past maxSchemaDepth (or a budget) was cut to the
// minimal value of its type: a schema whose every instance is deeper, such
// as an object that requires itself, gets JSON that does not validate.
func generateJSON(schema map[string]any, question string, h uint64, fill bool) (out string, capped bool) {
	if schema == nil {
		return "{}", false
	}
	b := &argumentBuilder{root: schema, hints: hintsFrom(question), h: h, fill: fill}
	v, _ := b.value(schema, "", "", 0, 0)
	// Tool arguments are always an object, "{}" for a tool whose
	// parameters say nothing (an empty schema would otherwise give a
	// string); a structured output is what its schema's root says.
	if _, ok := v.(map[string]any); !ok && (!fill || schemaType(b.resolve(schema)) == "object") {
		v = map[string]any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "{}", true
	}
	return strings.TrimSuffix(buf.String(), "\n"), b.capped
}

// maxSchemaDepth stops recursive schemas: deeper values get the minimal value
// of their type.
const maxSchemaDepth = 8

// maxValues caps the values one call builds and maxResolves the schema
// merges, so that a schema that branches at every level (allOf or properties
// that refer back to "#") cannot make the work exponential.
const (
	maxValues   = 20000
	maxResolves = 50000
)

type argumentBuilder struct {
	root  map[string]any
	hints inputHints
	h     uint64
	// fill, for structured outputs, makes h decide what a minimal
	// instance leaves out, so that across seeds every optional property
	// appears, every anyOf (oneOf) branch and every null of a nullable
	// type is taken, and arrays hold one to three items (within
	// minItems and maxItems). Near maxSchemaDepth it takes the smallest
	// choice, so recursive schemas end. Tool arguments keep fill off:
	// their optional properties come from the question only.
	fill     bool
	capped   bool // a value was cut short (generateJSON)
	values   int  // built so far
	resolves int  // $ref and allOf merges so far
}

// resolve follows local $refs and merges allOf members.
func (b *argumentBuilder) resolve(s map[string]any) map[string]any {
	return b.resolveDepth(s, 0)
}

func (b *argumentBuilder) resolveDepth(s map[string]any, depth int) map[string]any {
	b.resolves++
	if depth > maxSchemaDepth || b.resolves > maxResolves {
		return s
	}
	for range maxSchemaDepth {
		ref, ok := s["$ref"].(string)
		if !ok {
			break
		}
		target := b.pointer(ref)
		if target == nil {
			break
		}
		merged := make(map[string]any, len(s)+len(target))
		for k, v := range target {
			merged[k] = v
		}
		for k, v := range s { // siblings of $ref apply too (2019-09 and later)
			if k != "$ref" {
				merged[k] = v
			}
		}
		s = merged
	}
	if all, ok := s["allOf"].([]any); ok {
		merged := make(map[string]any, len(s))
		props := map[string]any{}
		var required []any
		add := func(m map[string]any) {
			for k, v := range m {
				switch k {
				case "allOf":
				case "properties":
					if pm, ok := v.(map[string]any); ok {
						for pk, pv := range pm {
							props[pk] = pv
						}
					}
				case "required":
					if r, ok := v.([]any); ok {
						required = append(required, r...)
					}
				default:
					merged[k] = v
				}
			}
		}
		add(s)
		for _, m := range all {
			if sub, ok := m.(map[string]any); ok {
				add(b.resolveDepth(sub, depth+1))
			}
		}
		if len(props) > 0 {
			merged["properties"] = props
		}
		if len(required) > 0 {
			merged["required"] = required
		}
		s = merged
	}
	return s
}

// pointer resolves a local reference such as "#", "#/$defs/Place" or
// "#/definitions/Place".
func (b *argumentBuilder) pointer(ref string) map[string]any {
	return api.ResolveLocalRef(b.root, ref)
}

// schemaType returns the JSON type a value for s should have.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		first := ""
		for _, x := range t {
			if name, ok := x.(string); ok {
				if name != "null" {
					return name
				}
				first = name
			}
		}
		if first != "" {
			return first
		}
	}
	switch {
	case s["properties"] != nil || s["required"] != nil:
		return "object"
	case s["items"] != nil:
		return "array"
	case s["minimum"] != nil || s["maximum"] != nil || s["multipleOf"] != nil:
		return "number"
	}
	return "string"
}

// value builds a value for schema s. name is the property it fills, path its
// location (for deterministic choices) and variant its index among siblings
// in an array. fromInput reports whether the question supplied it.
func (b *argumentBuilder) value(s map[string]any, name, path string, depth, variant int) (v any, fromInput bool) {
	s = b.resolve(s)
	b.values++
	if depth > maxSchemaDepth || b.values > maxValues || b.resolves > maxResolves {
		b.capped = true
		return minimalValue(schemaType(s)), false
	}
	if c, ok := s["const"]; ok {
		return c, false
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return b.enumValue(s, enum, path, variant)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			chosen, _ := alts[0].(map[string]any)
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok && schemaType(b.resolve(m)) != "null" {
					chosen = m
					break
				}
			}
			if b.fill {
				chosen, _ = alts[b.pick(path+"/"+key, len(alts))].(map[string]any)
				if b.shallow(depth) {
					chosen = b.smallestAlternative(alts)
				}
			}
			merged := make(map[string]any, len(s))
			for k, x := range s {
				if k != key {
					merged[k] = x
				}
			}
			for k, x := range b.resolve(chosen) {
				merged[k] = x
			}
			return b.value(merged, name, path, depth+1, variant)
		}
	}
	if b.fill && nullable(s) && (b.shallow(depth) || b.pick(path+"/null", 4) == 0) {
		return nil, false
	}
	switch schemaType(s) {
	case "object":
		return b.object(s, path, depth)
	case "array":
		return b.array(s, name, path, depth)
	case "integer":
		return b.number(s, name, true)
	case "number":
		return b.number(s, name, false)
	case "boolean":
		if d, ok := s["default"].(bool); ok {
			return d, false
		}
		return inference.HashStrings(b.h, path)&1 == 1, false
	case "null":
		return nil, false
	default:
		return b.str(s, name, path, variant)
	}
}

func minimalValue(typ string) any {
	switch typ {
	case "object":
		return map[string]any{}
	case "array":
		return []any{}
	case "integer", "number":
		return json.Number("0")
	case "boolean":
		return false
	case "null":
		return nil
	}
	return ""
}

func (b *argumentBuilder) object(s map[string]any, path string, depth int) (any, bool) {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, x := range r {
			if name, ok := x.(string); ok {
				required[name] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]any{}
	fromInput := false
	var optional []string // left out, in order, for minProperties
	for _, n := range names {
		sub, _ := props[n].(map[string]any)
		if sub == nil {
			sub = map[string]any{} // "true" schema
		}
		v, from := b.value(sub, n, path+"/"+n, depth+1, 0)
		switch {
		case required[n]:
			out[n] = v
		case from:
			out[n] = v
		case b.fill && !b.shallow(depth) && b.pick(path+"/"+n+"?", 2) == 1:
			out[n] = v
		default:
			optional = append(optional, n)
			continue
		}
		fromInput = fromInput || from
	}
	for n := range required {
		if _, ok := out[n]; !ok { // required but not described
			out[n], _ = b.value(map[string]any{}, n, path+"/"+n, depth+1, 0)
		}
	}
	if minP, ok := schemaInt(s, "minProperties"); ok {
		for _, n := range optional {
			if len(out) >= minP {
				break
			}
			sub, _ := props[n].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
			}
			out[n], _ = b.value(sub, n, path+"/"+n, depth+1, 0)
		}
	}
	if maxP, ok := schemaInt(s, "maxProperties"); ok && len(out) > maxP {
		for i := len(names) - 1; i >= 0 && len(out) > maxP; i-- {
			if !required[names[i]] {
				delete(out, names[i])
			}
		}
	}
	return out, fromInput
}

func (b *argumentBuilder) array(s map[string]any, name, path string, depth int) (any, bool) {
	items, _ := s["items"].(map[string]any)
	if items == nil {
		items = map[string]any{}
	}
	count := 1
	if b.fill {
		count = 1 + b.pick(path+"/len", 3)
		if b.shallow(depth) {
			count = 0
		}
	}
	if minI, ok := schemaInt(s, "minItems"); ok {
		count = max(count, minI)
	}
	// A list of things the question names several of ("Paris and Tokyo").
	if schemaType(b.resolve(items)) == "string" {
		count = max(count, len(b.hints.candidates(categoryOf(singular(name)))))
	}
	if maxI, ok := schemaInt(s, "maxItems"); ok {
		count = min(count, maxI)
	}
	count = min(count, 256)
	unique, _ := s["uniqueItems"].(bool)
	out := make([]any, 0, count)
	seen := map[string]bool{}
	fromInput := false
	for variant := 0; len(out) < count && variant < count+16; variant++ {
		v, from := b.value(items, singular(name), path+"/"+strconv.Itoa(variant), depth+1, variant)
		if unique {
			key, _ := json.Marshal(v)
			if seen[string(key)] {
				continue
			}
			seen[string(key)] = true
		}
		out = append(out, v)
		fromInput = fromInput || from
	}
	return out, fromInput
}

// singular maps a list's property name to its items' ("cities" → "city").
func singular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies"):
		return strings.TrimSuffix(name, "ies") + "y"
	case strings.HasSuffix(name, "ses"), strings.HasSuffix(name, "xes"):
		return strings.TrimSuffix(name, "es")
	case strings.HasSuffix(name, "s") && !strings.HasSuffix(name, "ss"):
		return strings.TrimSuffix(name, "s")
	}
	return name
}

func (b *argumentBuilder) enumValue(s map[string]any, enum []any, path string, variant int) (any, bool) {
	lower := strings.ToLower(b.hints.text)
	for _, e := range enum {
		if str, ok := e.(string); ok && str != "" && variant == 0 && containsWord(lower, strings.ToLower(str)) {
			return e, true
		}
	}
	if d, ok := s["default"]; ok && variant == 0 {
		for _, e := range enum {
			if jsonEqual(e, d) {
				return e, false
			}
		}
	}
	return enum[(int(inference.HashStrings(b.h, path)%uint64(len(enum)))+variant)%len(enum)], false
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// containsWord reports whether word occurs in text with no letter or digit
// right before or after it.
func containsWord(text, word string) bool {
	for from := 0; ; {
		i := strings.Index(text[from:], word)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[i+len(word):])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		from = i + 1
	}
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// maxGenerated caps counts taken from untrusted schemas (minItems,
// minLength, ...): past it the arguments may not validate, but a tool
// definition cannot make the engine build huge values.
const maxGenerated = 4096

// schemaInt reads a non-negative integer keyword, capped at maxGenerated.
func schemaInt(s map[string]any, key string) (int, bool) {
	f, ok := schemaNumber(s[key])
	if !ok || f < 0 || math.IsNaN(f) {
		return 0, false
	}
	return int(math.Min(f, maxGenerated)), true
}

// schemaNumber reads a JSON number as decoded by encoding/json (float64 or
// json.Number) or built in Go.
func schemaNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// numberDefaults are plausible values for common numeric parameter names.
var numberDefaults = []struct {
	words []string
	value float64
}{
	{[]string{"lat", "latitude"}, 48.8566},
	{[]string{"lon", "lng", "longitude"}, 2.3522},
	{[]string{"limit", "count", "max", "top", "k", "n", "num", "number", "size", "result"}, 5},
	{[]string{"day", "days"}, 3},
	{[]string{"page"}, 1},
	{[]string{"year"}, 2026},
	{[]string{"month"}, 6},
	{[]string{"age"}, 30},
	{[]string{"temperature"}, 0.7},
	{[]string{"price", "amount", "cost"}, 20},
	{[]string{"quantity", "qty"}, 2},
	{[]string{"line", "offset", "start"}, 1},
	{[]string{"timeout", "seconds", "duration"}, 30},
}

func (b *argumentBuilder) number(s map[string]any, name string, integer bool) (any, bool) {
	lo, hi := math.Inf(-1), math.Inf(1)
	loEx, hiEx := false, false
	if v, ok := schemaNumber(s["minimum"]); ok {
		lo = v
	}
	if v, ok := schemaNumber(s["maximum"]); ok {
		hi = v
	}
	switch v := s["exclusiveMinimum"].(type) {
	case bool: // draft 4: a flag on minimum
		loEx = v
	default:
		if x, ok := schemaNumber(v); ok && x >= lo {
			lo, loEx = x, true
		}
	}
	switch v := s["exclusiveMaximum"].(type) {
	case bool:
		hiEx = v
	default:
		if x, ok := schemaNumber(v); ok && x <= hi {
			hi, hiEx = x, true
		}
	}
	inBounds := func(x float64) bool {
		return (x > lo || (!loEx && x == lo)) && (x < hi || (!hiEx && x == hi)) && (!integer || x == math.Trunc(x))
	}

	val, fromInput := 0.0, false
	if len(b.hints.numbers) > 0 {
		for _, n := range b.hints.numbers {
			if inBounds(n) {
				val, fromInput = n, true
				break
			}
		}
	}
	if !fromInput {
		val = 1.5
		if integer {
			val = 1
		}
		if d, ok := schemaNumber(s["default"]); ok {
			val = d
		} else {
			words := slices.Collect(contentWords(splitIdentifier(name)))
		defaults:
			for _, nd := range numberDefaults {
				for _, w := range nd.words {
					for _, x := range words {
						if x == w {
							val = nd.value
							break defaults
						}
					}
				}
			}
		}
	}

	// Move into bounds.
	if integer {
		loI, hiI := math.Ceil(lo), math.Floor(hi)
		if loEx && loI == lo {
			loI++
		}
		if hiEx && hiI == hi {
			hiI--
		}
		val = math.Max(loI, math.Min(hiI, math.Round(val)))
	} else if !inBounds(val) {
		switch {
		case !math.IsInf(lo, 0) && !math.IsInf(hi, 0):
			val = lo + (hi-lo)/2
		case !math.IsInf(lo, 0):
			val = lo
			if loEx {
				val = lo + 1
			}
		default:
			val = hi
			if hiEx {
				val = hi - 1
			}
		}
	}
	if m, ok := schemaNumber(s["multipleOf"]); ok && m > 0 {
		return multipleInBounds(val, m, lo, hi, loEx, hiEx, integer), fromInput && math.Mod(val, m) == 0
	}
	if integer {
		return json.Number(strconv.FormatInt(int64(val), 10)), fromInput
	}
	return json.Number(strconv.FormatFloat(val, 'f', -1, 64)), fromInput
}

// multipleInBounds returns the multiple of m nearest to val that lies within
// the bounds, written with m's decimals so that 3 × 0.1 reads "0.3".
func multipleInBounds(val, m, lo, hi float64, loEx, hiEx, integer bool) json.Number {
	k := math.Round(val / m)
	ok := func(k float64) bool {
		x := k * m
		return (x > lo || (!loEx && x == lo)) && (x < hi || (!hiEx && x == hi)) && (!integer || x == math.Trunc(x))
	}
	for _, d := range []float64{0, 1, -1, 2, -2} {
		if ok(k + d) {
			k += d
			break
		}
	}
	if !ok(k) && !math.IsInf(lo, 0) {
		k = math.Ceil(lo / m)
		if !ok(k) {
			k++
		}
	}
	decimals := 0
	if s := strconv.FormatFloat(m, 'f', -1, 64); strings.Contains(s, ".") {
		decimals = len(s) - strings.Index(s, ".") - 1
	}
	out := strconv.FormatFloat(k*m, 'f', decimals, 64)
	if decimals > 0 {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return json.Number(out)
}

// stringCategories map words of a parameter's name to the kind of value it
// wants.
var stringCategories = map[string]string{
	"location": "place", "city": "place", "place": "place", "destination": "place", "origin": "place",
	"town": "place", "country": "place", "region": "place", "address": "place", "where": "place",
	"query": "query", "q": "query", "search": "query", "text": "query", "prompt": "query", "question": "query",
	"message": "query", "input": "query", "content": "query", "body": "query", "topic": "query", "keyword": "query",
	"term": "query", "subject": "query", "description": "query", "note": "query", "comment": "query",
	"path": "path", "file": "path", "filename": "path", "filepath": "path", "dir": "dir", "directory": "dir", "folder": "dir",
	"url": "url", "link": "url", "uri": "url", "href": "url", "website": "url",
	"email": "email", "mail": "email", "recipient": "email",
	"date": "date", "day": "date", "deadline": "date", "time": "time", "when": "date",
	"name": "name", "title": "name", "username": "name", "user": "name", "author": "name", "person": "name",
	"language": "language", "lang": "language", "locale": "language",
	"command": "command", "cmd": "command", "script": "command",
	"unit": "unit", "units": "unit",
	"id": "id", "key": "id",
}

var placeFallbacks = []string{"Paris", "Tokyo", "Lisbon", "Nairobi", "Montreal", "Sydney"}

func (b *argumentBuilder) str(s map[string]any, name, path string, variant int) (any, bool) {
	format, _ := s["format"].(string)
	val, fromInput := "", false
	switch format {
	case "date-time":
		val = "2026-01-15T09:00:00Z"
		if d := pick(b.hints.dates, variant); d != "" {
			val, fromInput = d+"T09:00:00Z", true
		}
	case "date":
		val = "2026-01-15"
		if d := pick(b.hints.dates, variant); d != "" {
			val, fromInput = d, true
		}
	case "time":
		val = "09:00:00Z"
	case "email", "idn-email":
		val = "user@example.com"
		if e := pick(b.hints.emails, variant); e != "" {
			val, fromInput = e, true
		}
	case "uri", "url", "iri", "uri-reference", "iri-reference":
		val = "https://example.com/"
		if u := pick(b.hints.urls, variant); u != "" {
			val, fromInput = u, true
		}
	case "uuid":
		val = "123e4567-e89b-42d3-a456-426614174000"
	case "ipv4":
		val = "192.0.2.1"
	case "ipv6":
		val = "2001:db8::1"
	case "hostname", "idn-hostname":
		val = "example.com"
	case "duration":
		val = "PT1H"
	default:
		val, fromInput = b.stringFor(name, variant)
		if !fromInput {
			if d, ok := s["default"].(string); ok {
				val = d
			}
		}
	}
	val = fitLength(s, val)
	if pattern, ok := s["pattern"].(string); ok {
		if re, err := regexp.Compile(pattern); err == nil && !re.MatchString(val) {
			if m, ok := matchingString(pattern, inference.HashStrings(b.h, path)); ok && re.MatchString(m) {
				return m, false
			}
		}
	}
	return val, fromInput
}

// pick returns a choice in [0, n) for the value at path, from h.
func (b *argumentBuilder) pick(path string, n int) int {
	return int(inference.HashStrings(b.h, path) % uint64(n))
}

// shallow reports whether a filling builder is near maxSchemaDepth and
// must take the smallest choices.
func (b *argumentBuilder) shallow(depth int) bool { return b.fill && depth >= maxSchemaDepth-3 }

// smallestAlternative is the first alternative that is null, else one
// that is not an object or an array, else the first.
func (b *argumentBuilder) smallestAlternative(alts []any) map[string]any {
	var scalar map[string]any
	for _, a := range alts {
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		switch schemaType(b.resolve(m)) {
		case "null":
			return m
		case "object", "array":
		default:
			if scalar == nil {
				scalar = m
			}
		}
	}
	if scalar != nil {
		return scalar
	}
	m, _ := alts[0].(map[string]any)
	return m
}

// nullable reports whether a schema's type list allows null besides
// another type (["string", "null"]).
func nullable(s map[string]any) bool {
	list, ok := s["type"].([]any)
	if !ok || len(list) < 2 {
		return false
	}
	for _, t := range list {
		if t == "null" {
			return true
		}
	}
	return false
}

// categoryOf returns the kind of value a string parameter wants, from its
// name; the last known word wins, so "start_date" is a date.
func categoryOf(name string) string {
	category := ""
	for _, w := range strings.Fields(strings.ToLower(splitIdentifier(name))) {
		if c, ok := stringCategories[w]; ok {
			category = c
		}
	}
	return category
}

// stringFor fills a free-form string parameter from the question by its name.
func (b *argumentBuilder) stringFor(name string, variant int) (string, bool) {
	category := categoryOf(name)
	if v := pick(b.hints.candidates(category), variant); v != "" {
		return v, true
	}
	suffix := ""
	if variant > 0 {
		suffix = " " + strconv.Itoa(variant+1)
	}
	switch category {
	case "place":
		return placeFallbacks[(int(inference.HashStrings(b.h, name)%uint64(len(placeFallbacks)))+variant)%len(placeFallbacks)], false
	case "path":
		return "README.md" + suffix, false
	case "dir":
		return "." + suffix, false
	case "url":
		return "https://example.com/" + strconv.Itoa(variant), false
	case "email":
		return "user" + strconv.Itoa(variant+1) + "@example.com", false
	case "date":
		return "2026-01-" + strconv.Itoa(15+variant%10), false
	case "time":
		return "09:00", false
	case "name":
		return "Ada Lovelace" + suffix, false
	case "language":
		return []string{"en", "fr", "de", "ja"}[variant%4], false
	case "command":
		return "ls -la" + suffix, false
	case "unit":
		return "metric" + suffix, false
	case "id":
		return "item_" + strconv.Itoa(variant+1), false
	}
	if category == "query" && b.hints.text != "" {
		return b.hints.text + suffix, true
	}
	if w := pick(b.hints.keywords, variant); w != "" {
		return w, false
	}
	return "example" + suffix, false
}

// pick returns the variant-th value, or "" when there are not that many.
func pick(vals []string, variant int) string {
	if variant < len(vals) {
		return vals[variant]
	}
	return ""
}

// fitLength pads or cuts val to the schema's minLength and maxLength, which
// count code points.
func fitLength(s map[string]any, val string) string {
	if minL, ok := schemaInt(s, "minLength"); ok {
		if n := utf8.RuneCountInString(val); n < minL {
			val += strings.Repeat("x", minL-n)
		}
	}
	if maxL, ok := schemaInt(s, "maxLength"); ok && utf8.RuneCountInString(val) > maxL {
		val = string([]rune(val)[:maxL])
	}
	return val
}
