package scenario

import (
	"fmt"
	"path"
	"strings"
)

// syntaxError is the first structural problem found in a source file.
type syntaxError struct {
	line, col int
	msg       string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.line, e.col, e.msg) }

// checkSyntax is the cheap stand-in for a compiler's parser that run_tests
// uses: brackets must balance outside strings and comments. It catches the
// damage a bad patch usually does (a lost closing brace, a cut-off string).
func checkSyntax(p, src string) *syntaxError {
	var lang string
	switch path.Ext(p) {
	case ".go":
		lang = "go"
	case ".py":
		lang = "py"
	case ".ts", ".tsx", ".js", ".mjs":
		lang = "ts"
	default:
		return nil
	}
	type open struct {
		ch        byte
		line, col int
		template  bool // a ${ inside a template literal
	}
	var stack []open
	line, col := 1, 0
	i := 0
	next := func() byte {
		c := src[i]
		i++
		if c == '\n' {
			line++
			col = 0
		} else {
			col++
		}
		return c
	}
	startsWith := func(s string) bool { return strings.HasPrefix(src[i:], s) }
	// scanString consumes a quoted string whose opening quote was consumed.
	scanString := func(q byte, multiline, escapes bool) *syntaxError {
		sl, sc := line, col
		for i < len(src) {
			c := next()
			switch {
			case c == '\\' && escapes && i < len(src):
				next()
			case c == q:
				return nil
			case c == '\n' && !multiline:
				return &syntaxError{sl, sc, "string literal not terminated"}
			}
		}
		return &syntaxError{sl, sc, "string literal not terminated"}
	}
	// scanTemplate consumes a template literal's text, from its opening
	// backquote or the } closing a ${, to its end or the next ${ (which
	// resumes as code; the matching } calls it again). (sl, sc) is where
	// the text started, for the error.
	scanTemplate := func(sl, sc int) *syntaxError {
		for i < len(src) {
			if src[i] == '\\' && i+1 < len(src) {
				next()
				next()
				continue
			}
			if startsWith("${") {
				next()
				next()
				stack = append(stack, open{'{', line, col, true})
				return nil
			}
			if next() == '`' {
				return nil
			}
		}
		return &syntaxError{sl, sc, "unterminated template literal"}
	}
	closer := map[byte]byte{')': '(', ']': '[', '}': '{'}
	// lastSig is the last significant character outside strings and
	// comments; after one of these a / starts a regular expression literal.
	var lastSig byte = '('
	regexMayStart := func() bool { return strings.IndexByte("(,=:[!&|?{};+-*%<>~^", lastSig) >= 0 }
	for i < len(src) {
		c := src[i]
		switch {
		case lang == "ts" && c == '/' && !startsWith("//") && !startsWith("/*") && regexMayStart():
			sl, sc := line, col+1
			next()
			inClass := false
			closed := false
			for i < len(src) && src[i] != '\n' {
				ch := next()
				if ch == '\\' && i < len(src) {
					next()
					continue
				}
				if ch == '[' {
					inClass = true
				} else if ch == ']' {
					inClass = false
				} else if ch == '/' && !inClass {
					closed = true
					break
				}
			}
			if !closed {
				return &syntaxError{sl, sc, "unterminated regular expression literal"}
			}
			lastSig = '/'
			continue
		case (lang == "go" || lang == "ts") && startsWith("//"):
			for i < len(src) && src[i] != '\n' {
				next()
			}
			continue
		case (lang == "go" || lang == "ts") && startsWith("/*"):
			sl, sc := line, col+1
			next()
			next()
			for i < len(src) && !startsWith("*/") {
				next()
			}
			if i >= len(src) {
				return &syntaxError{sl, sc, "comment not terminated"}
			}
			next()
			next()
			continue
		case lang == "py" && c == '#':
			for i < len(src) && src[i] != '\n' {
				next()
			}
			continue
		case lang == "py" && (startsWith(`"""`) || startsWith(`'''`)):
			q := src[i : i+3]
			sl, sc := line, col+1
			next()
			next()
			next()
			for i < len(src) && !startsWith(q) {
				if src[i] == '\\' && i+1 < len(src) {
					next()
				}
				next()
			}
			if i >= len(src) {
				return &syntaxError{sl, sc, "unterminated triple-quoted string literal"}
			}
			next()
			next()
			next()
			continue
		case c == '"' || c == '\'':
			next()
			if err := scanString(c, false, true); err != nil {
				return err
			}
			lastSig = '"'
			continue
		case c == '`' && lang == "go":
			next()
			if err := scanString('`', true, false); err != nil {
				return err
			}
			continue
		case c == '`' && lang == "ts":
			sl, sc := line, col+1
			next()
			if err := scanTemplate(sl, sc); err != nil {
				return err
			}
			lastSig = '"'
			continue
		}
		next()
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			lastSig = c
		}
		switch c {
		case '(', '[', '{':
			stack = append(stack, open{c, line, col, false})
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1].ch != closer[c] {
				return &syntaxError{line, col, fmt.Sprintf("unexpected %c", c)}
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top.template {
				// Back inside the template literal.
				if err := scanTemplate(line, col); err != nil {
					return err
				}
			}
		}
	}
	if len(stack) > 0 {
		want := map[byte]byte{'(': ')', '[': ']', '{': '}'}[stack[len(stack)-1].ch]
		return &syntaxError{line, col + 1, fmt.Sprintf("unexpected EOF, expected %c", want)}
	}
	return nil
}
