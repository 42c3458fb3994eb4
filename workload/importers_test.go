package workload

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The fixtures under testdata are written by hand in each recording's
// format; none is a source's file.

// importCase is one fixture and the workload its importer must give
// (words counts the tokens).
type importCase struct {
	name     string
	file     string
	importer func([]byte) (*Workload, error)
	want     Workload
	// describes are what the description must say.
	describes []string
}

func importers() []importCase {
	in := func(kind string, n int) Input { return Input{Kind: kind, Tokens: n} }
	user, tool := KindUserMessage, KindToolOutput
	return []importCase{{
		name: "asciinema mini-swe-agent", file: "testdata/mini-swe-agent-1.7.0.cast",
		importer: func(b []byte) (*Workload, error) { return ImportMiniSWEAgentCast(bytes.NewReader(b), words) },
		want: Workload{Version: Version, Source: "mini-swe-agent-1.7.0", InstructionsTokens: 4, Turns: []Turn{
			// The log record and its traceback after the reply are not
			// counted; the command runs from 3.000 s (the reply printed)
			// to 3.250 s (its output printed): the spinner's 1.7 s before
			// the reply is the model's.
			{Input: []Input{in(user, 4)}, OutputTokens: 8, Calls: []Call{{2}}, ToolTimeMs: 250},
			// No command: the next "User:" is the agent's feedback.
			{Input: []Input{in(tool, 6)}, OutputTokens: 4},
			// The final submission's command is a call that no request
			// answers: the replay ends there.
			{Input: []Input{in(user, 6)}, OutputTokens: 6, Calls: []Call{{2}}},
		}},
		describes: []string{"test/model-x", "tool time from a command's printing to its output's end"},
	}, {
		name: "SWE-agent .traj", file: "testdata/swe-agent.traj",
		importer: func(b []byte) (*Workload, error) { return ImportSWEAgent(bytes.NewReader(b), words) },
		want: Workload{Version: Version, Source: "swe-agent", InstructionsTokens: 8, Turns: []Turn{
			{Input: []Input{in(user, 4)}, OutputTokens: 6, Calls: []Call{{1}}, ToolTimeMs: 250},
			{Input: []Input{in(tool, 2)}, OutputTokens: 9, Calls: []Call{{5}}, ToolTimeMs: 1500},
			{Input: []Input{in(tool, 3)}, OutputTokens: 2, Calls: []Call{{1}}},
		}},
		describes: []string{"no timestamps: tool time is its execution_time"},
	}, {
		name: "ATIF", file: "testdata/atif-v1.4.json",
		importer: func(b []byte) (*Workload, error) { return ImportATIF(bytes.NewReader(b), words) },
		want: Workload{Version: Version, Source: "atif:test-agent-0.1", InstructionsTokens: 4, Turns: []Turn{
			{Input: []Input{in(user, 5)}, InputTokens: 120, OutputTokens: 30, ReasoningTokens: 5, Calls: []Call{{1}, {1}}},
			{Input: []Input{in(tool, 3), in(tool, 1), in(user, 5)}, OutputTokens: 9},
		}},
		describes: []string{"test/model-y", "session s-1", "no tool times"},
	}, {
		name: "Claude Code", file: "testdata/claude-code.jsonl",
		importer: func(b []byte) (*Workload, error) { return ImportClaudeCode(bytes.NewReader(b), words) },
		want: Workload{Version: Version, Source: "claude-code-2.0.1", ToolsTokens: 99, Turns: []Turn{
			// One response in two records; the subagent's record is skipped;
			// the call's record at 2.5 s, its result's at 3.75 s.
			{Input: []Input{in(user, 4)}, InputTokens: 103, OutputTokens: 12, ReasoningTokens: 4, Calls: []Call{{2}}, ToolTimeMs: 1250},
			// A person answered after 55 s: not a tool's time.
			{Input: []Input{in(tool, 4)}, InputTokens: 125, OutputTokens: 4},
			{Input: []Input{in(user, 1)}, InputTokens: 132, OutputTokens: 3},
		}},
		describes: []string{"sess-1", "test-model-z"},
	}}
}

