package scenario

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Workspace is an in-memory copy of a scenario's repository that the tools
// read and change. It is safe for concurrent use.
type Workspace struct {
	mu    sync.Mutex
	files map[string]string
	suite *testSuite
}

// Bounds that keep a workspace small whatever a caller patches into it.
const (
	maxWorkspaceFiles = 2000
	maxWorkspaceBytes = 16 << 20
	maxReadLines      = 2000
	maxSearchMatches  = 200
	maxSearchLineLen  = 300
)

// Call runs one tool. err is non-nil only for an unknown tool or arguments
// that do not fit the tool's schema; tool-level failures (missing file, a
// patch that does not apply, failing tests) come back as output text.
func (w *Workspace) Call(name, arguments string) (string, error) {
	args, err := ParseToolArguments(name, arguments)
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch a := args.(type) {
	case ListFilesArgs:
		return w.listFiles(a), nil
	case ReadFileArgs:
		return w.readFile(a), nil
	case SearchArgs:
		return w.search(a), nil
	case ApplyPatchArgs:
		return w.applyPatch(a.Input), nil
	case RunTestsArgs:
		return w.runTests(a), nil
	}
	return "", fmt.Errorf("%w %q", ErrUnknownTool, name)
}

// Files returns the repository's paths, sorted.
func (w *Workspace) Files() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sortedPaths()
}

// ReadFile returns a file's content.
func (w *Workspace) ReadFile(p string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.files[p]
	return s, ok
}

func (w *Workspace) sortedPaths() []string {
	paths := make([]string, 0, len(w.files))
	for p := range w.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

func (w *Workspace) snapshot() map[string]string {
	m := make(map[string]string, len(w.files))
	for k, v := range w.files {
		m[k] = v
	}
	return m
}

// cleanPath turns a user-given path into a repository path, or reports why it
// cannot be one. "" and "." mean the root.
func cleanPath(p string) (string, error) {
	p = strings.TrimSpace(p)
	p = strings.TrimPrefix(p, "./")
	if p == "" || p == "." || p == "/" {
		return "", nil
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q must be relative to the repository root", truncateForError(p))
	}
	if strings.ContainsAny(p, "\\\x00") {
		return "", fmt.Errorf("path %q contains an invalid character", truncateForError(p))
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q is outside the repository", truncateForError(p))
	}
	if c == "." {
		return "", nil
	}
	return c, nil
}

// underPrefix reports whether file p lies at or under dir (a file or directory).
func underPrefix(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

func (w *Workspace) listFiles(a ListFilesArgs) string {
	dir, err := cleanPath(strings.TrimSuffix(a.Path, "/..."))
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	n := 0
	for _, p := range w.sortedPaths() {
		if underPrefix(p, dir) {
			b.WriteString(p)
			b.WriteByte('\n')
			n++
		}
	}
	if n == 0 {
		return fmt.Sprintf("error: no files under %q", dir)
	}
	return b.String()
}

// splitLines splits text into lines without the trailing empty line a final
// newline would give.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// readFileHeader starts every read_file output; the agent parses it back.
const readFileHeader = "%s (lines %d-%d of %d)\n"

func (w *Workspace) readFile(a ReadFileArgs) string {
	p, err := cleanPath(a.Path)
	if err != nil {
		return "error: " + err.Error()
	}
	content, ok := w.files[p]
	if !ok {
		if w.isDir(p) {
			return fmt.Sprintf("error: %s is a directory; use list_files", p)
		}
		return fmt.Sprintf("error: %s: no such file", p)
	}
	lines := splitLines(content)
	total := len(lines)
	start, end := 1, total
	if a.StartLine > 0 {
		start = a.StartLine
	}
	if a.EndLine > 0 {
		end = min(a.EndLine, total)
	}
	if total == 0 {
		return fmt.Sprintf("%s (empty file)\n", p)
	}
	if start > total {
		return fmt.Sprintf("error: start_line %d is past the end of %s (%d lines)", start, p, total)
	}
	if end < start {
		return fmt.Sprintf("error: end_line %d is before start_line %d", a.EndLine, start)
	}
	truncated := false
	if end-start+1 > maxReadLines {
		end = start + maxReadLines - 1
		truncated = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, readFileHeader, p, start, end, total)
	for i := start; i <= end; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
	}
	if truncated {
		fmt.Fprintf(&b, "[output stopped after %d lines; read from line %d to see more]\n", maxReadLines, end+1)
	}
	return b.String()
}

func (w *Workspace) isDir(p string) bool {
	for f := range w.files {
		if strings.HasPrefix(f, p+"/") {
			return true
		}
	}
	return false
}

func (w *Workspace) search(a SearchArgs) string {
	dir, err := cleanPath(a.Path)
	if err != nil {
		return "error: " + err.Error()
	}
	if a.Pattern == "" {
		return "error: empty pattern"
	}
	var match func(string) bool
	switch {
	case a.Regex:
		expr := a.Pattern
		if a.IgnoreCase {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return "error: invalid regular expression: " + err.Error()
		}
		match = re.MatchString
	case a.IgnoreCase:
		needle := strings.ToLower(a.Pattern)
		match = func(s string) bool { return strings.Contains(strings.ToLower(s), needle) }
	default:
		match = func(s string) bool { return strings.Contains(s, a.Pattern) }
	}
	var b strings.Builder
	n, files := 0, 0
	for _, p := range w.sortedPaths() {
		if !underPrefix(p, dir) {
			continue
		}
		hit := false
		for i, line := range splitLines(w.files[p]) {
			if !match(line) {
				continue
			}
			n++
			if !hit {
				hit = true
				files++
			}
			if n > maxSearchMatches {
				continue
			}
			if len(line) > maxSearchLineLen {
				line = strings.ToValidUTF8(line[:maxSearchLineLen], "") + " [...]"
			}
			fmt.Fprintf(&b, "%s:%d:%s\n", p, i+1, line)
		}
	}
	if n == 0 {
		if dir != "" && !w.isDir(dir) {
			if _, ok := w.files[dir]; !ok {
				return fmt.Sprintf("error: %s: no such file or directory", dir)
			}
		}
		return fmt.Sprintf("No matches for %q.\n", truncateForError(a.Pattern))
	}
	if n > maxSearchMatches {
		fmt.Fprintf(&b, "[%d more matches not shown; narrow the pattern or the path]\n", n-maxSearchMatches)
	}
	return b.String()
}
