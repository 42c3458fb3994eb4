package api

import (
	"net/http/httptest"
	"testing"
)

func TestParseStack(t *testing.T) {
	custom := StackHosted
	custom.Preset, custom.HopMS = "custom", 5
	for _, tc := range []struct {
		in      string
		def     Stack
		want    Stack
		wantErr bool
	}{
		{"", StackLean, StackLean, false},
		{"", StackHosted, StackHosted, false},
		{"hosted", StackLean, StackHosted, false},
		{" lean ", StackHosted, StackLean, false},
		{`{"preset":"hosted","hop_ms":5}`, StackLean, custom, false},
		{`{"hop_ms":5}`, StackHosted, custom, false},
		{`{"preset":"hosted"}`, StackLean, StackHosted, false},
		{custom.String(), StackLean, custom, false},
		{"heavy", StackLean, Stack{}, true},
		{`{"preset":"heavy"}`, StackLean, Stack{}, true},
		{`{"hop_ms":-1}`, StackLean, Stack{}, true},
		{`{"hop_ms":1e9}`, StackLean, Stack{}, true},
		{`{"hops":1}`, StackLean, Stack{}, true},
		{`{"hop_ms":"1"}`, StackLean, Stack{}, true},
		{`{`, StackLean, Stack{}, true},
	} {
		got, err := ParseStack(tc.in, tc.def, HeaderStack)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseStack(%q): err %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			if err.Status != 400 || err.Param != HeaderStack {
				t.Errorf("ParseStack(%q): error %+v, want a 400 naming %s", tc.in, err, HeaderStack)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("ParseStack(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestStackFromRequestReadsHeaderThenQuery(t *testing.T) {
	r := httptest.NewRequest("GET", "/v1/responses?agentloop_stack=hosted", nil)
	if s, err := StackFromRequest(r, StackLean); err != nil || s != StackHosted {
		t.Fatalf("query alias: %+v %v", s, err)
	}
	r.Header.Set(HeaderStack, "lean")
	if s, err := StackFromRequest(r, StackHosted); err != nil || s != StackLean {
		t.Fatalf("header wins over the query: %+v %v", s, err)
	}
	if StackLean.Modelled() || !StackHosted.Modelled() {
		t.Fatal("lean models nothing; hosted models something")
	}
	if StackHosted.String() != "hosted" {
		t.Fatalf("a preset's header value is its name, got %q", StackHosted.String())
	}
}
