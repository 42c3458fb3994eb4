package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/app"
	"agentloop/rollout"
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
	if s, err := parseDrill("refuse-upgrade:status=404"); err != nil || s.Status != 404 || formatDrill(s) != "refuse-upgrade:after=0:times=1:status=404" {
		t.Fatalf("refuse-upgrade's status: %+v %v", s, err)
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
		"stall:scope=":          "scope: is empty",
		"stall:scope= ":         "scope: is empty",
		// connection-limit's lifetime (after_ms)
		"connection-limit:lifetime=0s":         "at least 1ms",
		"stall:lifetime=2s":                    "after_ms applies to connection-limit only",
		"connection-limit:lifetime=2s:after=1": "not both",
		"connection-limit:lifetime=61m":        "after_ms must be between 1 and 3600000",
		// refuse-upgrade's status
		"stall:status=405":          "status applies to refuse-upgrade only",
		"refuse-upgrade:status=500": "426, 405 or 404",
		"refuse-upgrade:status=x":   "status",
	} {
		_, err := parseDrill(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error about %q", spec, err, want)
		}
	}
}

func FuzzDrillFlag(f *testing.F) {
	for _, s := range []string{"evict-cache", "evict-cache:after=2", "stall:after=1:times=2:for=2s:scope=k", "http-503:for=1500ms",
		"x:y", ":", "stall:for=", "refuse-upgrade:times=99999999999999999999", "refuse-upgrade:status=405:scope=card"} {
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

func TestRaceDrillFlagParses(t *testing.T) {
	var got []rollout.LaneDrill
	fs := flag.NewFlagSet("race", flag.ContinueOnError)
	fs.Var(laneDrillFlag{&got}, "drill", "")
	if err := parseFlags(fs, []string{"--drill", "ws:evict-cache:after=2", "--drill", "http:stall:times=2:for=150ms"},
		func(string) string { return "" }, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := []rollout.LaneDrill{{Drill: "evict-cache", Lane: "ws", AfterTurns: 2, Times: 1}, {Drill: "stall", Lane: "http", Times: 2, DurationMS: 150}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("drills %+v, want %+v", got, want)
	}
	for spec, want := range map[string]string{
		"evict-cache":                "LANE:NAME",
		":evict-cache":               "LANE:NAME",
		"after=2:evict-cache":        "LANE:NAME",
		"ws:explode":                 "Supported drills",
		"ws:evict-cache:after=x":     "after",
		"ws:stall:colour=red":        "unknown option",
		"ws:evict-cache:scope=mine":  "leave out scope",
		"ws:evict-cache:for=1s":      "duration_ms",
		"ws:drop-mid-stream:times=0": "times",
	} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"race", "--drill", spec}, func(string) string { return "" }, io.Discard, &out)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "-drill") {
			t.Errorf("%q: got %v, want an error naming --drill about %q", spec, err, want)
		}
	}
	// The lane is checked against the race's lanes and the drill's.
	for _, args := range [][]string{
		{"race", "--lanes", "http", "--drill", "ws:evict-cache"},
		{"race", "--lanes", "http,ws", "--drill", "http:evict-cache"},
	} {
		err := run(context.Background(), args, func(string) string { return "" }, io.Discard, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), "--drill: ") {
			t.Errorf("%v: got %v, want an error naming --drill", args, err)
		}
	}
}

// TestRaceDrillInProcess races the ws lane with an evict-cache drill on
// the in-process engine: the lane recovers, so the race passes, and the
// summary names the turn the drill hit.
func TestRaceDrillInProcess(t *testing.T) {
	t.Parallel() // its own engine or process: overlaps the other slow tests of this package
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"race", "--profile", "instant", "--scenario", "quick-fix", "--lanes", "ws",
		"--drill", "ws:evict-cache:after=2", "--db", filepath.Join(t.TempDir(), "race.db")}, func(string) string { return "" }, &out, &errOut)
	if err != nil {
		t.Fatalf("race: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "drill evict-cache fired on ws turn ") || !strings.Contains(out.String(), "previous_response_not_found → full-context retry") {
		t.Fatalf("the firing is not reported:\n%s", out.String())
	}
}

func FuzzRaceDrillFlag(f *testing.F) {
	for _, s := range []string{"ws:evict-cache", "ws:evict-cache:after=2", "http:stall:after=1:times=2:for=2s", "http-optimized:http-503:for=1500ms",
		"ws", ":", "ws:", "after=1:stall", "ws:stall:scope=x", "ws:refuse-upgrade:times=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		var got []rollout.LaneDrill
		if err := (laneDrillFlag{&got}).Set(v); err != nil || len(got) != 1 {
			return
		}
		// What parses prints back to the same drill.
		var again []rollout.LaneDrill
		if err := (laneDrillFlag{&again}).Set((laneDrillFlag{&got}).String()); err != nil || len(again) != 1 || again[0] != got[0] {
			t.Fatalf("%q → %+v → %q → %+v (%v)", v, got[0], (laneDrillFlag{&got}).String(), again, err)
		}
	})
}

// TestDrillFlagTakesConnectionLimitLifetime: --drill's lifetime option is
// connection-limit's after_ms, on serve and race (TestDrillFlagRefusesBadSpecs
// has its refusals, as POST /api/drills checks it).
func TestDrillFlagTakesConnectionLimitLifetime(t *testing.T) {
	s, err := parseDrill("connection-limit:lifetime=1500ms:scope=card-1")
	if err != nil || s.AfterMS != 1500 || s.Scope != "card-1" || s.Times != 1 {
		t.Fatalf("got %+v %v", s, err)
	}
	d, err := parseLaneDrill("ws:connection-limit:lifetime=2s")
	if err != nil || d.AfterMS != 2000 || d.Lane != "ws" {
		t.Fatalf("race --drill: %+v %v", d, err)
	}
}
