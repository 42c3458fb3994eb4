package scenario

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Step is one executed tool call and the output the client returned.
type Step struct {
	Call   ToolCall
	Output string
}

// Action is the scripted agent's next turn.
type Action struct {
	Text  string     // commentary before calls, or the final answer when Done
	Calls []ToolCall // usually one call per turn
	Done  bool       // a final answer with no calls
}

// maxToolSteps caps a rollout: past it the agent gives up with a final
// answer, so no history can make it loop forever.
const maxToolSteps = 38

// seedStream is splitmix64: small, and stable across Go releases, unlike the
// exact draws of math/rand.
type seedStream struct{ state uint64 }

func newSeedStream(seed int64, name string) *seedStream {
	h := fnv.New64a()
	h.Write([]byte(name))
	return &seedStream{state: uint64(seed) ^ h.Sum64()}
}

func (r *seedStream) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *seedStream) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return int(r.next() % uint64(n))
}

// trait picks one of n variants by the seed itself, so that any n
// consecutive seeds cover every variant.
func (a *agent) trait(n int64) int64 { return ((a.seed % n) + n) % n }

func (r *seedStream) shuffle(xs []string) {
	for i := len(xs) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// stopReplay unwinds a plan when it reaches a step not yet in the history.
type stopReplay struct{}

// agent replays a plan against the history: every tool call the plan makes
// is answered from the history in order, until the plan asks for a call the
// history does not have yet; that call becomes the next Action. Plans are
// plain straight-line code that reacts to outputs, and each Next re-runs the
// plan from the start, so the agent holds no state between turns.
type agent struct {
	hist   []Step
	pos    int
	action Action
	rng    *seedStream
	seed   int64
	style  testStyle
	// outChars counts the output characters the agent has seen: it explores
	// until its context holds enough of the repository.
	outChars int

	reads   map[string][]string  // read_file outputs per path since its last change
	parsed  map[string]*fileView // reads parsed into views, on demand
	patched []string             // files changed by applied patches, in order
	runs    int                  // test runs so far
}

func newAgent(seed int64, name string, style testStyle, hist []Step) *agent {
	return &agent{hist: hist, rng: newSeedStream(seed, name), seed: seed, style: style,
		reads: map[string][]string{}, parsed: map[string]*fileView{}}
}

// call returns the output of the next call from the history, or stops the
// replay with this call as the next action.
func (a *agent) call(text, name string, args any) string {
	if a.pos >= len(a.hist) {
		if a.pos >= maxToolSteps {
			a.finish("I have used my budget of tool calls without getting the test suite to pass. " +
				"The changes so far are in the working tree; the last test run shows what still fails.")
		}
		raw, err := json.Marshal(args)
		if err != nil {
			panic("scenario: tool arguments do not marshal: " + err.Error())
		}
		a.action = Action{Text: text, Calls: []ToolCall{{Name: name, Arguments: string(raw)}}}
		panic(stopReplay{})
	}
	out := a.hist[a.pos].Output
	a.pos++
	a.outChars += len(out)
	a.observe(name, args, out)
	return out
}

// finish stops the replay with a final answer.
func (a *agent) finish(text string) {
	a.action = Action{Text: text, Done: true}
	panic(stopReplay{})
}

// run plays the plan and returns the next action.
func (a *agent) run(plan func(*agent)) (act Action) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stopReplay); !ok {
				panic(v)
			}
			act = a.action
		}
	}()
	plan(a)
	// A plan that returns without finishing has nothing left to try.
	return Action{Text: "I have nothing further to change.", Done: true}
}

// Arguments as the agent sends them; field order fixes the JSON text.
type (
	listFilesCall struct {
		Path string `json:"path,omitempty"`
	}
	readFileCall struct {
		Path      string `json:"path"`
		StartLine int    `json:"start_line,omitempty"`
		EndLine   int    `json:"end_line,omitempty"`
	}
	searchCall struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path,omitempty"`
		Regex      bool   `json:"regex,omitempty"`
		IgnoreCase bool   `json:"ignore_case,omitempty"`
	}
	applyPatchCall struct {
		Input string `json:"input"`
	}
	runTestsCall struct {
		Target  string `json:"target,omitempty"`
		Verbose bool   `json:"verbose,omitempty"`
	}
)

