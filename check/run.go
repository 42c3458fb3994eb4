package check

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"agentloop/api"
)

// Config is one gauntlet.
type Config struct {
	// Server is the agentloop server's URL, e.g. http://127.0.0.1:8080.
	Server string
	// APIKey is the server's --api-key, if it has one; the client gets it
	// as OPENAI_API_KEY (else a placeholder).
	APIKey string
	// Command and its arguments start the client; "{base_url}" in an
	// argument becomes the scope's base URL.
	Command []string
	Checks  []*Check
	// TimeLimit bounds each run of the client (default 60 s).
	TimeLimit time.Duration
	Options   Options
	// Env adds to the client's environment (after this process's own, so
	// it wins).
	Env []string
	// ClientOutput, when set, gets the client's standard output and error.
	ClientOutput io.Writer
	// Progress, when set, gets a line per run.
	Progress io.Writer
	// HTTP is the client for the server's API (default http.DefaultClient).
	HTTP *http.Client
}

// Report is a gauntlet's report card.
type Report struct {
	ID            string   `json:"id,omitempty"`
	Object        string   `json:"object"` // "check.report"
	Client        []string `json:"client"`
	Server        string   `json:"server,omitempty"`
	StartedUnixNS int64    `json:"started_unix_ns"`
	EndedUnixNS   int64    `json:"ended_unix_ns"`
	Results       []Result `json:"results"`
	Passed        int      `json:"passed"`
	Failed        int      `json:"failed"`
	NotExercised  int      `json:"not_exercised"`
}

// OK says no check failed.
func (r *Report) OK() bool { return r.Failed == 0 }

// count fills the report's totals.
func (r *Report) count() {
	r.Passed, r.Failed, r.NotExercised = 0, 0, 0
	for _, res := range r.Results {
		switch res.Verdict {
		case Pass:
			r.Passed++
		case Fail:
			r.Failed++
		default:
			r.NotExercised++
		}
	}
}

// PlaceholderKey is OPENAI_API_KEY for a server without --api-key.
const PlaceholderKey = "sk-agentloop-check"

// Run runs the gauntlet: checks with a drill each in a run of their own,
// checks without one together in one run.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if len(cfg.Command) == 0 {
		return nil, errors.New("no client command")
	}
	if cfg.TimeLimit <= 0 {
		cfg.TimeLimit = 60 * time.Second
	}
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	cfg.Options.defaults()
	cfg.Server = strings.TrimRight(cfg.Server, "/")
	rep := &Report{Object: "check.report", Client: cfg.Command, Server: cfg.Server, StartedUnixNS: time.Now().UnixNano()}
	results := map[string]Result{}
	var passive []*Check
	for _, c := range cfg.Checks {
		if c.Drill == nil {
			passive = append(passive, c)
			continue
		}
		res, err := runDrilled(ctx, cfg, c)
		if err != nil {
			return nil, err
		}
		results[c.ID] = res
	}
	if len(passive) > 0 {
		res, _, err := runChecks(ctx, cfg, passive, sessionTurns)
		if err != nil {
			return nil, err
		}
		for i, c := range passive {
			results[c.ID] = res[i]
		}
	}
	for _, c := range cfg.Checks {
		rep.Results = append(rep.Results, results[c.ID])
	}
	rep.EndedUnixNS = time.Now().UnixNano()
	rep.count()
	return rep, nil
}

// longerSessions is how many times a check whose drill fires on a
// connection's age runs the client again, with twice the tool turns, when
// the client finished its task before the drill fired: how long K turns
// take depends on the client and the machine, and a fast one outruns the
// limit (docs/decisions.md, "the one timed check").
const longerSessions = 2

// runDrilled runs one check that has a drill, again with a longer session
// (longerSessions) when its drill fires on time and the client, offering
// tools, ended well before it fired; the verdict's reason then names the
// turns it took.
func runDrilled(ctx context.Context, cfg Config, c *Check) (Result, error) {
	k, timed := c.ToolTurns(), c.Drill(cfg.Options).AfterMS > 0
	for again := 0; ; again++ {
		res, run, err := runChecks(ctx, cfg, []*Check{c}, k)
		if err != nil {
			return Result{}, err
		}
		fired := run.Drill != nil && len(run.Drill.Firings) > 0
		outrun := !fired && run.Exit == 0 && len(run.Traces) > 0 && offeredTools(run)
		if !timed || !outrun || again == longerSessions {
			if again > 0 {
				res[0].Reason += fmt.Sprintf(" (run %d of the client, with K=%d: with fewer turns it finished before the drill fired)", again+1, k)
			}
			return res[0], nil
		}
		k *= 2
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "check %s: the client finished before its drill fired; again with K=%d\n", c.ID, k)
		}
	}
}

