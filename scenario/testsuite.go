package scenario

import (
	"fmt"
	"hash/fnv"
	"path"
	"regexp"
	"sort"
	"strings"
)

// testStyle selects the test runner whose output run_tests imitates.
type testStyle int

const (
	styleGo testStyle = iota
	stylePytest
	styleVitest
)

// testSuite knows how to find a repository's tests and which of them depend
// on the state of the code.
type testSuite struct {
	style  testStyle
	module string // Go module path
	// checks decide tests by id (group + "::" + name). A test without a check
	// passes as long as the code around it is well-formed.
	checks map[string]testCheck
}

// testCheck judges one test against the repository's current files and
// returns nil when it passes.
type testCheck func(v repoView) *testFailure

// testFailure is what a failing test reports.
type testFailure struct {
	marker  string // text on the assertion's line in the test file
	errType string // pytest/vitest exception name
	message string
	frames  []sourceFrame // innermost last; where the error came from in the code
}

// sourceFrame points at a line of a source file by a piece of its text.
type sourceFrame struct {
	path, marker string
}

// repoView gives checks read access to the files.
type repoView map[string]string

func (v repoView) file(p string) string { return v[p] }

// matches reports whether file p matches the regular expression.
func (v repoView) matches(p string, re *regexp.Regexp) bool { return re.MatchString(v[p]) }

func lineContaining(content, s string, from int) int {
	for i, l := range splitLines(content) {
		if i+1 >= from && strings.Contains(l, s) {
			return i + 1
		}
	}
	return 0
}

// funcEnclosing returns the name of the function around line n (1-based),
// looking back for a def/func/function declaration.
func funcEnclosing(content string, n int) string {
	lines := splitLines(content)
	for i := min(n, len(lines)) - 1; i >= 0; i-- {
		if m := enclosingFuncRE.FindStringSubmatch(lines[i]); m != nil {
			for _, g := range m[1:] {
				if g != "" {
					return g
				}
			}
		}
	}
	return "<module>"
}

var enclosingFuncRE = regexp.MustCompile(`^\s*(?:async\s+)?def\s+(\w+)|^func\s+(?:\([^)]*\)\s*)?(\w+)|^\s*(?:export\s+)?(?:async\s+)?function\s+(\w+)|^\s*(?:public\s+|private\s+|async\s+)*(\w+)\s*\([^)]*\)\s*(?::\s*[\w<>\[\]| ]+)?\s*\{\s*$`)

// discoveredTest is one test (or subtest) found in a test file.
type discoveredTest struct {
	group string // Go: package directory; pytest/vitest: the test file
	file  string
	name  string // Go: TestX or TestX/sub; pytest: test_x or TestC::test_x; vitest: "suite > case"
	line  int
	sub   bool // a Go subtest
}

func (t discoveredTest) id() string { return t.group + "::" + t.name }

var (
	goTestFuncRE   = regexp.MustCompile(`^func (Test\w+)\(t \*testing\.T\)`)
	goSubtestRE    = regexp.MustCompile(`^\s*(?:\{\s*)?name:\s*"([^"]+)"|t\.Run\("([^"]+)"`)
	pyTestFuncRE   = regexp.MustCompile(`^def (test_\w+)\(`)
	pyTestClassRE  = regexp.MustCompile(`^class (Test\w+)`)
	pyTestMethodRE = regexp.MustCompile(`^    def (test_\w+)\(self`)
	tsDescribeRE   = regexp.MustCompile("^(\\s*)describe\\((['\"`])(.*?)['\"`]")
	tsCaseRE       = regexp.MustCompile("^(\\s*)(?:it|test)\\((['\"`])(.*?)['\"`]")
)