// observe updates what the agent knows from one output.
func (a *agent) observe(name string, args any, out string) {
	switch name {
	case ToolReadFile:
		// Only the header is read now; the lines are parsed when a patch
		// needs them, which keeps replaying long histories cheap.
		first, _, _ := strings.Cut(out, "\n")
		if m := readHeaderRE.FindStringSubmatch(first); m != nil {
			a.reads[m[1]] = append(a.reads[m[1]], out)
			delete(a.parsed, m[1])
		}
	case ToolApplyPatch:
		if strings.HasPrefix(out, patchSuccessPrefix) {
			for _, l := range splitLines(out)[1:] {
				if len(l) > 2 {
					p := l[2:]
					a.forget(p) // line numbers moved: re-read before the next edit
					a.patched = append(a.patched, p)
				}
			}
		}
	case ToolRunTests:
		a.runs++
	}
}

func (a *agent) listFiles(text, dir string) []string {
	out := a.call(text, ToolListFiles, listFilesCall{Path: dir})
	if strings.HasPrefix(out, "error:") {
		return nil
	}
	return splitLines(out)
}

func (a *agent) read(text, p string) string {
	return a.call(text, ToolReadFile, readFileCall{Path: p})
}

func (a *agent) readRange(text, p string, from, to int) string {
	return a.call(text, ToolReadFile, readFileCall{Path: p, StartLine: from, EndLine: to})
}

// searchHit is one line of search output.
type searchHit struct {
	path string
	line int
	text string
}

func (a *agent) search(text string, args searchCall) []searchHit {
	out := a.call(text, ToolSearch, args)
	var hits []searchHit
	for _, l := range splitLines(out) {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil {
			continue
		}
		hits = append(hits, searchHit{path: parts[0], line: n, text: parts[2]})
	}
	return hits
}

func (a *agent) patch(text, input string) (bool, string) {
	out := a.call(text, ToolApplyPatch, applyPatchCall{Input: input})
	return strings.HasPrefix(out, patchSuccessPrefix), out
}

// testReport is what the agent reads out of a test run.
type testReport struct {
	output    string
	passed    bool
	failures  []string // failing test names as printed
	locations []string // path:line pairs the failures point at
}

func (r testReport) failing(substr string) bool {
	for _, f := range r.failures {
		if strings.Contains(f, substr) {
			return true
		}
	}
	return false
}

var (
	goFailRE      = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	goLocRE       = regexp.MustCompile(`^\s+(\w+_test\.go:\d+):`)
	goBuildRE     = regexp.MustCompile(`^(\S+\.go:\d+):\d+: `)
	pyFailRE      = regexp.MustCompile(`^FAILED (\S+) - `)
	pyLocRE       = regexp.MustCompile(`^(\S+\.py:\d+): in `)
	vitestFailRE  = regexp.MustCompile(`^ FAIL  (.+)$`)
	vitestLocRE   = regexp.MustCompile(`^ ❯ (?:\S+ )?(\S+\.ts:\d+):\d+$`)
	vitestTotalRE = regexp.MustCompile(`^\s+Tests\s+(.*)$`)
)

func (a *agent) runTests(text, target string, verbose bool) testReport {
	out := a.call(text, ToolRunTests, runTestsCall{Target: target, Verbose: verbose})
	return parseTestReport(a.style, out)
}

// parseTestReport reads a runner's output line by line. Cheap prefix tests
// come before each regular expression: plans replay every output on every
// turn, and passing lines are the vast majority.
func parseTestReport(style testStyle, out string) testReport {
	r := testReport{output: out}
	collect := func(re *regexp.Regexp, line string, dst *[]string) {
		if m := re.FindStringSubmatch(line); m != nil {
			*dst = append(*dst, m[1])
		}
	}
	lines := splitLines(out)
	switch style {
	case styleGo:
		for _, l := range lines {
			t := strings.TrimLeft(l, " ")
			switch {
			case strings.HasPrefix(t, "--- FAIL: "):
				collect(goFailRE, l, &r.failures)
			case strings.Contains(t, "_test.go:"):
				collect(goLocRE, l, &r.locations)
			case strings.Contains(l, ".go:") && !strings.HasPrefix(l, " "):
				collect(goBuildRE, l, &r.locations)
			}
		}
		r.passed = !strings.Contains(out, "FAIL") && strings.Contains(out, "ok  ")
	case stylePytest:
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "FAILED "):
				collect(pyFailRE, l, &r.failures)
			case strings.Contains(l, ".py:") && strings.Contains(l, ": in "):
				collect(pyLocRE, l, &r.locations)
			}
		}
		last := ""
		if len(lines) > 0 {
			last = lines[len(lines)-1]
		}
		r.passed = strings.Contains(last, " passed") && !strings.Contains(last, "failed") && !strings.Contains(last, "error")
	case styleVitest:
		total := ""
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, " FAIL  "):
				collect(vitestFailRE, l, &r.failures)
			case strings.HasPrefix(l, " ❯ ") && strings.Contains(l, ".ts:"):
				collect(vitestLocRE, l, &r.locations)
			case strings.HasPrefix(strings.TrimLeft(l, " "), "Tests  "):
				if m := vitestTotalRE.FindStringSubmatch(l); m != nil {
					total = m[1]
				}
			}
		}
		r.passed = total != "" && !strings.Contains(total, "failed") && strings.Contains(total, "passed")
	}
	if r.passed {
		r.failures = nil
	}
	return r
}

