package scenario

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// The apply_patch format is Codex's: a Begin/End envelope around Add, Delete
// and Update sections; Update sections hold @@ hunks of context (' '),
// removed ('-') and added ('+') lines.
const (
	patchBegin     = "*** Begin Patch"
	patchEnd       = "*** End Patch"
	patchAdd       = "*** Add File: "
	patchDelete    = "*** Delete File: "
	patchUpdate    = "*** Update File: "
	patchMove      = "*** Move to: "
	patchEndOfFile = "*** End of File"
)

type patchOpKind int

const (
	opAdd patchOpKind = iota
	opDelete
	opUpdate
)

type patchOp struct {
	kind    patchOpKind
	path    string
	moveTo  string
	content string // opAdd
	chunks  []patchChunk
}

type patchChunk struct {
	context  string // the text after "@@ ", searched before the lines
	old, new []string
	eof      bool // anchored at the end of the file
}

// patchError is a failure the agent should see and can act on.
type patchError struct{ msg string }

func (e *patchError) Error() string { return e.msg }

func patchErrorf(format string, args ...any) error {
	return &patchError{msg: fmt.Sprintf(format, args...)}
}

// parsePatch parses the patch text into operations. Paths are cleaned and
// must stay inside the repository.
func parsePatch(text string) ([]patchOp, error) {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n")), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != patchBegin {
		return nil, patchErrorf("invalid patch: the first line must be '%s'", patchBegin)
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-1]) != patchEnd {
		return nil, patchErrorf("invalid patch: the last line must be '%s'", patchEnd)
	}
	body := lines[1 : len(lines)-1]
	var ops []patchOp
	for i := 0; i < len(body); {
		line := strings.TrimRight(body[i], " \t")
		lineNo := i + 2
		switch {
		case strings.HasPrefix(line, patchAdd):
			p, err := patchPath(line[len(patchAdd):], lineNo)
			if err != nil {
				return nil, err
			}
			i++
			var b strings.Builder
			for i < len(body) && strings.HasPrefix(body[i], "+") {
				b.WriteString(body[i][1:])
				b.WriteByte('\n')
				i++
			}
			ops = append(ops, patchOp{kind: opAdd, path: p, content: b.String()})
		case strings.HasPrefix(line, patchDelete):
			p, err := patchPath(line[len(patchDelete):], lineNo)
			if err != nil {
				return nil, err
			}
			ops = append(ops, patchOp{kind: opDelete, path: p})
			i++
		case strings.HasPrefix(line, patchUpdate):
			p, err := patchPath(line[len(patchUpdate):], lineNo)
			if err != nil {
				return nil, err
			}
			op := patchOp{kind: opUpdate, path: p}
			i++
			if i < len(body) && strings.HasPrefix(body[i], patchMove) {
				to, err := patchPath(body[i][len(patchMove):], i+2)
				if err != nil {
					return nil, err
				}
				op.moveTo = to
				i++
			}
			n, chunks, err := parseChunks(body[i:], i+2, p)
			if err != nil {
				return nil, err
			}
			if len(chunks) == 0 && op.moveTo == "" {
				return nil, patchErrorf("invalid patch: update of %s has no hunks (line %d)", p, lineNo)
			}
			op.chunks = chunks
			ops = append(ops, op)
			i += n
		case strings.TrimSpace(line) == "":
			i++
		default:
			return nil, patchErrorf("invalid patch: line %d: '%s' is not a valid section header; expected '%s{path}', '%s{path}' or '%s{path}'",
				lineNo, truncateForError(line), patchAdd, patchDelete, patchUpdate)
		}
	}
	if len(ops) == 0 {
		return nil, patchErrorf("invalid patch: no files to change")
	}
	return ops, nil
}

func patchPath(raw string, lineNo int) (string, error) {
	p, err := cleanPath(raw)
	if err != nil {
		return "", patchErrorf("invalid patch: line %d: %v", lineNo, err)
	}
	if p == "" {
		return "", patchErrorf("invalid patch: line %d: empty path", lineNo)
	}
	if len(p) > maxPathBytes {
		return "", patchErrorf("invalid patch: line %d: path is too long", lineNo)
	}
	return p, nil
}