func (s *testSuite) isTestFile(p string) bool {
	switch s.style {
	case styleGo:
		return strings.HasSuffix(p, "_test.go")
	case stylePytest:
		b := path.Base(p)
		return strings.HasPrefix(p, "tests/") && strings.HasPrefix(b, "test_") && strings.HasSuffix(b, ".py")
	default:
		return strings.HasSuffix(p, ".test.ts")
	}
}

// discover lists the tests in the files, in the order the runner runs them.
func (s *testSuite) discover(files map[string]string) []discoveredTest {
	paths := make([]string, 0, len(files))
	for p := range files {
		if s.isTestFile(p) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out []discoveredTest
	for _, p := range paths {
		lines := splitLines(files[p])
		switch s.style {
		case styleGo:
			group := path.Dir(p)
			top := ""
			for i, l := range lines {
				if m := goTestFuncRE.FindStringSubmatch(l); m != nil {
					top = m[1]
					out = append(out, discoveredTest{group: group, file: p, name: top, line: i + 1})
					continue
				}
				if l == "}" || strings.HasPrefix(l, "func ") {
					top = "" // the end of the test function
					continue
				}
				if top == "" {
					continue
				}
				if m := goSubtestRE.FindStringSubmatch(l); m != nil {
					name := m[1] + m[2]
					out = append(out, discoveredTest{group: group, file: p, name: top + "/" + strings.ReplaceAll(name, " ", "_"), line: i + 1, sub: true})
				}
			}
		case stylePytest:
			class := ""
			for i, l := range lines {
				if m := pyTestClassRE.FindStringSubmatch(l); m != nil {
					class = m[1]
					continue
				}
				if l != "" && l[0] != ' ' && l[0] != '\t' && l[0] != '#' && l[0] != '@' && l[0] != ')' {
					class = ""
				}
				if m := pyTestFuncRE.FindStringSubmatch(l); m != nil {
					out = append(out, discoveredTest{group: p, file: p, name: m[1], line: i + 1})
				} else if m := pyTestMethodRE.FindStringSubmatch(l); m != nil && class != "" {
					out = append(out, discoveredTest{group: p, file: p, name: class + "::" + m[1], line: i + 1})
				}
			}
		case styleVitest:
			type frame struct {
				indent int
				name   string
			}
			var stack []frame
			pop := func(indent int) {
				for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
					stack = stack[:len(stack)-1]
				}
			}
			for i, l := range lines {
				if m := tsDescribeRE.FindStringSubmatch(l); m != nil {
					pop(len(m[1]))
					stack = append(stack, frame{len(m[1]), m[3]})
				} else if m := tsCaseRE.FindStringSubmatch(l); m != nil {
					pop(len(m[1]))
					names := make([]string, 0, len(stack)+1)
					for _, f := range stack {
						names = append(names, f.name)
					}
					names = append(names, m[3])
					out = append(out, discoveredTest{group: p, file: p, name: strings.Join(names, " > "), line: i + 1})
				}
			}
		}
	}
	return out
}

// testResult is the outcome of one discovered test.
type testResult struct {
	test    discoveredTest
	failure *testFailure
	ms      int // a stable stand-in for the test's duration
}

// stableMillis derives a duration from a name, so outputs stay deterministic.
func stableMillis(key string, spread int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(spread))
}

// selectTarget filters tests by a run_tests target (a directory or a file).
func selectTarget(tests []discoveredTest, target string) []discoveredTest {
	if target == "" {
		return tests
	}
	var out []discoveredTest
	for _, t := range tests {
		if underPrefix(t.file, target) || underPrefix(t.group, target) {
			out = append(out, t)
		}
	}
	return out
}

