package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"agentloop/corpus"
	"agentloop/inference"
	"agentloop/workload"
)

// importers are the recordings `agentloop workload import --from` reads,
// by name (docs/workload.md, "Importing recordings").
var importers = map[string]func(io.Reader, workload.Counter) (*workload.Workload, error){
	"codex":                    workload.ImportCodex,
	"asciinema-mini-swe-agent": workload.ImportMiniSWEAgentCast,
	"swe-agent":                workload.ImportSWEAgent,
	"atif":                     workload.ImportATIF,
	"claude-code":              workload.ImportClaudeCode,
}

// importerNames lists importers' names in the order the usage gives them.
const importerNames = "codex, asciinema-mini-swe-agent, swe-agent, atif, claude-code"

// runWorkload is `agentloop workload import [--from KIND] FILE`: a
// recorded session (by default a Codex CLI session file, the rollout JSONL
// under $CODEX_HOME/sessions) tokenized locally with the engine's
// tokenizer, written as a workload (docs/workload.md).
func runWorkload(_ context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "corpus" {
		return runWorkloadCorpus(args[1:], getenv, stdout, stderr)
	}
	if len(args) == 0 || args[0] != "import" {
		fmt.Fprint(stderr, "Usage: agentloop workload import [flags] FILE\n       agentloop workload corpus [--json]\n")
		return fmt.Errorf("agentloop workload: the subcommands are import and corpus")
	}
	fs := flag.NewFlagSet("agentloop workload import", flag.ContinueOnError)
	out := fs.String("o", "", "write the workload to this file instead of standard output")
	from := fs.String("from", "codex", "what FILE is: "+importerNames)
	name := fs.String("description", "", "name the recording (its run and trial, or its path in its source) at the head of the workload's description")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: agentloop workload import [flags] FILE\n\nReads a recorded agent session (--from: a Codex CLI %s session file by default; an asciinema recording of mini-swe-agent,\na SWE-agent .traj, an ATIF trajectory or a Claude Code session JSONL), tokenizes it locally with the engine's tokenizer\nand prints its workload (docs/workload.md): counts, sizes and tool times, never content.\n\nFlags:\n", workload.CodexVersion)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args[1:], getenv, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("agentloop workload import takes one FILE")
	}
	imp, ok := importers[*from]
	if !ok {
		return fmt.Errorf("agentloop workload import: --from %q; expected one of %s", *from, importerNames)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	tok, err := inference.NewTokenizer()
	if err != nil {
		return err
	}
	w, err := imp(f, tok.Count)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if *name != "" {
		w.Description = workload.Cut(*name+"; "+w.Description, workload.MaxDescriptionLen)
	}
	if *out == "" {
		return w.Encode(stdout)
	}
	o, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := w.Encode(o); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// runWorkloadCorpus is `agentloop workload corpus`: the shape of the
// corpus the binary carries (corpus/README.md), per agent and in all.
func runWorkloadCorpus(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop workload corpus", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agentloop workload corpus [flags]\n\nPrints the shape of the corpus of recorded sessions the binary carries (corpus/README.md): turns, final context,\ntool output sizes and recorded tool times (p10, median, p90, max), per agent and in all.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	sessions, err := corpus.Load()
	if err != nil {
		return err
	}
	type group struct {
		Agent string       `json:"agent"`
		Shape corpus.Shape `json:"shape"`
	}
	byAgent := map[string][]corpus.Session{}
	var agents []string
	for _, s := range sessions {
		a := s.Attribution.Agent + ", " + s.Attribution.Model
		if _, ok := byAgent[a]; !ok {
			agents = append(agents, a)
		}
		byAgent[a] = append(byAgent[a], s)
	}
	var groups []group
	for _, a := range agents {
		groups = append(groups, group{a, corpus.ShapeOf(byAgent[a])})
	}
	groups = append(groups, group{"all", corpus.ShapeOf(sessions)})
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(groups)
	}
	for _, g := range groups {
		sh := g.Shape
		fmt.Fprintf(stdout, "%s: %d sessions (%d without tool times)\n", g.Agent, sh.Sessions, sh.Untimed)
		fmt.Fprintf(stdout, "  %-26s %9s %9s %9s %9s %7s\n", "", "p10", "median", "p90", "max", "n")
		for _, r := range []struct {
			name string
			s    corpus.Spread
		}{{"turns", sh.Turns}, {"final context (tokens)", sh.FinalContext}, {"tool output (tokens)", sh.ToolOutput}, {"tool time (ms)", sh.ToolTimeMs}} {
			fmt.Fprintf(stdout, "  %-26s %9.0f %9.0f %9.0f %9.0f %7d\n", r.name, r.s.P10, r.s.P50, r.s.P90, r.s.Max, r.s.N)
		}
	}
	return nil
}

// loadWorkload reads --workload: a file in the format of docs/workload.md,
// or "session:ID", an inspector session of the server at serverURL.
func loadWorkload(ctx context.Context, spec, serverURL, apiKey string) (*workload.Workload, error) {
	if id, ok := strings.CutPrefix(spec, "session:"); ok {
		if serverURL == "" {
			return nil, fmt.Errorf("--workload %s needs --server: the session is the server's", spec)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(serverURL, "/")+"/api/sessions/"+id+"/workload", nil)
		if err != nil {
			return nil, err
		}
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("--workload %s: %w", spec, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return nil, fmt.Errorf("--workload %s: %s: %s", spec, resp.Status, strings.TrimSpace(string(b)))
		}
		w, err := workload.Decode(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("--workload %s: %w", spec, err)
		}
		return w, nil
	}
	f, err := os.Open(spec)
	if err != nil {
		return nil, fmt.Errorf("--workload: %w", err)
	}
	defer f.Close()
	w, err := workload.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("--workload %s: %w", spec, err)
	}
	return w, nil
}