// view returns what the agent has seen of p since p last changed, or nil.
func (a *agent) view(p string) *fileView {
	if v, ok := a.parsed[p]; ok {
		return v
	}
	var view *fileView
	for _, out := range a.reads[p] {
		_, v, ok := parseReadOutput(out)
		if !ok {
			continue
		}
		if view != nil && view.total == v.total {
			for n, l := range v.lines {
				view.lines[n] = l
			}
		} else {
			view = v
		}
	}
	a.parsed[p] = view
	return view
}

// forget drops what the agent has seen of p.
func (a *agent) forget(p string) {
	delete(a.reads, p)
	delete(a.parsed, p)
}

// fileView is what the agent has seen of a file through read_file.
type fileView struct {
	lines map[int]string
	total int
}

func (v *fileView) complete() bool { return v != nil && len(v.lines) == v.total }

func (v *fileView) slice() []string {
	out := make([]string, v.total)
	for n, l := range v.lines {
		if n >= 1 && n <= v.total {
			out[n-1] = l
		}
	}
	return out
}

var readHeaderRE = regexp.MustCompile(`^(\S+) \(lines (\d+)-(\d+) of (\d+)\)$`)

func parseReadOutput(out string) (string, *fileView, bool) {
	lines := splitLines(out)
	if len(lines) == 0 {
		return "", nil, false
	}
	m := readHeaderRE.FindStringSubmatch(lines[0])
	if m == nil {
		return "", nil, false
	}
	total, _ := strconv.Atoi(m[4])
	v := &fileView{lines: map[int]string{}, total: total}
	for _, l := range lines[1:] {
		num, text, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil {
			continue
		}
		v.lines[n] = text
	}
	return m[1], v, true
}

// edit is one change the agent knows how to make: replace the lines old with
// new in path. Lines compare without surrounding whitespace; new lines get the
// indentation of the first old line added in front.
type edit struct {
	path string
	old  string
	new  string
	// after, when set, is text on a line before old that disambiguates it.
	after string
	// wrongHeader is a declaration the agent may misremember as the hunk's
	// @@ line; a patch using it fails to apply.
	wrongHeader string
}

// located is an edit found in a file view.
type located struct {
	e        edit
	at, n    int // 0-based start line and length of old
	newLines []string
}

// locate finds e in lines; applied reports that the new text is already there.
func locate(lines []string, e edit) (loc located, found, applied bool) {
	old := splitLines(e.old)
	start := 0
	if e.after != "" {
		for i, l := range lines {
			if strings.Contains(l, e.after) {
				start = i
				break
			}
		}
	}
	find := func(want []string) int {
		for i := start; i+len(want) <= len(lines); i++ {
			ok := true
			for j, w := range want {
				if strings.TrimSpace(lines[i+j]) != strings.TrimSpace(w) {
					ok = false
					break
				}
			}
			if ok {
				return i
			}
		}
		return -1
	}
	if i := find(old); i >= 0 {
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
		var nl []string
		for _, l := range splitLines(e.new) {
			if strings.TrimSpace(l) == "" {
				nl = append(nl, "")
			} else {
				nl = append(nl, indent+l)
			}
		}
		return located{e: e, at: i, n: len(old), newLines: nl}, true, false
	}
	if e.new != "" && find(splitLines(e.new)) >= 0 {
		return located{}, false, true
	}
	return located{}, false, false
}

var declarationRE = regexp.MustCompile(`^\s*(func |def |class |async def |export |function |describe\(|const \w+ = |type |var )`)

