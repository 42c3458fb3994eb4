package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/app/apptest"
)

// codexPrompt makes the chat policy call Codex's exec_command tool (the
// word "command" matches its name) with cmd taken from the back-quoted
// text, then answer from the tool's output: one harmless command and a
// continuation. It holds no digits and names no enum value, so no optional
// argument (yield_time_ms, sandbox_permissions, ...) is filled from it.
const codexPrompt = "Run the command `echo hi` and tell me what it printed."

// codexModel keeps the run fast: no modelled time at all.
const codexModel = api.ModelInstant

// codexTimeout bounds one `codex exec`, which takes about a second; it
// only stops a hung run, it is not a measurement.
const codexTimeout = 2 * time.Minute

// codexCLI is an installed Codex CLI.
type codexCLI struct {
	path    string
	version string // as `codex --version` prints it: "0.171.0"
}

// findCodex returns the Codex CLI that scripts/clients-setup.sh installs
// into .clients/, or the one $CODEX_PATH names. Without it (or without
// Node.js, which runs its launcher) the test skips, saying why, unless CI
// is set: then it fails.
func findCodex(t *testing.T) codexCLI {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		msg := why + "; `make test` or `sh scripts/clients-setup.sh` installs it into .clients/"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	path := os.Getenv("CODEX_PATH")
	if path == "" {
		abs, err := filepath.Abs(filepath.Join("..", ".clients", "node_modules", ".bin", "codex"))
		if err != nil {
			t.Fatal(err)
		}
		path = abs
	}
	if _, err := os.Stat(path); err != nil {
		missing("the Codex CLI is not installed: " + err.Error())
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("Node.js, which runs the Codex CLI, is not on PATH")
	}
	cmd := exec.Command(path, "--version")
	cmd.Env = privateEnv(t, t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --version: %v", path, err)
	}
	version, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "codex-cli ")
	if !ok {
		t.Fatalf("%s --version printed %q", path, out)
	}
	return codexCLI{path: path, version: version}
}

// engine is the whole app on a real port, with every trace it observes.
type engine struct {
	app *app.App
	log *traceLog
}

// startEngine starts the app; opts edit its configuration.
func startEngine(t *testing.T, opts ...func(*app.Config)) *engine {
	log := &traceLog{}
	opts = append([]func(*app.Config){func(c *app.Config) { c.Observer = log }}, opts...)
	return &engine{app: apptest.Start(t, opts...), log: log}
}

// finishedTraces shuts the app down, which waits for every request and
// WebSocket connection to end, so every request Codex sent has been
// observed; it returns their traces in the order they finished.
func (e *engine) finishedTraces(t *testing.T) []api.Trace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), apptest.Grace+30*time.Second)
	defer cancel()
	if err := e.app.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	return e.log.all()
}

// traceLog is an Observer that keeps what it sees.
type traceLog struct {
	mu     sync.Mutex
	traces []api.Trace
}

func (l *traceLog) ObserveTrace(t *api.Trace) {
	l.mu.Lock()
	l.traces = append(l.traces, *t)
	l.mu.Unlock()
}

func (l *traceLog) all() []api.Trace {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]api.Trace(nil), l.traces...)
}

// codexTransport is how Codex's provider reaches the engine.
type codexTransport bool

const (
	webSocketMode codexTransport = true  // supports_websockets = true
	httpOnly      codexTransport = false // one POST /v1/responses per turn
)

// providerName is the custom provider's id in Codex's config file. The built-in
// openai provider would open its WebSocket to api.openai.com whatever its
// base URL says.
const providerName = "agentloop"

// codexConfig is $CODEX_HOME/config.toml for a run against baseURL.
// --strict-config makes Codex refuse a key it does not know, so a renamed
// key (supports_websockets above all) fails the run instead of being
// ignored.
func codexConfig(baseURL string, transport codexTransport) string {
	return fmt.Sprintf(`model = %q
model_provider = %q
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.%s]
name = "agentloop"
base_url = "%s/v1"
env_key = "AGENTLOOP_KEY"
wire_api = "responses"
supports_websockets = %t
`, codexModel, providerName, providerName, baseURL, bool(transport))
}

// codexRun is one finished `codex exec --json`.
type codexRun struct {
	home           string // CODEX_HOME
	exitCode       int
	stdout, stderr string
	events         []codexEvent
}

// codexEvent is one JSONL event of `codex exec --json`, the fields the
// tests read.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Item     *struct {
		Type             string `json:"type"`
		Command          string `json:"command"`
		AggregatedOutput string `json:"aggregated_output"`
		ExitCode         *int   `json:"exit_code"`
		Status           string `json:"status"`
		Text             string `json:"text"`
		Message          string `json:"message"`
	} `json:"item"`
}