// TestImporters reads each hand-written fixture and compares the whole
// workload, counts and times, with what its recording holds.
func TestImporters(t *testing.T) {
	for _, c := range importers() {
		t.Run(c.name, func(t *testing.T) {
			b, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			w, err := c.importer(b)
			if err != nil {
				t.Fatal(err)
			}
			desc := w.Description
			for _, s := range c.describes {
				if !strings.Contains(desc, s) {
					t.Errorf("description %q does not say %q", desc, s)
				}
			}
			w.Description = ""
			if !reflect.DeepEqual(*w, c.want) {
				t.Errorf("got  %+v\nwant %+v", *w, c.want)
			}
			if err := w.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestImportersNameThePlace: what an importer cannot read is refused with
// an error that names where.
func TestImportersNameThePlace(t *testing.T) {
	cast, _ := os.ReadFile("testdata/mini-swe-agent-1.7.0.cast")
	castLines := strings.SplitN(string(cast), "\n", 4)
	for _, c := range []struct {
		name, body, want string
		imp              func(string) error
	}{
		{"cast empty", "", "empty", castImp},
		{"cast header", `{"width":80}`, "line 1: not an asciinema header", castImp},
		{"cast v3", `{"version":3}`, "line 1: asciinema format version 3", castImp},
		{"cast event", castLines[0] + "\n" + castLines[1] + "\n[1, \"o\"]\n", "line 3: not an asciinema event", castImp},
		{"cast no banner", castLines[0] + "\n" + castLines[1] + "\n", "no mini-swe-agent session", castImp},
		{"cast version", strings.Replace(string(cast), "version 1.7.0", "version 2.0.0", 1), `mini-swe-agent "2.0.0"`, castImp},
		{"traj JSON", "[1]", "not a SWE-agent trajectory", trajImp},
		{"traj role", `{"history":[{"role":"user","content":"a"},{"role":"robot","content":"b"}]}`, "history[1].role", trajImp},
		{"traj no response", `{"history":[{"role":"user","content":"a"}]}`, "no assistant message", trajImp},
		{"atif version", `{"schema_version":"ATIF-v2.0","steps":[]}`, `schema_version: "ATIF-v2.0"`, atifImp},
		{"atif step", `{"schema_version":"ATIF-v1.4","steps":[{"source":"user","message":"a"},{"source":"agent","message":7}]}`, "steps[1]: not an ATIF step", atifImp},
		{"atif source", `{"schema_version":"ATIF-v1.4","steps":[{"source":"robot"}]}`, "steps[0].source", atifImp},
		{"claude line", "{\"type\":\"user\"}\n{", "line 2: not a JSON record", claudeImp},
		{"claude content", `{"type":"user","message":{"role":"user","content":7}}`, "line 1: message.content", claudeImp},
		{"claude no response", `{"type":"user","message":{"role":"user","content":"a"}}`, "no assistant message", claudeImp},
	} {
		err := c.imp(c.body)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "workload: ") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func castImp(s string) error {
	_, err := ImportMiniSWEAgentCast(strings.NewReader(s), words)
	return err
}
func trajImp(s string) error   { _, err := ImportSWEAgent(strings.NewReader(s), words); return err }
func atifImp(s string) error   { _, err := ImportATIF(strings.NewReader(s), words); return err }
func claudeImp(s string) error { _, err := ImportClaudeCode(strings.NewReader(s), words); return err }

// fuzzImport checks what every importer promises: an error with the
// package's prefix, or a valid workload.
func fuzzImport(f *testing.F, fixture string, imp func([]byte) (*Workload, error)) {
	b, err := os.ReadFile(fixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := imp(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "workload: ") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("imported an invalid workload: %v", err)
		}
		if _, err := w.Canonical(); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzImportMiniSWEAgentCast(f *testing.F) {
	fuzzImport(f, "testdata/mini-swe-agent-1.7.0.cast", func(b []byte) (*Workload, error) {
		return ImportMiniSWEAgentCast(bytes.NewReader(b), words)
	})
}

func FuzzImportSWEAgent(f *testing.F) {
	fuzzImport(f, "testdata/swe-agent.traj", func(b []byte) (*Workload, error) { return ImportSWEAgent(bytes.NewReader(b), words) })
}

func FuzzImportATIF(f *testing.F) {
	fuzzImport(f, "testdata/atif-v1.4.json", func(b []byte) (*Workload, error) { return ImportATIF(bytes.NewReader(b), words) })
}

func FuzzImportClaudeCode(f *testing.F) {
	fuzzImport(f, "testdata/claude-code.jsonl", func(b []byte) (*Workload, error) { return ImportClaudeCode(bytes.NewReader(b), words) })
}

// TestImportSWEAgentWithoutTimes: a trajectory without execution_time
// says in its description that it has no tool times.
func TestImportSWEAgentWithoutTimes(t *testing.T) {
	w, err := ImportSWEAgent(strings.NewReader(`{"history":[{"role":"user","content":"a b"},{"role":"assistant","content":"c","action":"ls"},{"role":"user","content":"d"},{"role":"assistant","content":"e"}]}`), words)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(w.Description, "no timestamps, no tool times") || w.Turns[0].ToolTimeMs != 0 || w.Turns[1].Input[0].Kind != KindToolOutput {
		t.Errorf("%+v", w)
	}
}