// buildPatch writes a patch for the edits from what the agent has seen. It
// skips edits already applied and edits in files it has not fully read; the
// second result lists the edits included. With wrong, the first hunk of each
// file uses the edit's misremembered header.
func (a *agent) buildPatch(edits []edit, wrong bool) (string, []edit) {
	byPath := map[string][]edit{}
	var order []string
	for _, e := range edits {
		if _, ok := byPath[e.path]; !ok {
			order = append(order, e.path)
		}
		byPath[e.path] = append(byPath[e.path], e)
	}
	var b strings.Builder
	var included []edit
	usedWrong := false // one misremembered header per patch is enough
	for _, p := range order {
		v := a.view(p)
		if !v.complete() {
			continue
		}
		lines := v.slice()
		var locs []located
		for _, e := range byPath[p] {
			if l, ok, _ := locate(lines, e); ok {
				locs = append(locs, l)
			}
		}
		if len(locs) == 0 {
			continue
		}
		sort.Slice(locs, func(i, j int) bool { return locs[i].at < locs[j].at })
		fmt.Fprintf(&b, "%s%s\n", patchUpdate, p)
		const ctx = 3
		prevEnd := 0 // the applier looks for a header only after the previous hunk
		for gi := 0; gi < len(locs); {
			// Group edits whose context windows touch into one hunk.
			gj := gi + 1
			for gj < len(locs) && locs[gj].at-ctx <= locs[gj-1].at+locs[gj-1].n+ctx {
				gj++
			}
			first, last := locs[gi], locs[gj-1]
			from := max(first.at-ctx, 0)
			to := min(last.at+last.n+ctx, len(lines))
			header := ""
			for i := from - 1; i >= prevEnd; i-- {
				if declarationRE.MatchString(lines[i]) {
					header = strings.TrimSpace(lines[i])
					break
				}
			}
			if wrong && !usedWrong {
				for _, l := range locs[gi:gj] {
					if l.e.wrongHeader != "" {
						header, usedWrong = l.e.wrongHeader, true
						break
					}
				}
			}
			if header != "" {
				fmt.Fprintf(&b, "@@ %s\n", header)
			} else {
				b.WriteString("@@\n")
			}
			pos := from
			for _, l := range locs[gi:gj] {
				for ; pos < l.at; pos++ {
					fmt.Fprintf(&b, " %s\n", lines[pos])
				}
				for k := 0; k < l.n; k++ {
					fmt.Fprintf(&b, "-%s\n", lines[l.at+k])
				}
				for _, nl := range l.newLines {
					fmt.Fprintf(&b, "+%s\n", nl)
				}
				pos = l.at + l.n
				included = append(included, l.e)
			}
			for ; pos < to; pos++ {
				fmt.Fprintf(&b, " %s\n", lines[pos])
			}
			prevEnd = to
			gi = gj
		}
	}
	if len(included) == 0 {
		return "", nil
	}
	return patchBegin + "\n" + b.String() + patchEnd + "\n", included
}

// pending returns the edits not yet applied in the files the agent has fully
// read, and whether every file of edits was fully read.
func (a *agent) pending(edits []edit) ([]edit, bool) {
	var out []edit
	allSeen := true
	for _, e := range edits {
		v := a.view(e.path)
		if !v.complete() {
			allSeen = false
			continue
		}
		if _, found, _ := locate(v.slice(), e); found {
			out = append(out, e)
		}
	}
	return out, allSeen
}

// pathsOf returns the distinct paths of edits, in order.
func pathsOf(edits []edit) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range edits {
		if !seen[e.path] {
			seen[e.path] = true
			out = append(out, e.path)
		}
	}
	return out
}

// ensureRead reads every path the agent has not fully seen since its last
// change, with the commentary text.
func (a *agent) ensureRead(paths []string, text func(p string) string) {
	for _, p := range paths {
		if !a.view(p).complete() {
			a.read(text(p), p)
		}
	}
}

// applyEdits reads what it must, writes a patch for the pending edits and
// applies it, retrying once from a fresh read when the patch does not apply.
// It returns the edits it applied.
func (a *agent) applyEdits(edits []edit, wrongFirst bool, intro string) []edit {
	a.ensureRead(pathsOf(edits), func(p string) string { return "Reading " + p + " in full before editing it." })
	for attempt := 0; attempt < 3; attempt++ {
		patchText, included := a.buildPatch(edits, wrongFirst && attempt == 0)
		if len(included) == 0 {
			return nil
		}
		text := intro
		if attempt > 0 {
			text = "The context now matches the file as I just read it; applying the same change again."
		}
		ok, out := a.patch(text, patchText)
		if ok {
			return included
		}
		// The output names what did not match; re-read those files in full.
		var stale []string
		for _, p := range pathsOf(included) {
			if strings.Contains(out, p) {
				stale = append(stale, p)
			}
		}
		if len(stale) == 0 {
			stale = pathsOf(included)
		}
		for _, p := range stale {
			a.forget(p)
		}
		a.ensureRead(pathsOf(included), func(p string) string {
			return "The patch did not apply to " + p + ": my context was wrong. Re-reading the file to get the exact lines."
		})
	}
	return nil
}
