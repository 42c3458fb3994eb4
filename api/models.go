package api

import (
	"net/http"
	"strconv"
	"strings"
)

// The built-in model names. A request's "model" picks the simulated model
// profile of the same name (package inference keys its profiles by these);
// "custom-<tps>" runs DefaultModel at that decode rate; any other name runs
// DefaultModel. The response echoes the name as sent.
const (
	ModelClassic = "classic"
	ModelSpark   = "spark"
	ModelBurst   = "burst"
	ModelInstant = "instant" // no modelled time at all: the engine's own maximum

	DefaultModel = ModelSpark
)

// BuiltinModel is a built-in model name and the per-stream decode rate it
// stands for on a light batch. The rate is what a client may expect of the
// name (the load benchmark measures against it); everything else about the
// simulated model is inference's.
type BuiltinModel struct {
	Name      string
	DecodeTPS float64 // tokens/s per stream; 0: no pacing (instant)
}

var builtinModels = []BuiltinModel{
	{ModelClassic, 65},
	{ModelSpark, 1000},
	{ModelBurst, 4000},
	{ModelInstant, 0},
}

// BuiltinModels returns the built-in models, slowest first (instant last).
func BuiltinModels() []BuiltinModel {
	return append([]BuiltinModel(nil), builtinModels...)
}

// ModelNames returns the built-in model names, slowest first.
func ModelNames() []string {
	out := make([]string, len(builtinModels))
	for i, m := range builtinModels {
		out[i] = m.Name
	}
	return out
}

// IsBuiltinModel reports whether name is a built-in model name. Names are
// exact: "Spark" is not one.
func IsBuiltinModel(name string) bool {
	_, ok := builtinModel(name)
	return ok
}

func builtinModel(name string) (BuiltinModel, bool) {
	for _, m := range builtinModels {
		if m.Name == name {
			return m, true
		}
	}
	return BuiltinModel{}, false
}

// CustomModelPrefix starts a model name that asks for DefaultModel at a
// decode rate of its own: "custom-250" decodes at 250 tokens/s per stream.
const CustomModelPrefix = "custom-"

// The decode rates a custom model name may ask for, in tokens/s.
const (
	MinCustomTPS = 1
	MaxCustomTPS = 100000
)

// ParseCustomModel returns the decode rate of a "custom-<tps>" name. tps is
// a decimal integer without sign or leading zeros, from MinCustomTPS to
// MaxCustomTPS. Any other name, "custom-0" or "custom-1e3" included, is not
// a custom name and runs DefaultModel at its own rate.
func ParseCustomModel(name string) (tps int, ok bool) {
	digits, ok := strings.CutPrefix(name, CustomModelPrefix)
	if !ok || digits == "" || len(digits) > len(strconv.Itoa(MaxCustomTPS)) || digits[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < MinCustomTPS || n > MaxCustomTPS {
		return 0, false
	}
	return n, true
}

// ModelDecodeTPS returns the per-stream decode rate a model name stands for:
// a built-in's, a custom name's, or DefaultModel's for any other name. 0
// means no pacing.
func ModelDecodeTPS(name string) float64 {
	if m, ok := builtinModel(name); ok {
		return m.DecodeTPS
	}
	if tps, ok := ParseCustomModel(name); ok {
		return float64(tps)
	}
	m, _ := builtinModel(DefaultModel)
	return m.DecodeTPS
}

// Model is the OpenAI model object of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the OpenAI list of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"` // "list"
	Data   []Model `json:"data"`
}

func modelObject(id string) Model {
	return Model{ID: id, Object: "model", Created: 0, OwnedBy: "agentloop"}
}

// ListModels returns the built-in models in the OpenAI list shape.
func ListModels() ModelList {
	l := ModelList{Object: "list", Data: make([]Model, 0, len(builtinModels))}
	for _, m := range builtinModels {
		l.Data = append(l.Data, modelObject(m.Name))
	}
	return l
}

// LookupModel returns the model object of a built-in name or of a valid
// custom name. Other names run DefaultModel when requested, but the engine
// does not claim to have them.
func LookupModel(id string) (Model, bool) {
	if _, ok := builtinModel(id); ok {
		return modelObject(id), true
	}
	if _, ok := ParseCustomModel(id); ok {
		return modelObject(id), true
	}
	return Model{}, false
}

// ModelNotFound is the 404 for GET /v1/models/{id} of a name the engine does
// not list.
func ModelNotFound(id string) *Error {
	return Errorf(http.StatusNotFound, "model", CodeModelNotFound, "The model '%s' does not exist or you do not have access to it.", id)
}
