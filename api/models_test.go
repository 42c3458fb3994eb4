package api

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestModelNames(t *testing.T) {
	tests := []struct {
		name    string
		builtin bool
		custom  int // 0: not a custom name
		tps     float64
	}{
		{"classic", true, 0, 65},
		{"spark", true, 0, 1000},
		{"burst", true, 0, 4000},
		{"instant", true, 0, 0},
		{"Spark", false, 0, 1000}, // names are exact
		{"gpt-5.5", false, 0, 1000},
		{"", false, 0, 1000},
		{"custom-250", false, 250, 250},
		{"custom-1", false, 1, 1},
		{"custom-100000", false, 100000, 100000},
		{"custom-100001", false, 0, 1000}, // out of bounds: runs spark
		{"custom-0", false, 0, 1000},
		{"custom-", false, 0, 1000},
		{"custom-0250", false, 0, 1000}, // not canonical
		{"custom--5", false, 0, 1000},
		{"custom-+5", false, 0, 1000},
		{"custom-2.5", false, 0, 1000},
		{"custom-1e3", false, 0, 1000},
		{"custom-250 ", false, 0, 1000},
		{"custom-99999999999999999999", false, 0, 1000},
		{"Custom-250", false, 0, 1000},
	}
	for _, tt := range tests {
		if got := IsBuiltinModel(tt.name); got != tt.builtin {
			t.Errorf("IsBuiltinModel(%q) = %v, want %v", tt.name, got, tt.builtin)
		}
		tps, ok := ParseCustomModel(tt.name)
		if ok != (tt.custom != 0) || tps != tt.custom {
			t.Errorf("ParseCustomModel(%q) = %d, %v; want %d", tt.name, tps, ok, tt.custom)
		}
		if got := ModelDecodeTPS(tt.name); got != tt.tps {
			t.Errorf("ModelDecodeTPS(%q) = %v, want %v", tt.name, got, tt.tps)
		}
		_, listed := LookupModel(tt.name)
		if listed != (tt.builtin || tt.custom != 0) {
			t.Errorf("LookupModel(%q) found = %v", tt.name, listed)
		}
	}
}

func TestListModelsShape(t *testing.T) {
	b, err := json.Marshal(ListModels())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"object":"list","data":[` +
		`{"id":"classic","object":"model","created":0,"owned_by":"agentloop"},` +
		`{"id":"spark","object":"model","created":0,"owned_by":"agentloop"},` +
		`{"id":"burst","object":"model","created":0,"owned_by":"agentloop"},` +
		`{"id":"instant","object":"model","created":0,"owned_by":"agentloop"}]}`
	if string(b) != want {
		t.Fatalf("ListModels = %s\nwant %s", b, want)
	}
	if names := ModelNames(); !slices.Equal(names, []string{"classic", "spark", "burst", "instant"}) {
		t.Fatalf("ModelNames = %v", names)
	}
	ms := BuiltinModels()
	ms[0].Name = "changed" // a copy: callers cannot change the built-ins
	if !IsBuiltinModel("classic") || IsBuiltinModel("changed") {
		t.Fatal("BuiltinModels returned the built-in slice itself")
	}
	if e := ModelNotFound("nope"); e.Status != 404 || e.Code != "model_not_found" || e.Param != "model" {
		t.Fatalf("ModelNotFound = %+v", e)
	}
}
