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

// fileRef is a path-like reference: directories, then a name whose
// extension is one of the repository's file kinds. The character before it
// must not continue a path, so that a match is the whole path; a leading
// "../" stays part of it (and is checked: it may lead out of the repo).
var fileRef = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./\-*<>{}$~%@:])((?:\.{1,2}/)*(?:[A-Za-z0-9_\-]+/)*[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*\.(?:go|md|js|mjs|ts|templ|css|sh|json|toml|py|sql|txtar|yaml|yml|html|mod|sum))\b`)

// product is a capitalized name with a .js extension: a JavaScript
// runtime or framework (Node.js), never a file of this repository, whose
// JavaScript files are named in lower case.
var product = regexp.MustCompile(`^[A-Z][A-Za-z]*\.js$`)

// url drops web addresses (their paths name files on other hosts) and
// absolute paths on a URL's host, before references are looked for.
var url = regexp.MustCompile(`[a-z][a-z0-9+.\-]*://[^\s)"'\x60>]*`)

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
			for _, m := range txtarFile.FindAllSubmatch(b, -1) {
				addPath(archived[top], string(m[1]))
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
		written := map[string]bool{}
		for _, m := range writtenFile.FindAllSubmatch(b, -1) {
			written[string(m[1])] = true
		}
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

// txtarFile is a file header of a txtar archive.
var txtarFile = regexp.MustCompile(`(?m)^-- (\S+) --$`)

// writtenFile is a file a documented command writes (-o NAME, > NAME): the
// reader's own, which a later command of the same text reads.
var writtenFile = regexp.MustCompile(`(?:\s-o|>)\s+([A-Za-z0-9_.\-/]+)`)

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
	text = url.ReplaceAllFunc(text, func(m []byte) []byte { return bytes.Repeat([]byte(" "), len(m)) })
	var out []reference
	for _, m := range fileRef.FindAllSubmatchIndex(text, -1) {
		ref := text[m[2]:m[3]]
		if m[3] < len(text) && text[m[3]] == '(' || product.Match(ref) {
			continue // res.json(), Node.js: a method, a product, not a file
		}
		out = append(out, reference{path: string(text[m[2]:m[3]]), line: line + bytes.Count(text[:m[2]], []byte("\n"))})
	}
	return out
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
		"(PROTOCOL.md §7.6)":                            "PROTOCOL.md",
		"../shared/docs/DECISIONS.md":                   "../shared/docs/DECISIONS.md",
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
