package core

import (
	"encoding/json"
	"testing"

	"agentloop/api"
	"agentloop/inference"
)

// The tools' checks are kept per partition and raw tools, refused tools
// are never kept, and ResetCaches' reset of a partition forgets its own.
func TestToolChecksAreKeptPerPartition(t *testing.T) {
	c := newToolChecks(16)
	good := json.RawMessage(`[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}]`)
	bad := json.RawMessage(`[{"type":"function","name":"f g"}]`)
	for _, p := range []string{"a", "b"} {
		names, err := c.check(p, sumTools(good), good)
		if err != nil || !names.Functions["f"] {
			t.Fatalf("%s: %v %+v", p, err, names)
		}
		if _, err := c.check(p, sumTools(bad), bad); err == nil || err.Param != "tools[0].name" {
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
	if _, err := none.check("a", toolsSum{}, json.RawMessage(`[{"type":"function","name":"f g"}]`)); err == nil {
		t.Fatal("a nil toolChecks passed a bad name")
	}
	if e := New(Config{ModelCache: false}, nil); e.checks != nil {
		t.Fatal("an engine without ModelCache keeps tool checks")
	}
	if e := New(Config{ModelCache: true}, nil); e.checks == nil {
		t.Fatal("an engine with ModelCache keeps no tool checks")
	}
}

// The model configuration and the tools' checks are kept per tools' bytes,
// known by their digest: tools of the same length that differ by one byte
// resolve apart, and the same bytes again are a hit.
func TestCachesKeptPerToolsTellToolsApartByTheirBytes(t *testing.T) {
	tok, err := inference.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	e := New(Config{ModelCache: true}, &Shared{Tokenizer: tok})
	f := &api.CreateRequest{Model: "instant", Tools: json.RawMessage(`[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}]`)}
	g := &api.CreateRequest{Model: "instant", Tools: json.RawMessage(`[{"type":"function","name":"g","parameters":{"type":"object","properties":{}}}]`)}
	resolve := func(req *api.CreateRequest) (*resolvedModel, bool) {
		t.Helper()
		m, hit, err := e.resolveModel("p", req, sumTools(req.Tools), false)
		if err != nil {
			t.Fatal(err)
		}
		return m, hit
	}
	mf, hit := resolve(f)
	if hit {
		t.Fatal("the first resolution was a hit")
	}
	mg, hit := resolve(g)
	if hit || mg == mf || len(mg.tools) != 1 || mg.tools[0].Name != "g" {
		t.Fatalf("tools g resolved as %+v (hit %v), want its own configuration", mg.tools, hit)
	}
	if again, hit := resolve(f); !hit || again != mf {
		t.Fatalf("the same tools again: hit %v, same configuration %v", hit, again == mf)
	}
	if !mf.serves("p", "instant", sumTools(f.Tools)) || mf.serves("p", "instant", sumTools(g.Tools)) || mf.serves("q", "instant", sumTools(f.Tools)) {
		t.Fatal("serves does not tell partitions or tools apart")
	}
	fn, _ := e.checks.check("p", sumTools(f.Tools), f.Tools)
	gn, _ := e.checks.check("p", sumTools(g.Tools), g.Tools)
	if !fn.Functions["f"] || fn.Functions["g"] || !gn.Functions["g"] || gn.Functions["f"] {
		t.Fatalf("tool checks answered f: %+v, g: %+v", fn, gn)
	}
}