// parseChunks reads the hunks of one Update section and returns how many
// lines it consumed. The first hunk may leave out its @@ line.
func parseChunks(lines []string, firstLineNo int, path string) (int, []patchChunk, error) {
	var chunks []patchChunk
	var cur *patchChunk
	i := 0
	for ; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "*** ") && line != patchEndOfFile {
			break
		}
		switch {
		case line == "@@" || strings.HasPrefix(line, "@@ "):
			chunks = append(chunks, patchChunk{context: strings.TrimSpace(strings.TrimPrefix(line, "@@"))})
			cur = &chunks[len(chunks)-1]
			continue
		case line == patchEndOfFile:
			if cur == nil {
				return 0, nil, patchErrorf("invalid patch: line %d: '%s' outside a hunk", firstLineNo+i, patchEndOfFile)
			}
			cur.eof = true
			cur = nil
			continue
		}
		if cur == nil {
			if len(chunks) > 0 {
				return 0, nil, patchErrorf("invalid patch: line %d: hunk for %s must start with '@@'", firstLineNo+i, path)
			}
			chunks = append(chunks, patchChunk{})
			cur = &chunks[0]
		}
		switch {
		case line == "":
			// Editors strip the lone space of an empty context line.
			cur.old = append(cur.old, "")
			cur.new = append(cur.new, "")
		case line[0] == ' ':
			cur.old = append(cur.old, line[1:])
			cur.new = append(cur.new, line[1:])
		case line[0] == '-':
			cur.old = append(cur.old, line[1:])
		case line[0] == '+':
			cur.new = append(cur.new, line[1:])
		default:
			return 0, nil, patchErrorf("invalid patch: line %d: unexpected line in hunk for %s: '%s' (lines must start with ' ', '-' or '+')",
				firstLineNo+i, path, truncateForError(line))
		}
	}
	for _, c := range chunks {
		if len(c.old) == 0 && len(c.new) == 0 {
			return 0, nil, patchErrorf("invalid patch: empty hunk in %s", path)
		}
	}
	return i, chunks, nil
}

// seekBudget bounds the line comparisons one patch may cost.
const seekBudget = 20_000_000

type seeker struct{ budget int }

var errPatchTooCostly = errors.New("patch is too large to match against the file")

// seek finds pattern in lines at or after start: exactly first, then ignoring
// trailing whitespace, then ignoring surrounding whitespace, as Codex does.
// With eof it tries the end of the file first.
func (s *seeker) seek(lines, pattern []string, start int, eof bool) (int, error) {
	if len(pattern) == 0 {
		return start, nil
	}
	if len(pattern) > len(lines) {
		return -1, nil
	}
	norms := []func(string) string{
		func(x string) string { return x },
		func(x string) string { return strings.TrimRight(x, " \t") },
		strings.TrimSpace,
	}
	for _, norm := range norms {
		if eof {
			at := len(lines) - len(pattern)
			if at >= start && s.matchAt(lines, pattern, at, norm) {
				return at, nil
			}
		}
		for at := start; at+len(pattern) <= len(lines); at++ {
			if s.budget <= 0 {
				return -1, errPatchTooCostly
			}
			if s.matchAt(lines, pattern, at, norm) {
				return at, nil
			}
		}
	}
	return -1, nil
}

func (s *seeker) matchAt(lines, pattern []string, at int, norm func(string) string) bool {
	for j, want := range pattern {
		s.budget--
		if norm(lines[at+j]) != norm(want) {
			return false
		}
	}
	return true
}

type replacement struct {
	at, n int
	lines []string
}

// applyChunks returns the file's new content.
func applyChunks(path, content string, chunks []patchChunk, s *seeker) (string, error) {
	lines := splitLines(content)
	var reps []replacement
	idx := 0
	for _, c := range chunks {
		if c.context != "" {
			at, err := s.seek(lines, []string{c.context}, idx, false)
			if err != nil {
				return "", err
			}
			if at < 0 {
				return "", patchErrorf("Failed to find context '%s' in %s", truncateLong(c.context), path)
			}
			idx = at + 1
		}
		if len(c.old) == 0 {
			// Pure addition: append at the end of the file.
			reps = append(reps, replacement{at: len(lines), lines: c.new})
			continue
		}
		old, repl := c.old, c.new
		at, err := s.seek(lines, old, idx, c.eof)
		if err != nil {
			return "", err
		}
		if at < 0 && old[len(old)-1] == "" {
			// A trailing blank context line often stands for the end of the file.
			old = old[:len(old)-1]
			if len(repl) > 0 && repl[len(repl)-1] == "" {
				repl = repl[:len(repl)-1]
			}
			if at, err = s.seek(lines, old, idx, c.eof); err != nil {
				return "", err
			}
		}
		if at < 0 {
			return "", patchErrorf("Failed to find expected lines in %s:\n%s", path, truncateLong(strings.Join(c.old, "\n")))
		}
		reps = append(reps, replacement{at: at, n: len(old), lines: repl})
		idx = at + len(old)
	}
	sort.SliceStable(reps, func(i, j int) bool { return reps[i].at < reps[j].at })
	out := make([]string, 0, len(lines)+8)
	pos := 0
	for _, r := range reps {
		if r.at < pos {
			return "", patchErrorf("hunks overlap in %s", path)
		}
		out = append(out, lines[pos:r.at]...)
		out = append(out, r.lines...)
		pos = r.at + r.n
	}
	out = append(out, lines[pos:]...)
	if len(out) == 0 {
		return "", nil
	}
	return strings.Join(out, "\n") + "\n", nil
}

