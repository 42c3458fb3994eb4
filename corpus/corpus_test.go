package corpus

import (
	"path"
	"strings"
	"testing"

	"agentloop/workload"
)

// TestLoad: the corpus decodes (workload.Parse is strict: a file holds the
// format's fields only, so no content), every session is attributed and
// names the recording it came from in its description, a source without
// a licence file is attributed as such, and there are at least 150
// sessions from more than one agent.
func TestLoad(t *testing.T) {
	sessions, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	agents := map[string]int{}
	for _, s := range sessions {
		a := s.Attribution
		agents[a.Agent]++
		if a.Repository == "" || len(a.Commit) != 40 || a.Path == "" || a.Model == "" || a.Licence == "" {
			t.Errorf("%s: attribution %+v", s.File, a)
		}
		// The description names the recording: its trial (the directory
		// holding its sessions/ directory) or its path in the repository.
		name := a.Path
		if a.Repository == "laude-institute/terminal-bench-leaderboard" {
			name = path.Base(path.Dir(path.Dir(a.Path)))
			if a.Licence != NoLicence {
				t.Errorf("%s: licence %q, want %q", s.File, a.Licence, NoLicence)
			}
		}
		if !strings.Contains(s.Workload.Description, name) {
			t.Errorf("%s: description %q does not name %q", s.File, s.Workload.Description, name)
		}
		untimed := true
		for _, tu := range s.Workload.Turns {
			untimed = untimed && tu.ToolTimeMs == 0
		}
		if untimed && !strings.Contains(s.Workload.Description, "no tool times") {
			t.Errorf("%s: no tool times, and the description %q does not say so", s.File, s.Workload.Description)
		}
	}
	if len(sessions) < 150 || len(agents) < 2 {
		t.Errorf("%d sessions of %v", len(sessions), agents)
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	for _, c := range []struct{ p, want float64 }{{0, 1}, {0.1, 2}, {0.5, 6}, {0.95, 10.5}, {1, 11}} {
		if got := Percentile(v, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("empty")
	}
}

// TestShapeOf: the final context sums everything a session sends and
// receives; the tool times are those of answered calls; a session with
// none is counted untimed.
func TestShapeOf(t *testing.T) {
	user := func(n int) []workload.Input { return []workload.Input{{Kind: workload.KindUserMessage, Tokens: n}} }
	tool := func(n int) []workload.Input { return []workload.Input{{Kind: workload.KindToolOutput, Tokens: n}} }
	timed := &workload.Workload{Version: 2, InstructionsTokens: 10, ToolsTokens: 5, Turns: []workload.Turn{
		{Input: user(3), OutputTokens: 4, Calls: []workload.Call{{ArgumentTokens: 2}}, ToolTimeMs: 250},
		{Input: tool(7), OutputTokens: 1, Calls: []workload.Call{{ArgumentTokens: 1}}, ToolTimeMs: 99}, // the last: never waited
	}}
	untimed := &workload.Workload{Version: 2, Turns: []workload.Turn{{Input: user(1), OutputTokens: 1}}}
	s := ShapeOf([]Session{{Workload: timed}, {Workload: untimed}})
	if s.Sessions != 2 || s.Untimed != 1 || s.FinalContext.Max != 30 || s.Turns.Max != 2 ||
		s.ToolOutput.N != 1 || s.ToolOutput.Max != 7 || s.ToolTimeMs.N != 1 || s.ToolTimeMs.Max != 250 {
		t.Errorf("%+v", s)
	}
}

// TestReference: the reference run the binary carries is dated, names its
// command, and raced every session of the corpus, each with its shape.
func TestReference(t *testing.T) {
	ref, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if ref.Date == "" || !strings.HasPrefix(ref.Command, "agentloop bench corpus") || len(ref.Speeds()) == 0 {
		t.Errorf("reference dated %q, made with %q, at speeds %v", ref.Date, ref.Command, ref.Speeds())
	}
	if len(ref.Sessions) != len(sessions) {
		t.Errorf("the reference raced %d sessions, the corpus holds %d", len(ref.Sessions), len(sessions))
	}
	for i, r := range ref.Sessions {
		if i >= len(sessions) {
			break
		}
		s := sessions[i]
		if r.File != s.File || r.Turns != len(s.Workload.Turns) || r.FinalContext != FinalContext(s.Workload) {
			t.Errorf("reference session %d: %s, %d turns, %d tokens; the corpus: %s, %d, %d", i, r.File, r.Turns, r.FinalContext, s.File, len(s.Workload.Turns), FinalContext(s.Workload))
		}
	}
	if _, err := Workload(sessions[0].File); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"attribution.tsv", "reference.json", "../corpus.go", "nope.json"} {
		if _, err := Workload(bad); err == nil {
			t.Errorf("Workload(%q) served it", bad)
		}
	}
}
