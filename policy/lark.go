package policy

import (
	"strconv"
	"strings"
	"unicode"
)

// larkInput returns a short input that a Lark grammar accepts, chosen by
// h: it expands the start rule (or the first rule), picking alternatives
// and repetition counts by h and, past a depth, the shortest alternative.
//
// Supported: rules and terminals (name: …, continued with |), string
// literals ("…", "…"i), regex terminals (/…/, through matchingString),
// groups ( ), optional [ ] and ?, repetition * + ~n ~n..m, aliases (->,
// ignored), priorities (name.2), the %import common.NAME terminals of
// larkCommon, and %ignore WS (items are then joined by a space). Anything
// else (templates, %declare, lookaround in regexes) may give an input the
// grammar refuses, and an unknown name gives "": the policy writes what it
// can, and the docs say so (docs/protocol.md, "Custom tools").
func larkInput(grammar string, h uint64) string {
	g := parseLark(grammar)
	start := "start"
	if _, ok := g.defs[start]; !ok {
		if len(g.order) == 0 {
			return ""
		}
		start = g.order[0]
	}
	e := &larkGen{g: g, regex: regexGen{h: h}}
	e.expand(&larkNode{kind: larkRef, text: start}, 0)
	return strings.TrimSpace(e.b.String())
}

// larkCommon are example texts of the terminals of Lark's common.lark.
var larkCommon = map[string]string{
	"WS": " ", "WS_INLINE": " ", "NEWLINE": "\n", "CR": "\r", "LF": "\n",
	"NUMBER": "42", "SIGNED_NUMBER": "-3", "INT": "7", "SIGNED_INT": "-7", "DECIMAL": "1.5", "FLOAT": "2.5",
	"SIGNED_FLOAT": "-2.5", "DIGIT": "4", "HEXDIGIT": "a",
	"LETTER": "x", "UCASE_LETTER": "X", "LCASE_LETTER": "x", "WORD": "hello", "CNAME": "name_1",
	"ESCAPED_STRING": `"text"`, "_STRING_INNER": "text", "_STRING_ESC_INNER": "text",
	"SH_COMMENT": "# note", "CPP_COMMENT": "// note", "C_COMMENT": "/* note */",
}

type larkKind int

const (
	larkSeq    larkKind = iota // children in order
	larkAlt                    // one child
	larkLit                    // text
	larkRegex                  // text is a pattern
	larkRef                    // text names a rule or terminal
	larkRepeat                 // child min..max times
)

type larkNode struct {
	kind     larkKind
	text     string
	kids     []*larkNode
	min, max int
}

type larkGrammar struct {
	defs    map[string]*larkNode
	order   []string
	spaced  bool // %ignore WS: items are separated by a space
	imports map[string]string
}

func parseLark(src string) *larkGrammar {
	g := &larkGrammar{defs: map[string]*larkNode{}, imports: map[string]string{}}
	// Join continuation lines (starting with |) to their definition.
	var defs []string
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "//"); i >= 0 && !strings.Contains(line[:i], `"`) {
			line = line[:i]
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "":
		case strings.HasPrefix(t, "|") && len(defs) > 0:
			defs[len(defs)-1] += " " + t
		default:
			defs = append(defs, t)
		}
	}
	for _, d := range defs {
		if rest, ok := strings.CutPrefix(d, "%import"); ok {
			for _, name := range larkImportNames(rest) {
				if ex, ok := larkCommon[name]; ok {
					g.imports[name] = ex
				}
			}
			continue
		}
		if rest, ok := strings.CutPrefix(d, "%ignore"); ok {
			g.spaced = g.spaced || strings.Contains(rest, "WS")
			continue
		}
		name, body, ok := strings.Cut(d, ":")
		if !ok || strings.HasPrefix(d, "%") {
			continue
		}
		name = strings.TrimLeft(strings.TrimSpace(name), "?!")
		name, _, _ = strings.Cut(name, ".") // a priority
		p := &larkParser{toks: larkTokens(body)}
		g.defs[name] = p.alternatives()
		g.order = append(g.order, name)
	}
	return g
}

// larkImportNames reads "common.NUMBER", "common (NUMBER, WS)" and
// "common.WS -> SPACE" forms.
func larkImportNames(rest string) []string {
	rest = strings.TrimSpace(rest)
	rest, _, _ = strings.Cut(rest, "->")
	if i := strings.Index(rest, "("); i >= 0 {
		return strings.FieldsFunc(rest[i+1:], func(r rune) bool { return r == ',' || r == ')' || unicode.IsSpace(r) })
	}
	if i := strings.LastIndex(rest, "."); i >= 0 {
		return []string{strings.TrimSpace(rest[i+1:])}
	}
	return nil
}

// larkTokens splits a definition's body into literals, regexes, names,
// numbers and punctuation.
func larkTokens(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '"' || c == '/':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(s))
			for j < len(s) && strings.IndexByte("imslux", s[j]) >= 0 { // flags
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		case c == '.' && i+1 < len(s) && s[i+1] == '.':
			toks = append(toks, "..")
			i += 2
		case c == '-' && i+1 < len(s) && s[i+1] == '>':
			toks = append(toks, "->")
			i += 2
		case unicode.IsLetter(rune(c)) || c == '_' || unicode.IsDigit(rune(c)):
			j := i
			for j < len(s) && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])) || s[j] == '_' || s[j] == '.') {
				if s[j] == '.' && j+1 < len(s) && s[j+1] == '.' {
					break
				}
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			toks = append(toks, string(c))
			i++
		}
	}
	return toks
}

