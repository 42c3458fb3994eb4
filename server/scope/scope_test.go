package scope

import (
	"testing"
	"time"

	"agentloop/api"
)

// TestScopesAreBoundedAndOwned: only a scope's creator reads it; a scope
// keeps its latest traces only, and the oldest scope goes first.
func TestScopesAreBoundedAndOwned(t *testing.T) {
	s := New()
	sc, err := s.Create(api.ScopeSpec{ToolTurns: 3}, "addr:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get(sc.ID, "addr:2"); ok || s.Delete(sc.ID, "addr:2") {
		t.Fatal("another client read or deleted the scope")
	}
	if s.ToolTurns(sc.ID) != 3 || s.ToolTurns("scope_unknown") != 0 {
		t.Fatal("tool turns")
	}
	for i := 0; i < maxTraces+5; i++ {
		s.ObserveTrace(&api.Trace{Scope: sc.ID, ResponseID: "r"})
	}
	s.ObserveTrace(&api.Trace{Scope: "other"})
	got, ok := s.Get(sc.ID, "addr:1")
	if !ok || len(got.Traces) != maxTraces || got.TracesDropped != 5 {
		t.Fatalf("%d traces, %d dropped", len(got.Traces), got.TracesDropped)
	}
	for i := 0; i < maxScopes; i++ {
		if _, err := s.Create(api.ScopeSpec{}, "addr:1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := s.Get(sc.ID, "addr:1"); ok {
		t.Fatal("the oldest scope outlived the bound")
	}
	s.now = func() time.Time { return time.Now().Add(2 * maxAge) }
	late, _ := s.Create(api.ScopeSpec{}, "addr:1")
	if len(s.order) != 1 || s.order[0] != late.ID {
		t.Fatalf("expired scopes kept: %d", len(s.order))
	}
}

func FuzzDecodeScopeSpec(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"tool_turns":4}`, `{"tool_turns":-1}`, `{"tool_turns":"x"}`, `{"k":1}`, `{} {}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeScopeSpec(b)
		if err != nil {
			if err.Status != 400 {
				t.Fatalf("status %d", err.Status)
			}
			return
		}
		if Check(s) != nil {
			t.Fatalf("decoded a spec Check refuses: %+v", s)
		}
	})
}

// TestInFlightCountsUntilLeave: a request on a scope's mount counts in
// flight from Enter until its leave, once however often leave is called;
// an unknown scope counts nothing.
func TestInFlightCountsUntilLeave(t *testing.T) {
	s := New()
	sc, _ := s.Create(api.ScopeSpec{}, "addr:1")
	inFlight := func() int {
		got, _ := s.Get(sc.ID, "addr:1")
		return got.InFlight
	}
	a, b := s.Enter(sc.ID), s.Enter(sc.ID)
	s.Enter("scope_unknown")()
	if n := inFlight(); n != 2 {
		t.Fatalf("in flight %d, want 2", n)
	}
	a()
	a()
	if n := inFlight(); n != 1 {
		t.Fatalf("in flight %d after one leave (called twice), want 1", n)
	}
	b()
	if n := inFlight(); n != 0 {
		t.Fatalf("in flight %d after both left", n)
	}
}