func (w *Workspace) runTests(a RunTestsArgs) string {
	s := w.suite
	if s == nil {
		return "error: this repository has no test runner configured"
	}
	raw := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(a.Target), "/..."), "...")
	target, err := cleanPath(raw)
	if err != nil {
		return "error: " + err.Error()
	}
	files := w.snapshot()
	tests := selectTarget(s.discover(files), target)
	if target != "" && len(tests) == 0 {
		if _, isFile := files[target]; !isFile && !w.isDir(target) {
			return fmt.Sprintf("error: %s: no such file or directory", target)
		}
	}
	switch s.style {
	case styleGo:
		return s.formatGo(files, tests, target, a.Verbose)
	case stylePytest:
		return s.formatPytest(files, tests, a.Verbose)
	default:
		return s.formatVitest(files, tests, a.Verbose)
	}
}

// evaluate runs the checks of the given tests.
func (s *testSuite) evaluate(files map[string]string, tests []discoveredTest) []testResult {
	v := repoView(files)
	out := make([]testResult, len(tests))
	for i, t := range tests {
		out[i] = testResult{test: t, ms: stableMillis(t.id(), 9)}
		if check, ok := s.checks[t.id()]; ok {
			out[i].failure = check(v)
		}
	}
	return out
}

// firstSyntaxError returns the first malformed source file among paths.
func firstSyntaxError(files map[string]string, paths []string) (string, *syntaxError) {
	sort.Strings(paths)
	for _, p := range paths {
		if err := checkSyntax(p, files[p]); err != nil {
			return p, err
		}
	}
	return "", nil
}

// failureLine locates the failure's assertion in the test file.
func failureLine(files map[string]string, t discoveredTest, f *testFailure) int {
	if f.marker != "" {
		if n := lineContaining(files[t.file], f.marker, t.line); n > 0 {
			return n
		}
	}
	return t.line
}

func (s *testSuite) formatGo(files map[string]string, tests []discoveredTest, target string, verbose bool) string {
	// Every directory holding Go files is a package, tested or not.
	pkgs := map[string]bool{}
	for p := range files {
		if strings.HasSuffix(p, ".go") && !strings.HasPrefix(p, "testdata/") && !strings.Contains(p, "/testdata/") {
			dir := path.Dir(p)
			if target == "" || underPrefix(dir, target) || underPrefix(p, target) {
				pkgs[dir] = false
			}
		}
	}
	byPkg := map[string][]discoveredTest{}
	for _, t := range tests {
		byPkg[t.group] = append(byPkg[t.group], t)
		pkgs[t.group] = true
	}
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	importPath := func(dir string) string {
		if dir == "." {
			return s.module
		}
		return s.module + "/" + dir
	}
	var b strings.Builder
	anyFail := false
	for _, dir := range dirs {
		var goFiles []string
		for p := range files {
			if path.Dir(p) == dir && strings.HasSuffix(p, ".go") {
				goFiles = append(goFiles, p)
			}
		}
		if bad, err := firstSyntaxError(files, goFiles); err != nil {
			anyFail = true
			fmt.Fprintf(&b, "# %s\n%s:%d:%d: syntax error: %s\nFAIL\t%s [build failed]\n", importPath(dir), bad, err.line, err.col, err.msg, importPath(dir))
			continue
		}
		if !pkgs[dir] {
			fmt.Fprintf(&b, "?   \t%s\t[no test files]\n", importPath(dir))
			continue
		}
		results := s.evaluate(files, byPkg[dir])
		// A parent test fails when any of its subtests fails.
		failedTop := map[string]bool{}
		for _, r := range results {
			if r.failure != nil {
				top, _, _ := strings.Cut(r.test.name, "/")
				failedTop[top] = true
			}
		}
		pkgFailed := len(failedTop) > 0
		total := 0
		for i := 0; i < len(results); {
			top := results[i]
			j := i + 1
			for j < len(results) && results[j].test.sub && strings.HasPrefix(results[j].test.name, top.test.name+"/") {
				j++
			}
			subs := results[i+1 : j]
			topMs := top.ms
			for _, r := range subs {
				topMs += r.ms
			}
			total += topMs
			failed := failedTop[top.test.name]
			if verbose {
				fmt.Fprintf(&b, "=== RUN   %s\n", top.test.name)
				for _, r := range subs {
					fmt.Fprintf(&b, "=== RUN   %s\n", r.test.name)
				}
			}
			if verbose || failed {
				status := "PASS"
				if failed {
					status = "FAIL"
				}
				fmt.Fprintf(&b, "--- %s: %s (%s)\n", status, top.test.name, goSeconds(topMs))
				if top.failure != nil {
					fmt.Fprintf(&b, "    %s:%d: %s\n", path.Base(top.test.file), failureLine(files, top.test, top.failure), top.failure.message)
				}
				for _, r := range subs {
					if r.failure == nil && !verbose {
						continue
					}
					st := "PASS"
					if r.failure != nil {
						st = "FAIL"
					}
					fmt.Fprintf(&b, "    --- %s: %s (%s)\n", st, r.test.name, goSeconds(r.ms))
					if r.failure != nil {
						for k, msg := range strings.Split(r.failure.message, "\n") {
							if k == 0 {
								fmt.Fprintf(&b, "        %s:%d: %s\n", path.Base(r.test.file), failureLine(files, r.test, r.failure), msg)
							} else {
								fmt.Fprintf(&b, "            %s\n", msg)
							}
						}
					}
				}
			}
			i = j
		}
		elapsed := fmt.Sprintf("%.3fs", float64(total+stableMillis(dir, 30)+4)/1000)
		switch {
		case pkgFailed:
			anyFail = true
			fmt.Fprintf(&b, "FAIL\nFAIL\t%s\t%s\n", importPath(dir), elapsed)
		case verbose:
			fmt.Fprintf(&b, "PASS\nok  \t%s\t%s\n", importPath(dir), elapsed)
		default:
			fmt.Fprintf(&b, "ok  \t%s\t%s\n", importPath(dir), elapsed)
		}
	}
	if anyFail {
		b.WriteString("FAIL\n")
	}
	return b.String()
}