// runChecks runs the client once in a scope of its own with k tool turns,
// with the first check's drill armed (checks run together only when none
// has one), and grades each check on what the engine saw, which it
// returns with the grades.
func runChecks(ctx context.Context, cfg Config, checks []*Check, k int) ([]Result, *Observed, error) {
	var sc api.Scope
	if err := cfg.Call(ctx, http.MethodPost, "/api/scopes", api.ScopeSpec{ToolTurns: k}, &sc); err != nil {
		return nil, nil, err
	}
	defer cfg.Call(context.WithoutCancel(ctx), http.MethodDelete, "/api/scopes/"+sc.ID, nil, nil)
	var armed *api.Drill
	if checks[0].Drill != nil {
		spec := checks[0].Drill(cfg.Options)
		spec.Scope = sc.ID
		armed = &api.Drill{}
		if err := cfg.Call(ctx, http.MethodPost, "/api/drills", spec, armed); err != nil {
			return nil, nil, err
		}
		defer cfg.Call(context.WithoutCancel(ctx), http.MethodDelete, "/api/drills/"+armed.ID, nil, nil)
	}
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.ID
	}
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "check %s: client on %s (K=%d)\n", strings.Join(names, ", "), cfg.Server+sc.Path, k)
	}
	run := &Observed{Scope: sc.ID, ToolTurns: k, Options: cfg.Options, StartedUnixNS: time.Now().UnixNano()}
	run.Exit = cfg.startClient(ctx, cfg.Server+sc.Path)
	run.EndedUnixNS = time.Now().UnixNano()
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	traces, err := cfg.settledTraces(ctx, sc.ID)
	if err != nil {
		return nil, nil, err
	}
	run.Traces = traces
	if armed != nil {
		if err := cfg.Call(ctx, http.MethodGet, "/api/drills/"+armed.ID, nil, armed); err != nil {
			return nil, nil, err
		}
		run.Drill = armed
	}
	out := make([]Result, len(checks))
	for i, c := range checks {
		res := c.Grade(run)
		res.ID, res.Passes, res.Scope, res.Exit = c.ID, c.Passes, sc.ID, run.Exit
		res.DurationMS = (run.EndedUnixNS - run.StartedUnixNS) / 1e6
		if armed != nil {
			res.Drill = armed.Drill
		}
		out[i] = res
	}
	return out, run, nil
}

// startClient runs the client's command against base and returns its
// exit status, -1 when the time limit killed it.
func (cfg Config) startClient(ctx context.Context, base string) int {
	ctx, cancel := context.WithTimeout(ctx, cfg.TimeLimit)
	defer cancel()
	args := make([]string, len(cfg.Command)-1)
	for i, a := range cfg.Command[1:] {
		args[i] = strings.ReplaceAll(a, "{base_url}", base)
	}
	cmd := exec.CommandContext(ctx, cfg.Command[0], args...)
	key := cfg.APIKey
	if key == "" {
		key = PlaceholderKey
	}
	cmd.Env = append(append(os.Environ(), cfg.Env...), "OPENAI_BASE_URL="+base, "OPENAI_API_KEY="+key)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // the client's children too
	cmd.WaitDelay = 2 * time.Second
	out := cfg.ClientOutput
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return -1
	case err == nil:
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "client did not start: %v\n", err)
	}
	return 127
}

// settledTraces reads the scope's traces once the engine has handed over
// the last of them: no request or WebSocket connection of the client is
// still in flight on the scope's mount (api.Scope.InFlight), however
// loaded the machine. The client has exited by then, so this ends unless
// it left something open behind it, which settleDeadline bounds.
func (cfg Config) settledTraces(ctx context.Context, id string) ([]api.Trace, error) {
	deadline := time.Now().Add(settleDeadline)
	for {
		var sc api.Scope
		if err := cfg.Call(ctx, http.MethodGet, "/api/scopes/"+id, nil, &sc); err != nil {
			return nil, err
		}
		if sc.InFlight == 0 {
			return Ordered(sc.Traces), nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the client exited, but %d of its requests or connections on the scope were still open after %s", sc.InFlight, settleDeadline)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// settleDeadline bounds how long a check waits, after its client exited,
// for the requests the client left open to end.
const settleDeadline = 30 * time.Second

// Ordered sorts traces in the order their requests arrived, which
// grading reads them in (the engine hands them over as they end).
func Ordered(traces []api.Trace) []api.Trace {
	slices.SortStableFunc(traces, func(a, b api.Trace) int { return cmp.Compare(a.StartedUnixNS, b.StartedUnixNS) })
	return traces
}

// Call sends a JSON request to the server's API and decodes its answer.
func (cfg Config) Call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(cfg.Server, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
