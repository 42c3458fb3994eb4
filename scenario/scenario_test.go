package scenario

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// The conversation must reach about 60k o200k tokens. Measured with
// tiktoken-go (o200k_base), these rollouts run 3.3 (Go with line numbers and
// go test -v output) to 3.9 (Python) characters per token, so 240,000
// characters is at least 61k tokens for every scenario.
const minConversationChars = 240_000

// A short scenario (quick-fix) reads only what the failures point at: its
// conversation reaches at least about 20k tokens (the first verbose test
// run alone is some 32,000 characters), in 10 turns or more.
const (
	minShortConversationChars = 75_000
	minShortTurns             = 10
)

type rollout struct {
	steps  []Step
	texts  []string
	final  Action
	turns  int
	chars  int
	ws     *Workspace
	runOut []string // run_tests outputs in order
}

var (
	rolloutMu    sync.Mutex
	rolloutCache = map[string]rollout{}
)

// cachedDrive drives each scenario and seed once per test binary; the
// rollouts are read-only afterwards.
func cachedDrive(t *testing.T, s *Scenario, seed int64) rollout {
	t.Helper()
	key := fmt.Sprintf("%s/%d", s.Name, seed)
	rolloutMu.Lock()
	r, ok := rolloutCache[key]
	rolloutMu.Unlock()
	if ok {
		return r
	}
	r = drive(t, s, seed)
	rolloutMu.Lock()
	rolloutCache[key] = r
	rolloutMu.Unlock()
	return r
}

// drive plays a scenario in-process the way the engine and the client do.
func drive(t *testing.T, s *Scenario, seed int64) rollout {
	t.Helper()
	r := rollout{ws: s.NewWorkspace()}
	r.chars = len(s.Task) + len(s.DeveloperMessage(seed))
	for r.turns < 60 {
		act := s.Next(seed, r.steps)
		r.turns++
		r.chars += len(act.Text)
		if act.Done {
			if len(act.Calls) != 0 {
				t.Fatalf("turn %d: a final answer must not carry calls", r.turns)
			}
			r.final = act
			return r
		}
		if len(act.Calls) != 1 {
			t.Fatalf("turn %d: want one call, got %d", r.turns, len(act.Calls))
		}
		c := act.Calls[0]
		out, err := r.ws.Call(c.Name, c.Arguments)
		if err != nil {
			t.Fatalf("turn %d: %s(%s): %v", r.turns, c.Name, c.Arguments, err)
		}
		r.chars += len(c.Arguments) + len(out)
		if c.Name == ToolRunTests {
			r.runOut = append(r.runOut, out)
		}
		r.steps = append(r.steps, Step{Call: c, Output: out})
	}
	t.Fatalf("no final answer within 60 turns")
	return r
}

func TestRollouts(t *testing.T) {
	for _, s := range All() {
		for seed := int64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", s.Name, seed), func(t *testing.T) {
				t.Parallel()
				r := cachedDrive(t, s, seed)
				minTurns, minChars, maxChars := 15, minConversationChars, 1<<30
				if s.Short {
					// A short one stays well below a full one's context.
					minTurns, minChars, maxChars = minShortTurns, minShortConversationChars, minConversationChars*3/5
				}
				if r.turns < minTurns || r.turns > 40 {
					t.Errorf("finished in %d turns, want %d..40", r.turns, minTurns)
				}
				if err := s.Check(r.ws); err != nil {
					t.Errorf("Check after the rollout: %v", err)
				}
				if r.chars < minChars || r.chars > maxChars {
					t.Errorf("conversation has %d characters, want %d..%d", r.chars, minChars, maxChars)
				}
				if len(r.runOut) < 2 {
					t.Fatalf("run_tests ran %d times, want at least 2", len(r.runOut))
				}
				style := s.suite.style
				if first := parseTestReport(style, r.runOut[0]); first.passed || len(first.failures) == 0 {
					t.Errorf("first test run does not report a failure:\n%s", r.runOut[0])
				}
				if last := parseTestReport(style, r.runOut[len(r.runOut)-1]); !last.passed {
					t.Errorf("last test run does not pass:\n%s", r.runOut[len(r.runOut)-1])
				}
				if strings.TrimSpace(r.final.Text) == "" {
					t.Error("empty final answer")
				}
			})
		}
	}
}

