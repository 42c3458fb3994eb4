package core

import (
	"encoding/json"
	"testing"
)

// The tools' checks are kept per partition and raw tools, refused tools
// are never kept, and ResetCaches' reset of a partition forgets its own.
func TestToolChecksAreKeptPerPartition(t *testing.T) {
	c := newToolChecks(16)
	good := json.RawMessage(`[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}]`)
	bad := json.RawMessage(`[{"type":"function","name":"f g"}]`)
	for _, p := range []string{"a", "b"} {
		names, err := c.check(p, good)
		if err != nil || !names.Functions["f"] {
			t.Fatalf("%s: %v %+v", p, err, names)
		}
		if _, err := c.check(p, bad); err == nil || err.Param != "tools[0].name" {
			t.Fatalf("%s: a bad name passed: %+v", p, err)
		}
	}
	if n := c.cache.order.Len(); n != 2 {
		t.Fatalf("%d kept, want the good tools of each partition", n)
	}
	c.cache.reset("a")
	if n := c.cache.order.Len(); n != 1 {
		t.Fatalf("%d kept after resetting a", n)
	}
}

// The baseline engine (no ModelCache) caches nothing across requests, the
// tools' checks included: it pays the check every request, as it pays the
// model's resolution.
func TestAnEngineWithoutModelCacheKeepsNoToolChecks(t *testing.T) {
	var none *toolChecks
	if _, err := none.check("a", json.RawMessage(`[{"type":"function","name":"f g"}]`)); err == nil {
		t.Fatal("a nil toolChecks passed a bad name")
	}
	if e := New(Config{ModelCache: false}, nil); e.checks != nil {
		t.Fatal("an engine without ModelCache keeps tool checks")
	}
	if e := New(Config{ModelCache: true}, nil); e.checks == nil {
		t.Fatal("an engine with ModelCache keeps no tool checks")
	}
}