func goSeconds(ms int) string { return fmt.Sprintf("%.2fs", float64(ms)/1000) }

// pytestRule pads a title with = to pytest's 80 columns.
func pytestRule(ch, title string) string {
	const width = 80
	if title == "" {
		return strings.Repeat(ch, width)
	}
	title = " " + title + " "
	left := (width - len(title)) / 2
	if left < 1 {
		return title
	}
	right := width - len(title) - left
	return strings.Repeat(ch, left) + title + strings.Repeat(ch, max(right, 0))
}

func (s *testSuite) formatPytest(files map[string]string, tests []discoveredTest, verbose bool) string {
	var b strings.Builder
	b.WriteString(pytestRule("=", "test session starts") + "\n")
	b.WriteString("platform linux -- Python 3.12.4, pytest-8.3.2, pluggy-1.5.0\n")
	b.WriteString("rootdir: /workspace\nconfigfile: pyproject.toml\n")
	var srcs []string
	for p := range files {
		if strings.HasSuffix(p, ".py") {
			srcs = append(srcs, p)
		}
	}
	if bad, err := firstSyntaxError(files, srcs); err != nil {
		b.WriteString("collected 0 items / 1 error\n\n")
		b.WriteString(pytestRule("=", "ERRORS") + "\n")
		b.WriteString(pytestRule("_", "ERROR collecting "+bad) + "\n")
		fmt.Fprintf(&b, "E     File \"/workspace/%s\", line %d\nE   SyntaxError: %s\n", bad, err.line, err.msg)
		b.WriteString(pytestRule("=", "short test summary info") + "\n")
		fmt.Fprintf(&b, "ERROR %s\n!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n", bad)
		b.WriteString(pytestRule("=", "1 error in 0.31s") + "\n")
		return b.String()
	}
	results := s.evaluate(files, tests)
	fmt.Fprintf(&b, "collected %d items\n\n", len(results))
	failed := 0
	totalMs := 0
	for i := 0; i < len(results); {
		j := i
		var marks strings.Builder
		for j < len(results) && results[j].test.group == results[i].test.group {
			r := results[j]
			totalMs += r.ms
			if r.failure != nil {
				failed++
			}
			if verbose {
				status := "PASSED"
				if r.failure != nil {
					status = "FAILED"
				}
				line := r.test.file + "::" + r.test.name + " " + status
				fmt.Fprintf(&b, "%-73s [%3d%%]\n", line, (j+1)*100/len(results))
			} else if r.failure != nil {
				marks.WriteByte('F')
			} else {
				marks.WriteByte('.')
			}
			j++
		}
		if !verbose {
			line := results[i].test.file + " " + marks.String()
			fmt.Fprintf(&b, "%-73s [%3d%%]\n", line, j*100/len(results))
		}
		i = j
	}
	if failed > 0 {
		b.WriteString("\n" + pytestRule("=", "FAILURES") + "\n")
		for _, r := range results {
			if r.failure == nil {
				continue
			}
			f := r.failure
			title := strings.ReplaceAll(r.test.name, "::", ".")
			b.WriteString(pytestRule("_", title) + "\n")
			n := failureLine(files, r.test, f)
			fmt.Fprintf(&b, "%s:%d: in %s\n    %s\n", r.test.file, n, lastName(r.test.name), strings.TrimSpace(lineAt(files[r.test.file], n)))
			for _, fr := range f.frames {
				m := lineContaining(files[fr.path], fr.marker, 0)
				if m == 0 {
					continue
				}
				fmt.Fprintf(&b, "%s:%d: in %s\n    %s\n", fr.path, m, funcEnclosing(files[fr.path], m), strings.TrimSpace(lineAt(files[fr.path], m)))
			}
			for k, msg := range strings.Split(f.message, "\n") {
				if k == 0 {
					fmt.Fprintf(&b, "E   %s: %s\n", f.errType, msg)
				} else {
					fmt.Fprintf(&b, "E   %s\n", msg)
				}
			}
		}
		b.WriteString(pytestRule("=", "short test summary info") + "\n")
		for _, r := range results {
			if r.failure != nil {
				first, _, _ := strings.Cut(r.failure.message, "\n")
				fmt.Fprintf(&b, "FAILED %s::%s - %s: %s\n", r.test.file, r.test.name, r.failure.errType, first)
			}
		}
	}
	secs := fmt.Sprintf("%.2fs", float64(totalMs*3+stableMillis("pytest", 200)+150)/1000)
	switch {
	case failed > 0:
		b.WriteString(pytestRule("=", fmt.Sprintf("%d failed, %d passed in %s", failed, len(results)-failed, secs)) + "\n")
	case len(results) == 0:
		b.WriteString(pytestRule("=", "no tests ran in "+secs) + "\n")
	default:
		b.WriteString(pytestRule("=", fmt.Sprintf("%d passed in %s", len(results), secs)) + "\n")
	}
	return b.String()
}