func TestCheckFailsOnFreshWorkspace(t *testing.T) {
	for _, s := range All() {
		if err := s.Check(s.NewWorkspace()); err == nil {
			t.Errorf("%s: Check passes on the untouched repository", s.Name)
		}
	}
}

func TestCheckRejectsEditedTests(t *testing.T) {
	s, _ := Lookup("fix-failing-test")
	r := drive(t, s, 1)
	w := r.ws
	out, err := w.Call(ToolApplyPatch, mustJSON(t, map[string]string{"input": "*** Begin Patch\n*** Delete File: internal/money/money_test.go\n*** End Patch\n"}))
	if err != nil || !strings.HasPrefix(out, patchSuccessPrefix) {
		t.Fatalf("delete test file: %q, %v", out, err)
	}
	if err := s.Check(w); err == nil || !strings.Contains(err.Error(), "money_test.go") {
		t.Errorf("Check = %v, want it to name the deleted test file", err)
	}
}

func TestDeterminism(t *testing.T) {
	for _, s := range All() {
		a, b := cachedDrive(t, s, 3), drive(t, s, 3)
		if !reflect.DeepEqual(calls(a), calls(b)) || a.final.Text != b.final.Text {
			t.Errorf("%s: seed 3 gave two different rollouts", s.Name)
		}
		// Different seeds explore differently.
		same := true
		for seed := int64(4); seed <= 6 && same; seed++ {
			same = reflect.DeepEqual(calls(a), calls(cachedDrive(t, s, seed)))
		}
		if same {
			t.Errorf("%s: seeds 3..6 all gave the same calls", s.Name)
		}
	}
}

func calls(r rollout) []ToolCall {
	out := make([]ToolCall, len(r.steps))
	for i, st := range r.steps {
		out[i] = st.Call
	}
	return out
}

// Some seeds must need more than one patch-and-test round.
func TestSomeSeedsIterate(t *testing.T) {
	for _, name := range []string{"fix-failing-test", "rename-api", "config-migration"} {
		s, _ := Lookup(name)
		iterated, retried := false, false
		for seed := int64(1); seed <= 6; seed++ {
			r := cachedDrive(t, s, seed)
			patches, failedPatch := 0, false
			for _, st := range r.steps {
				if st.Call.Name == ToolApplyPatch {
					if strings.HasPrefix(st.Output, patchSuccessPrefix) {
						patches++
					} else {
						failedPatch = true
					}
				}
			}
			iterated = iterated || patches >= 2
			retried = retried || failedPatch
		}
		if !iterated {
			t.Errorf("%s: no seed in 1..6 needed a second patch", name)
		}
		if !retried {
			t.Errorf("%s: no seed in 1..6 recovered from a patch that did not apply", name)
		}
	}
}