func truncateLong(s string) string {
	const max = 2000
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "\n[...]"
}

// applyPatchTo applies the patch to files atomically and returns the changed
// paths with their kind letter (A, M, D), in patch order.
func applyPatchTo(files map[string]string, text string) ([]string, error) {
	ops, err := parsePatch(text)
	if err != nil {
		return nil, err
	}
	next := make(map[string]string, len(files)+len(ops))
	for k, v := range files {
		next[k] = v
	}
	s := &seeker{budget: seekBudget}
	var changed []string
	for _, op := range ops {
		switch op.kind {
		case opAdd:
			if _, ok := next[op.path]; ok {
				return nil, patchErrorf("cannot add %s: the file already exists (use *** Update File)", op.path)
			}
			if err := checkNoDirClash(next, op.path); err != nil {
				return nil, err
			}
			next[op.path] = op.content
			changed = append(changed, "A "+op.path)
		case opDelete:
			if _, ok := next[op.path]; !ok {
				return nil, patchErrorf("cannot delete %s: no such file", op.path)
			}
			delete(next, op.path)
			changed = append(changed, "D "+op.path)
		case opUpdate:
			content, ok := next[op.path]
			if !ok {
				return nil, patchErrorf("cannot update %s: no such file", op.path)
			}
			updated, err := applyChunks(op.path, content, op.chunks, s)
			if err != nil {
				if errors.Is(err, errPatchTooCostly) {
					return nil, patchErrorf("%s: %v", op.path, err)
				}
				return nil, err
			}
			if op.moveTo != "" && op.moveTo != op.path {
				if _, exists := next[op.moveTo]; exists {
					return nil, patchErrorf("cannot move %s to %s: the destination exists", op.path, op.moveTo)
				}
				delete(next, op.path)
				if err := checkNoDirClash(next, op.moveTo); err != nil {
					return nil, err
				}
				next[op.moveTo] = updated
				changed = append(changed, "M "+op.moveTo)
				continue
			}
			next[op.path] = updated
			changed = append(changed, "M "+op.path)
		}
	}
	total := 0
	for _, v := range next {
		total += len(v)
	}
	if len(next) > maxWorkspaceFiles || total > maxWorkspaceBytes {
		return nil, patchErrorf("the repository would exceed its size limit (%d files, %d bytes)", maxWorkspaceFiles, maxWorkspaceBytes)
	}
	for k := range files {
		delete(files, k)
	}
	for k, v := range next {
		files[k] = v
	}
	return changed, nil
}

// checkNoDirClash keeps a path from being both a file and a directory.
func checkNoDirClash(files map[string]string, p string) error {
	for dir := p; ; {
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			break
		}
		dir = dir[:i]
		if _, ok := files[dir]; ok {
			return patchErrorf("cannot create %s: %s is a file", p, dir)
		}
	}
	prefix := p + "/"
	for f := range files {
		if strings.HasPrefix(f, prefix) {
			return patchErrorf("cannot create %s: it is a directory", p)
		}
	}
	return nil
}

// patchSuccessPrefix starts the output of an applied patch.
const patchSuccessPrefix = "Success. Updated the following files:"

func (w *Workspace) applyPatch(text string) string {
	changed, err := applyPatchTo(w.files, text)
	if err != nil {
		return "error: apply_patch failed: " + err.Error() + "\nNo files were changed."
	}
	return patchSuccessPrefix + "\n" + strings.Join(changed, "\n") + "\n"
}