// privateEnv returns the environment Codex runs with: only what it needs
// (no proxy settings or keys of ours), with HOME, CODEX_HOME and TMPDIR
// made under root. Every codex command writes under CODEX_HOME (default
// ~/.codex), --version included.
func privateEnv(t *testing.T, root string) []string {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "AGENTLOOP_KEY=sk-local", "LANG=C.UTF-8"}
	for _, d := range []struct{ name, dir string }{{"HOME", "home"}, {"CODEX_HOME", "codex-home"}, {"TMPDIR", "tmp"}} {
		path := filepath.Join(root, d.dir)
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		env = append(env, d.name+"="+path)
	}
	return env
}

// exec runs `codex exec` against the engine at baseURL with codexPrompt,
// in a temporary working directory with a temporary CODEX_HOME and HOME.
// extra adds arguments before the prompt, such as -c overrides
// ("model_providers.agentloop.stream_max_retries=1").
func (c codexCLI) exec(t *testing.T, baseURL string, transport codexTransport, extra ...string) *codexRun {
	t.Helper()
	return c.execSession(t, baseURL, transport, true, extra...)
}

// execSession is exec; unless ephemeral, Codex keeps its session file under
// codexRun.home/sessions.
func (c codexCLI) execSession(t *testing.T, baseURL string, transport codexTransport, ephemeral bool, extra ...string) *codexRun {
	t.Helper()
	root := t.TempDir()
	env := privateEnv(t, root)
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "codex-home", "config.toml"), []byte(codexConfig(baseURL, transport)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"exec", "--json", "--strict-config", "--skip-git-repo-check", "-C", work}
	if ephemeral {
		args = append(args, "--ephemeral")
	}
	args = append(args, extra...)
	args = append(args, codexPrompt)

	ctx, cancel := context.WithTimeout(context.Background(), codexTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.path, args...)
	cmd.Dir = work
	cmd.Env = env
	// The launcher is Node; the native binary may run as its child, so a
	// timeout ends the whole process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := &codexRun{stdout: stdout.String(), stderr: stderr.String(), home: filepath.Join(root, "codex-home")}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("codex exec did not end within %v\nstdout:\n%s\nstderr:\n%s", codexTimeout, run.stdout, run.stderr)
	case errors.As(err, &exitErr):
		run.exitCode = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("codex exec: %v", err)
	}
	for _, line := range strings.Split(run.stdout, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var ev codexEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("codex exec --json printed a line that is not JSON: %q", line)
		}
		run.events = append(run.events, ev)
	}
	return run
}

// threadID is Codex's thread id, which it also sends as prompt_cache_key.
func (r *codexRun) threadID() string {
	for _, ev := range r.events {
		if ev.Type == "thread.started" {
			return ev.ThreadID
		}
	}
	return ""
}

// requireCompleted fails the test unless Codex exited 0 after running the
// command the engine asked for and printing the engine's answer, which
// names the tool whose output it read.
func (r *codexRun) requireCompleted(t *testing.T) {
	t.Helper()
	ran, answered, completed := false, false, false
	for _, ev := range r.events {
		switch {
		case ev.Type == "turn.completed":
			completed = true
		case ev.Type == "item.completed" && ev.Item != nil:
			switch ev.Item.Type {
			case "command_execution":
				// The sandbox decides whether echo succeeds; the engine's
				// part is that Codex ran it and sent back its output.
				ran = strings.Contains(ev.Item.Command, "echo hi") && ev.Item.ExitCode != nil
				if ev.Item.ExitCode != nil && *ev.Item.ExitCode != 0 {
					t.Logf("the command exited %d: %s", *ev.Item.ExitCode, ev.Item.AggregatedOutput)
				}
			case "agent_message":
				answered = strings.Contains(ev.Item.Text, "exec_command")
			}
		}
	}
	if r.exitCode != 0 || !ran || !answered || !completed {
		t.Fatalf("codex exec: exit %d, ran the command %v, answered from its output %v, turn completed %v\nstdout:\n%s\nstderr:\n%s",
			r.exitCode, ran, answered, completed, r.stdout, r.stderr)
	}
}

// logTraces shows what the engine saw, one line a request.
func logTraces(t *testing.T, traces []api.Trace) {
	t.Helper()
	for i, tr := range traces {
		client := api.Client{}
		if tr.Client != nil {
			client = *tr.Client
		}
		t.Logf("%d: %s %s session=%s originator=%q user-agent=%q beta=%q error=%q/%d drill=%q",
			i, tr.ResponseID, tr.Transport, tr.Session, client.Originator, client.UserAgent, client.Beta, tr.Error, tr.Status, tr.Drill)
	}
}

// requireCodexClient fails the test unless every trace names Codex as its
// client, as the headers of its version send it.
func requireCodexClient(t *testing.T, traces []api.Trace, version, wantBeta string) {
	t.Helper()
	for i, tr := range traces {
		c := tr.Client
		if c == nil || c.Originator != "codex_exec" || !strings.HasPrefix(c.UserAgent, "codex_exec/"+version+" ") || c.Beta != wantBeta {
			t.Errorf("trace %d: client %+v, want originator codex_exec, User-Agent codex_exec/%s …, beta %q", i, c, version, wantBeta)
		}
	}
}

func (*traceLog) ObserveOpen(string)  {}
func (*traceLog) ObserveClose(string) {}