func TestMarker(t *testing.T) {
	for _, s := range All() {
		for _, seed := range []int64{0, 7, -3, 1 << 40} {
			msg := s.DeveloperMessage(seed)
			if n := strings.Count(msg, "agentloop-scenario:"); n != 1 {
				t.Errorf("%s: %d marker lines", s.Name, n)
			}
			name, got, ok := ParseMarker("preamble\n" + msg + "\ntrailer")
			if !ok || name != s.Name || got != seed {
				t.Errorf("ParseMarker = %q, %d, %v; want %q, %d", name, got, ok, s.Name, seed)
			}
		}
	}
	tests := []struct {
		name string
		text string
		ok   bool
	}{
		{name: "missing", text: "nothing here", ok: false},
		{name: "no seed", text: "agentloop-scenario: fix-failing-test", ok: false},
		{name: "inline is not a line", text: "say agentloop-scenario: x seed: 1", ok: false},
		{name: "crlf", text: "a\r\nagentloop-scenario: rename-api seed: 12\r\nb", ok: true},
		{name: "seed overflow", text: "agentloop-scenario: x seed: 99999999999999999999", ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, ok := ParseMarker(tc.text); ok != tc.ok {
				t.Errorf("ParseMarker(%q) ok = %v, want %v", tc.text, ok, tc.ok)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	names := map[string]bool{}
	for _, s := range All() {
		if names[s.Name] {
			t.Errorf("duplicate scenario %s", s.Name)
		}
		names[s.Name] = true
		got, ok := Lookup(s.Name)
		if !ok || got != s {
			t.Errorf("Lookup(%q) failed", s.Name)
		}
		if n := len(s.NewWorkspace().Files()); n < 20 || n > 40 {
			t.Errorf("%s: repository has %d files, want 20..40", s.Name, n)
		}
	}
	if len(names) < 3 {
		t.Errorf("%d scenarios, want at least 3", len(names))
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup(nope) succeeded")
	}
}

// Every original source file must pass the syntax check, so that a build
// failure in run_tests always means the agent broke something.
func TestRepositoriesAreWellFormed(t *testing.T) {
	for _, s := range All() {
		w := s.NewWorkspace()
		for _, p := range w.Files() {
			content, _ := w.ReadFile(p)
			if err := checkSyntax(p, content); err != nil {
				t.Errorf("%s: %s:%v", s.Name, p, err)
			}
		}
		if tests := s.suite.discover(w.snapshot()); len(tests) < 30 {
			t.Errorf("%s: discovered %d tests, want a realistic suite", s.Name, len(tests))
		}
		for id := range s.suite.checks {
			found := false
			for _, tt := range s.suite.discover(w.snapshot()) {
				found = found || tt.id() == id
			}
			if !found {
				t.Errorf("%s: check %q matches no test", s.Name, id)
			}
		}
	}
}

// Histories that do not come from the plan (garbage outputs) must never make
// Next panic, and it must still end.
func TestNextToleratesOddHistories(t *testing.T) {
	garbage := []string{"", "error: nope", "\x00\xff", strings.Repeat("x", 5000), "Success. Updated the following files:\nM ../etc", "FAIL\n--- FAIL: TestX"}
	for _, s := range All() {
		var hist []Step
		for i := 0; i < 45; i++ {
			act := s.Next(int64(i), hist)
			if act.Done {
				break
			}
			hist = append(hist, Step{Call: act.Calls[0], Output: garbage[i%len(garbage)]})
		}
		if act := s.Next(1, hist); !act.Done && len(hist) >= maxToolSteps {
			t.Errorf("%s: still calling tools after %d steps", s.Name, len(hist))
		}
	}
}

func TestQuoteEmulationMatchesTestTable(t *testing.T) {
	for _, c := range fulfilQuoteCases {
		if got, _ := c.quote(percentFixed, tierFixed); got != c.want {
			t.Errorf("%s: fixed quote = %d, want %d", c.name, got, c.want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A template literal's text is skipped, before and after each ${...} it
// holds, and one left open is reported where its text began.
func TestSyntaxCheckReadsTemplateLiterals(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"const a = `x ${f(`y ${b}`)} ( z`;\n", ""},
		{"const a = `{ ${b} [`;\nf(a);\n", ""},
		{"const a = `open\n", "1:11: unterminated template literal"},
		{"const a = `x ${b} open\n", "1:17: unterminated template literal"},
		{"const a = `x ${b;\n", "unexpected EOF, expected }"},
	} {
		err := checkSyntax("a.ts", c.src)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v, want none", c.src, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}