func lastName(name string) string {
	if i := strings.LastIndex(name, "::"); i >= 0 {
		return name[i+2:]
	}
	return name
}

func lineAt(content string, n int) string {
	lines := splitLines(content)
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

func (s *testSuite) formatVitest(files map[string]string, tests []discoveredTest, verbose bool) string {
	var b strings.Builder
	b.WriteString("\n RUN  v1.6.0 /workspace\n\n")
	var srcs []string
	for p := range files {
		if strings.HasSuffix(p, ".ts") {
			srcs = append(srcs, p)
		}
	}
	if bad, err := firstSyntaxError(files, srcs); err != nil {
		fmt.Fprintf(&b, " FAIL  %s [ %s ]\nError: Transform failed with 1 error:\n/workspace/%s:%d:%d: ERROR: %s\n\n", bad, bad, bad, err.line, err.col, err.msg)
		b.WriteString(" Test Files  1 failed (1)\n      Tests  no tests\n   Duration  0.41s\n")
		return b.String()
	}
	results := s.evaluate(files, tests)
	failedFiles, totalFiles, failed := 0, 0, 0
	totalMs := 0
	for i := 0; i < len(results); {
		j := i
		nf, ms := 0, 0
		for j < len(results) && results[j].test.group == results[i].test.group {
			if results[j].failure != nil {
				nf++
			}
			ms += results[j].ms
			j++
		}
		totalFiles++
		totalMs += ms
		failed += nf
		group := results[i:j]
		if nf > 0 {
			failedFiles++
			fmt.Fprintf(&b, " ❯ %s (%d tests | %d failed) %dms\n", results[i].test.file, len(group), nf, ms)
		} else {
			fmt.Fprintf(&b, " ✓ %s (%d tests) %dms\n", results[i].test.file, len(group), ms)
		}
		for _, r := range group {
			switch {
			case r.failure != nil:
				first, _, _ := strings.Cut(r.failure.message, "\n")
				fmt.Fprintf(&b, "   × %s %dms\n     → %s\n", r.test.name, r.ms, first)
			case verbose:
				fmt.Fprintf(&b, "   ✓ %s %dms\n", r.test.name, r.ms)
			}
		}
		i = j
	}
	if failed > 0 {
		bar := strings.Repeat("⎯", 24)
		fmt.Fprintf(&b, "\n%s Failed Tests %d %s\n\n", bar, failed, bar)
		k := 0
		for _, r := range results {
			if r.failure == nil {
				continue
			}
			k++
			f := r.failure
			fmt.Fprintf(&b, " FAIL  %s > %s\n%s: %s\n", r.test.file, r.test.name, f.errType, f.message)
			for idx := len(f.frames) - 1; idx >= 0; idx-- {
				fr := f.frames[idx]
				if m := lineContaining(files[fr.path], fr.marker, 0); m > 0 {
					col := strings.Index(lineAt(files[fr.path], m), fr.marker) + 1
					fmt.Fprintf(&b, " ❯ %s %s:%d:%d\n", funcEnclosing(files[fr.path], m), fr.path, m, col)
				}
			}
			n := failureLine(files, r.test, f)
			line := lineAt(files[r.test.file], n)
			col := 1
			if f.marker != "" {
				col = max(strings.Index(line, f.marker), 0) + 1
			}
			fmt.Fprintf(&b, " ❯ %s:%d:%d\n", r.test.file, n, col)
			lines := splitLines(files[r.test.file])
			for m := max(n-2, 1); m <= min(n+1, len(lines)); m++ {
				fmt.Fprintf(&b, "    %3d| %s\n", m, lines[m-1])
				if m == n {
					fmt.Fprintf(&b, "       | %s^\n", strings.Repeat(" ", col-1))
				}
			}
			fmt.Fprintf(&b, "\n%s[%d/%d]⎯\n\n", strings.Repeat("⎯", 48), k, failed)
		}
	}
	b.WriteString("\n")
	if failedFiles > 0 {
		fmt.Fprintf(&b, " Test Files  %d failed | %d passed (%d)\n", failedFiles, totalFiles-failedFiles, totalFiles)
		fmt.Fprintf(&b, "      Tests  %d failed | %d passed (%d)\n", failed, len(results)-failed, len(results))
	} else {
		fmt.Fprintf(&b, " Test Files  %d passed (%d)\n", totalFiles, totalFiles)
		fmt.Fprintf(&b, "      Tests  %d passed (%d)\n", len(results), len(results))
	}
	fmt.Fprintf(&b, "   Duration  %.2fs (transform %dms, setup 0ms, collect %dms, tests %dms)\n",
		float64(totalMs*2+stableMillis("vitest", 300)+600)/1000, 180+stableMillis("transform", 90), 240+stableMillis("collect", 120), totalMs)
	return b.String()
}