type larkParser struct {
	toks []string
	i    int
}

func (p *larkParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *larkParser) alternatives() *larkNode {
	alt := &larkNode{kind: larkAlt}
	for {
		alt.kids = append(alt.kids, p.sequence())
		if p.peek() != "|" {
			return alt
		}
		p.i++
	}
}

func (p *larkParser) sequence() *larkNode {
	seq := &larkNode{kind: larkSeq}
	for {
		switch t := p.peek(); t {
		case "", "|", ")", "]":
			return seq
		case "->": // an alias: the rest of the alternative names it
			for p.peek() != "" && p.peek() != "|" && p.peek() != ")" && p.peek() != "]" {
				p.i++
			}
			return seq
		}
		if item := p.item(); item != nil {
			seq.kids = append(seq.kids, item)
		}
	}
}

func (p *larkParser) item() *larkNode {
	t := p.peek()
	p.i++
	var n *larkNode
	switch {
	case t == "(":
		n = p.alternatives()
		if p.peek() == ")" {
			p.i++
		}
	case t == "[":
		n = &larkNode{kind: larkRepeat, kids: []*larkNode{p.alternatives()}, min: 0, max: 1}
		if p.peek() == "]" {
			p.i++
		}
	case strings.HasPrefix(t, `"`):
		lit := strings.TrimRight(t, "imslux")
		s, err := strconv.Unquote(lit)
		if err != nil {
			s = strings.Trim(lit, `"`)
		}
		n = &larkNode{kind: larkLit, text: s}
	case strings.HasPrefix(t, "/"):
		body := strings.TrimRight(t, "imslux")
		n = &larkNode{kind: larkRegex, text: strings.TrimSuffix(strings.TrimPrefix(body, "/"), "/")}
	case t != "" && (unicode.IsLetter(rune(t[0])) || t[0] == '_'):
		n = &larkNode{kind: larkRef, text: t}
	default:
		return nil // punctuation Lark has and this subset does not
	}
	for {
		switch p.peek() {
		case "?":
			n = &larkNode{kind: larkRepeat, kids: []*larkNode{n}, min: 0, max: 1}
		case "*":
			n = &larkNode{kind: larkRepeat, kids: []*larkNode{n}, min: 0, max: 2}
		case "+":
			n = &larkNode{kind: larkRepeat, kids: []*larkNode{n}, min: 1, max: 3}
		case "~":
			p.i++
			lo, _ := strconv.Atoi(p.peek())
			hi := lo
			if p.i+2 < len(p.toks) && p.toks[p.i+1] == ".." {
				hi, _ = strconv.Atoi(p.toks[p.i+2])
				p.i += 2
			}
			n = &larkNode{kind: larkRepeat, kids: []*larkNode{n}, min: lo, max: max(lo, min(hi, lo+2))}
		default:
			return n
		}
		p.i++
	}
}

type larkGen struct {
	g     *larkGrammar
	regex regexGen
	b     strings.Builder
}

// larkMaxDepth is where expansion takes the shortest alternative and the
// fewest repetitions, so recursive grammars end.
const larkMaxDepth = 12

func (e *larkGen) emit(s string) {
	if e.g.spaced && e.b.Len() > 0 && s != "" {
		e.b.WriteByte(' ')
	}
	e.b.WriteString(s)
}

func (e *larkGen) expand(n *larkNode, depth int) {
	if depth > 4*larkMaxDepth || e.b.Len() > maxRegexOutput {
		return
	}
	switch n.kind {
	case larkLit:
		e.emit(n.text)
	case larkRegex:
		s, _ := matchingString(n.text, e.regex.h^uint64(e.b.Len()))
		e.emit(s)
	case larkRef:
		if def, ok := e.g.defs[n.text]; ok {
			e.expand(def, depth+1)
		} else if ex, ok := e.g.imports[n.text]; ok && strings.TrimSpace(ex) != "" {
			e.emit(ex)
		}
	case larkSeq:
		for _, k := range n.kids {
			e.expand(k, depth+1)
		}
	case larkAlt:
		i := e.regex.choose(len(n.kids))
		if depth > larkMaxDepth {
			i = shortestAlternative(n.kids)
		}
		e.expand(n.kids[i], depth+1)
	case larkRepeat:
		count := n.min + e.regex.choose(n.max-n.min+1)
		if depth > larkMaxDepth {
			count = n.min
		}
		for range count {
			e.expand(n.kids[0], depth+1)
		}
	}
}

// shortestAlternative is the index of the alternative with the fewest
// references to other rules, then the fewest items.
func shortestAlternative(alts []*larkNode) int {
	best, bestScore := 0, 1<<30
	for i, a := range alts {
		score := len(a.kids)
		for _, k := range a.kids {
			if k.kind == larkRef || k.kind == larkAlt {
				score += 100
			}
		}
		if score < bestScore {
			best, bestScore = i, score
		}
	}
	return best
}
