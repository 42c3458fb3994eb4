package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/app"
)

func TestDrillFlagParsesRepeatsAndEnvironment(t *testing.T) {
	cfg := app.Defaults()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serverFlags(fs, &cfg)
	err := parseFlags(fs, []string{"--drill", "evict-cache:after=2", "--drill", "stall:times=3:for=150ms:scope=lane-a"},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []api.DrillSpec{{Drill: "evict-cache", AfterTurns: 2, Times: 1}, {Drill: "stall", Times: 3, DurationMS: 150, Scope: "lane-a"}}
	if len(cfg.Drills) != 2 || cfg.Drills[0] != want[0] || cfg.Drills[1] != want[1] {
		t.Fatalf("drills %+v", cfg.Drills)
	}
	cfg = app.Defaults()
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	serverFlags(fs, &cfg)
	env := map[string]string{"AGENTLOOP_DRILL": "http-429:after=1, refuse-upgrade"}
	if err := parseFlags(fs, nil, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Drills) != 2 || cfg.Drills[0].Drill != "http-429" || cfg.Drills[0].DurationMS != 1000 || cfg.Drills[1].Drill != "refuse-upgrade" {
		t.Fatalf("from the environment: %+v", cfg.Drills)
	}
}

func TestDrillFlagRefusesBadSpecs(t *testing.T) {
	for spec, want := range map[string]string{
		"explode":               "Supported drills",
		"stall:after=x":         "after",
		"stall:times=0":         "times",
		"stall:for=soon":        "for",
		"stall:for=10us":        "for",
		"stall:colour=red":      "unknown option",
		"stall:after=1:after=2": "each option once",
		"evict-cache:for=1s":    "duration_ms",
		"stall:after":           "NAME[",
		"stall:after=-1":        "after_turns",
	} {
		_, err := parseDrill(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error about %q", spec, err, want)
		}
	}
}

func FuzzDrillFlag(f *testing.F) {
	for _, s := range []string{"evict-cache", "evict-cache:after=2", "stall:after=1:times=2:for=2s:scope=k", "http-503:for=1500ms",
		"x:y", ":", "stall:for=", "refuse-upgrade:times=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := parseDrill(v)
		if err != nil {
			return
		}
		// What parses prints back to the same spec.
		again, err := parseDrill(formatDrill(s))
		if err != nil || again != s {
			if strings.ContainsAny(s.Scope, ":,") || strings.TrimSpace(s.Scope) != s.Scope {
				return // a scope holding the separators does not round-trip
			}
			t.Fatalf("%q → %+v → %q → %+v (%v)", v, s, formatDrill(s), again, err)
		}
	})
}
