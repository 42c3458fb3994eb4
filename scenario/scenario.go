package scenario

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Scenario is one scripted rollout: a repository, a task, tools, a success
// check and the agent's plan.
type Scenario struct {
	Name        string
	Title       string
	Description string
	Task        string // the user's request
	Tools       []ToolDef
	// Short says the scenario is a short session (quick-fix): its
	// conversation stays far below the full scenarios' 60k tokens.
	Short bool

	language string // shown in the developer message
	build    func() map[string]string
	suite    *testSuite
	plan     func(a *agent)
	check    func(v repoView) error

	once  sync.Once
	files map[string]string // the pristine repository, built once
}

var registry = []*Scenario{
	fixFailingTest(),
	renameAPI(),
	configMigration(),
	quickFix(),
}

// All returns every scenario in a stable order.
func All() []*Scenario { return append([]*Scenario(nil), registry...) }

// Lookup finds a scenario by name.
func Lookup(name string) (*Scenario, bool) {
	for _, s := range registry {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

func (s *Scenario) repository() map[string]string {
	s.once.Do(func() { s.files = s.build() })
	return s.files
}

// NewWorkspace returns a fresh in-memory copy of the scenario's repository.
func (s *Scenario) NewWorkspace() *Workspace {
	src := s.repository()
	files := make(map[string]string, len(src))
	for k, v := range src {
		files[k] = v
	}
	return &Workspace{files: files, suite: s.suite}
}

// markerRE matches the line that names a scenario rollout.
var markerRE = regexp.MustCompile(`(?m)^[ \t]*agentloop-scenario: ([a-z0-9][a-z0-9._-]*) seed: (-?[0-9]{1,19})[ \t]*\r?$`)

// ParseMarker finds the "agentloop-scenario: NAME seed: N" line in text.
func ParseMarker(text string) (name string, seed int64, ok bool) {
	m := markerRE.FindStringSubmatch(text)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return m[1], n, true
}

// DeveloperMessage is the agent's system prompt for a rollout of s with seed.
// It carries exactly one marker line, which lets the engine recognize the
// rollout from the conversation alone.
func (s *Scenario) DeveloperMessage(seed int64) string {
	var b strings.Builder
	b.WriteString("You are a coding agent working in a checked-out " + s.language + " repository. ")
	b.WriteString("You and the user share the same workspace; you change it only through the tools below.\n\n")
	b.WriteString("# How you work\n")
	b.WriteString("- Start by getting oriented: list the files, read the README and the code around the task, and run the tests to see where things stand.\n")
	b.WriteString("- Keep going until the task is completely resolved before ending your turn. Only stop when the tests pass or you are sure you cannot make progress.\n")
	b.WriteString("- Base every edit on file contents you have actually read. Patches must reproduce context lines exactly; if a patch does not apply, re-read the file and try again.\n")
	b.WriteString("- Make the smallest change that fixes the root cause. Keep the existing style; do not reformat unrelated code, and do not edit tests unless the user asks you to.\n")
	b.WriteString("- After each change, re-run the relevant tests. If something still fails, read the failure, find the cause and fix it.\n")
	b.WriteString("- Before each tool call, say in one short sentence what you are about to do and why.\n")
	b.WriteString("- When you are done, reply with a concise summary: what was wrong, what you changed (file by file) and how you verified it.\n\n")
	b.WriteString("# Tools\n")
	for _, t := range s.Tools {
		first, _, _ := strings.Cut(t.Description, "\n")
		fmt.Fprintf(&b, "- %s: %s\n", t.Name, first)
	}
	b.WriteString("\n# apply_patch format\n")
	b.WriteString("*** Begin Patch\n*** Update File: path/to/file\n@@ func or class the hunk belongs to\n context\n-old line\n+new line\n context\n*** End Patch\n")
	b.WriteString("Use *** Add File: and *** Delete File: to create or remove files. Give three lines of context around each change.\n\n")
	b.WriteString("# Environment\n")
	fmt.Fprintf(&b, "- Repository: %s (%s)\n", s.Title, s.language)
	b.WriteString("- Network access is disabled; all dependencies are vendored or mocked.\n")
	b.WriteString("- Sandbox: workspace-write. Approval policy: never.\n\n")
	fmt.Fprintf(&b, "agentloop-scenario: %s seed: %d\n", s.Name, seed)
	return b.String()
}

// Next is the scripted agent: given every tool call so far with its output,
// in order, it returns the next turn. The same seed and outputs always give
// the same action.
func (s *Scenario) Next(seed int64, history []Step) Action {
	a := newAgent(seed, s.Name, s.suite.style, history)
	return a.run(s.plan)
}

// Check reports whether the workspace solves the task (nil means success).
// It judges the files directly and never parses tool output.
func (s *Scenario) Check(w *Workspace) error {
	w.mu.Lock()
	files := w.snapshot()
	w.mu.Unlock()
	var problems []string
	// Tests are the contract: the task is to make them pass, not to edit them.
	orig := s.repository()
	for p, content := range orig {
		if s.suite.isTestFile(p) || p == "tests/conftest.py" {
			if files[p] != content {
				problems = append(problems, p+" was changed or deleted; the tests must stay as they were")
			}
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := checkSyntax(p, files[p]); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%v", p, err))
		}
	}
	for _, r := range s.suite.evaluate(files, s.suite.discover(files)) {
		if r.failure != nil {
			problems = append(problems, "test "+r.test.id()+" fails: "+firstLine(r.failure.message))
		}
	}
	if err := s.check(repoView(files)); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// standardTools is the tool set every scenario offers.
func standardTools() []ToolDef {
	return toolDefs(ToolListFiles, ToolReadFile, ToolSearch, ToolApplyPatch, ToolRunTests)
}
