package docs

import (
	"bytes"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The project's files cite only files inside the repository, so that a
// maintainer who clones it can follow every reference. TestReferencesExist
// reads every comment of the Go code and every doc, script, stylesheet,
// template and JavaScript file, finds what looks like a file's path (a
// name with a known extension, optionally with directories), and checks
// that the repository holds it.

// A reference is a run of path characters (letters, digits, "_", "-",
// ".", "/") whose longest prefix ending in a known extension, at a word's
// end, has refShape: directories (a leading "../" included, which is
// checked: it may lead out of the repo), then a name. A run right after
// one of notBefore is a glob, a placeholder or a URL's tail, not a file.
// The text is scanned by hand rather than by one regexp: under the race
// detector, which make test uses, a regexp over every file took seconds.
var refShape = regexp.MustCompile(`^(?:\.{1,2}/)*(?:[A-Za-z0-9_\-]+/)*[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*$`)

// extensions are the file kinds a reference may name.
var extensions = map[string]bool{"go": true, "md": true, "js": true, "mjs": true, "ts": true, "templ": true,
	"css": true, "sh": true, "json": true, "toml": true, "py": true, "sql": true, "txtar": true, "yaml": true,
	"yml": true, "html": true, "mod": true, "sum": true}

const notBefore = "*<>{}$~%@:"

func isPathByte(c byte) bool { return isWordByte(c) || c == '.' || c == '/' || c == '-' }

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// product is a capitalized name with a .js extension: a JavaScript
// runtime or framework (Node.js), never a file of this repository, whose
// JavaScript files are named in lower case.
var product = regexp.MustCompile(`^[A-Z][A-Za-z]*\.js$`)

// blankURLs blanks web addresses (their paths name files on other
// hosts) before references are looked for: from the scheme to the first
// space, quote, ")" or ">".
func blankURLs(text []byte) []byte {
	i := bytes.Index(text, []byte("://"))
	if i < 0 {
		return text
	}
	text = bytes.Clone(text)
	for ; i >= 0; i = bytes.Index(text, []byte("://")) {
		start := i
		for start > 0 && (isWordByte(text[start-1]) || text[start-1] == '+' || text[start-1] == '.' || text[start-1] == '-') {
			start--
		}
		end := i
		for end < len(text) && !bytes.ContainsRune([]byte(" \t\n)\"'`>"), rune(text[end])) {
			end++
		}
		for k := start; k < end; k++ {
			text[k] = ' '
		}
	}
	return text
}

// scanned says whether a tracked file is read, and how: Go files by their
// comments alone (their strings are data: a scenario's virtual files, a
// route), the rest whole.
func scanned(name string) bool {
	for _, dir := range strings.Split(path.Dir(name), "/") {
		switch dir {
		case ".pw", ".clients", "node_modules", "testdata":
			return false
		}
	}
	switch path.Ext(name) {
	case ".go", ".md", ".js", ".templ", ".css", ".sh":
		return true
	}
	return path.Base(name) == "Makefile"
}

func TestReferencesExist(t *testing.T) {
	root, files := repoFiles(t)
	have := map[string]bool{}
	for _, f := range files {
		addPath(have, f)
	}
	// A scenario's virtual repository is a txtar archive in this one: its
	// files are the repository's too, and the code beside the archive (the
	// same top directory) cites them.
	archived := map[string]map[string]bool{}
	for _, f := range files {
		if path.Ext(f) == ".txtar" {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
			if err != nil {
				t.Fatal(err)
			}
			top := topDir(f)
			if archived[top] == nil {
				archived[top] = map[string]bool{}
			}
			for _, line := range strings.Split(string(b), "\n") {
				if name, ok := strings.CutPrefix(line, "-- "); ok && strings.HasSuffix(name, " --") {
					addPath(archived[top], strings.TrimSuffix(name, " --"))
				}
			}
		}
	}
	var bad []string
	for _, f := range files {
		if !scanned(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		written := writtenFiles(b)
		for _, ref := range references(f, b) {
			if !written[ref.path] && !resolves(f, ref.path, have) && !archived[topDir(f)][path.Clean(ref.path)] {
				bad = append(bad, f+":"+strconv.Itoa(ref.line)+": "+ref.path)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d references name a file that is not in the repository (cite docs/protocol.md or docs/decisions.md instead of a file outside it):\n%s",
			len(bad), strings.Join(bad, "\n"))
	}
}

// writtenFiles are the files a documented command writes (-o NAME,
// > NAME): the reader's own, which a later command of the same text reads.
func writtenFiles(text []byte) map[string]bool {
	written := map[string]bool{}
	for _, op := range []string{" -o ", "> "} {
		for rest := text; ; {
			i := bytes.Index(rest, []byte(op))
			if i < 0 {
				break
			}
			rest = bytes.TrimLeft(rest[i+len(op):], " ")
			n := 0
			for n < len(rest) && isPathByte(rest[n]) {
				n++
			}
			if n > 0 {
				written[string(rest[:n])] = true
			}
		}
	}
	return written
}

// topDir is a repository path's first directory ("" at the root).
func topDir(p string) string {
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// addPath adds a repository path to have, with every tail of it that
// starts at a directory boundary, so that a reference may name a file by
// its name alone or by its last directories (css/app.css under static/,
// a package's doc.go).
func addPath(have map[string]bool, p string) {
	for {
		have[p] = true
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return
		}
		p = p[i+1:]
	}
}

type reference struct {
	path string
	line int
}

// references finds the path-like references of one file: in a Go file,
// in its comments only.
func references(name string, b []byte) []reference {
	if path.Ext(name) != ".go" {
		return find(b, 1)
	}
	var out []reference
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(name, -1, len(b)), b, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.COMMENT {
			out = append(out, find([]byte(lit), fset.Position(pos).Line)...)
		}
	}
}

// find returns the references in text whose first line is line.
func find(text []byte, line int) []reference {
	text = blankURLs(text)
	var out []reference
	counted := 0 // text[:counted] has been counted into line
	for i := 0; i < len(text); {
		if !isPathByte(text[i]) {
			i++
			continue
		}
		start, end := i, i
		for end < len(text) && isPathByte(text[end]) {
			end++
		}
		i = end
		if start > 0 && strings.IndexByte(notBefore, text[start-1]) >= 0 {
			continue
		}
		ref, at := longestRef(text[start:end]), start
		if ref == "" {
			continue
		}
		after := start + len(ref)
		if after < len(text) && text[after] == '(' || product.MatchString(ref) {
			continue // res.json(), Node.js: a method, a product, not a file
		}
		line += bytes.Count(text[counted:at], []byte("\n"))
		counted = at
		out = append(out, reference{path: ref, line: line})
	}
	return out
}

// longestRef is the longest prefix of run that names a file: it ends in a
// known extension at a word's end and has refShape; "" when none does.
func longestRef(run []byte) string {
	for dot := bytes.LastIndexByte(run, '.'); dot >= 0; dot = bytes.LastIndexByte(run[:dot], '.') {
		e := dot + 1
		for e < len(run) && isWordByte(run[e]) && run[e] != '_' {
			e++
		}
		if e < len(run) && isWordByte(run[e]) {
			continue // the extension runs on: "x.go_y" is no .go file
		}
		if extensions[string(run[dot+1:e])] && refShape.Match(run[:e]) {
			return string(run[:e])
		}
	}
	return ""
}

// resolves says whether ref, cited in file from, names a file of the
// repository: relative to from's directory, or as the tail of a repository
// path (which covers a path from the root and a bare name). A path that
// leads out of the repository never resolves.
func resolves(from, ref string, have map[string]bool) bool {
	if rel := path.Join(path.Dir(from), ref); !strings.HasPrefix(rel, "../") && have[rel] {
		return true
	}
	ref = path.Clean(ref)
	return !strings.HasPrefix(ref, "../") && have[ref]
}

// repoFiles lists the repository's files, slash-separated and relative to
// its root: the tracked files when git can say (and the new ones it would
// track, so that a doc may cite a file not yet added), else every file on disk
// outside the directories scanned skips.
func repoFiles(t *testing.T) (root string, files []string) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output(); err == nil && len(out) > 0 {
		for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			files = append(files, f)
		}
		return root, files
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".pw", ".clients", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

// TestFindReferences pins what counts as a reference to a file.
func TestFindReferences(t *testing.T) {
	for text, want := range map[string]string{
		"see docs/protocol.md, \"WebSocket mode\"":      "docs/protocol.md",
		"(SPEC.md §7.6)":                                "SPEC.md",
		"../shared/docs/RULINGS.md":                     "../shared/docs/RULINGS.md",
		"[stack](stack.md#ranges)":                      "stack.md",
		"the hub (hub.go) fans out":                     "hub.go",
		"https://example.com/docs/index.md":             "",
		"const r = await res.json();":                   "",
		"Node.js 20":                                    "",
		"*_templ.go and *.test are build output":        "",
		"api.Stack.String and e.g. fmt.Println":         "",
		"$CODEX_HOME/config.toml or ~/.codex/auth.json": "",
	} {
		var got []string
		for _, r := range find([]byte(text), 1) {
			got = append(got, r.path)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("find(%q) = %q, want %q", text, got, want)
		}
	}
}
