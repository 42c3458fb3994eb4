package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/workload"
)

// TestRaceWorkloadFile: agentloop race --workload FILE replays the file in
// every default lane, and a bad file or a session without --server is a
// clear error.
func TestRaceWorkloadFile(t *testing.T) {
	getenv := func(string) string { return "" }
	var out bytes.Buffer
	args := []string{"race", "--workload", "testdata/workload.json", "--profile", "instant", "--db", filepath.Join(t.TempDir(), "a.db")}
	if err := run(context.Background(), args, getenv, &out, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "scenario workload") || strings.Count(out.String(), " passed ") < 4 || !strings.Contains(out.String(), "Your workload: WebSocket mode would finish") {
		t.Fatalf("output:\n%s", out.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"race", "--workload", "testdata/nothing.json"}, "no such file"},
		{[]string{"race", "--workload", "session:abc"}, "needs --server"},
		{[]string{"race", "--workload", "main.go"}, "--workload main.go: workload: invalid JSON"},
		{[]string{"race", "--workload", "testdata/workload.json", "--lanes", "ws,prototype"}, "prototype lane does not replay workloads"},
	} {
		err := run(context.Background(), c.args, getenv, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestWorkloadImport: agentloop workload import tokenizes a Codex session
// file with the engine's tokenizer: the first turn's parts add up to the
// input the engine counted, and the result races.
func TestWorkloadImport(t *testing.T) {
	getenv := func(string) string { return "" }
	out := filepath.Join(t.TempDir(), "w.json")
	if err := run(context.Background(), []string{"workload", "import", "-o", out, "../../workload/testdata/codex-0.171.0.jsonl"}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	first := w.Turns[0]
	if sum := w.InstructionsTokens + w.ToolsTokens + first.NewInputTokens(); sum != first.InputTokens || w.Source != "codex-0.171.0" {
		t.Fatalf("first turn's parts add up to %d, the engine counted %d: %s", sum, first.InputTokens, b)
	}
	if err := run(context.Background(), []string{"workload", "import", "main.go"}, getenv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "main.go: workload: line 1") {
		t.Errorf("a Go file: %v", err)
	}
	var res bytes.Buffer
	if err := run(context.Background(), []string{"race", "--workload", out, "--profile", "instant", "--lanes", "http-optimized,ws", "--db", filepath.Join(t.TempDir(), "a.db")}, getenv, &res, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, res.String())
	}
}

// TestWorkloadImportFrom: --from picks the importer for each recording
// the workload package reads, with the engine's tokenizer; --description
// names the recording at the head of the description; an unknown kind is
// refused with the list.
func TestWorkloadImportFrom(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, c := range []struct{ from, file, source string }{
		{"asciinema-mini-swe-agent", "mini-swe-agent-1.7.0.cast", "mini-swe-agent-1.7.0"},
		{"swe-agent", "swe-agent.traj", "swe-agent"},
		{"atif", "atif-v1.4.json", "atif:test-agent-0.1"},
		{"claude-code", "claude-code.jsonl", "claude-code-2.0.1"},
	} {
		var out bytes.Buffer
		args := []string{"workload", "import", "--from", c.from, "--description", "run r1 trial t1", "../../workload/testdata/" + c.file}
		if err := run(context.Background(), args, getenv, &out, io.Discard); err != nil {
			t.Fatalf("%s: %v", c.from, err)
		}
		w, err := workload.Parse(out.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", c.from, err)
		}
		if w.Source != c.source || !strings.HasPrefix(w.Description, "run r1 trial t1; ") || len(w.Turns) < 2 {
			t.Errorf("%s: %s", c.from, out.String())
		}
	}
	err := run(context.Background(), []string{"workload", "import", "--from", "aider", "main.go"}, getenv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--from "aider"`) || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestWorkloadCorpus: agentloop workload corpus prints the shape of the
// corpus the binary carries, per agent and in all.
func TestWorkloadCorpus(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"workload", "corpus"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mini-swe-agent 1.7.0, anthropic/claude-sonnet-4-20250514: ", "SWE-agent, ", "all: ", "final context (tokens)", "tool time (ms)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
