package policy

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxHintText bounds how much of a question is searched for argument values
// (and quoted as a query): a pasted document should not cost more.
const maxHintText = 2000

// inputHints are the values a question offers for arguments.
type inputHints struct {
	text     string   // the question, whitespace collapsed
	keywords []string // its content words, longest first
	quoted   []string
	places   []string
	numbers  []float64
	paths    []string
	urls     []string
	emails   []string
	dates    []string
	names    []string
}

var (
	quotedRE = regexp.MustCompile("\"([^\"]+)\"|“([^”]+)”|`([^`]+)`|(?:^|\\s)'([^']+)'(?:$|[\\s.,;:!?])")
	urlRE    = regexp.MustCompile(`https?://[^\s"'<>]+`)
	emailRE  = regexp.MustCompile(`[\w.+-]+@[\w-]+(?:\.[\w-]+)+`)
	dateRE   = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)
	pathRE   = regexp.MustCompile(`(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:go|py|js|ts|tsx|md|txt|json|yaml|yml|toml|rs|java|c|h|cpp|html|css|sql|sh|csv)\b`)
	numberRE = regexp.MustCompile(`-?\b\d+(?:\.\d+)?\b`)
	// Capitalized runs: "Paris", "New York City".
	capitalRE     = regexp.MustCompile(`\p{Lu}[\p{L}'’-]*(?:\s+\p{Lu}[\p{L}'’-]*)*`)
	prepositionRE = regexp.MustCompile(`(?i)\b(?:in|at|to|for|from|near|around|of|visit|visiting)\s+$`)
	connectorRE   = regexp.MustCompile(`^(?:\s*,)?\s*(?:(?:and|or|&|vs\.?|versus)\s+)?$`)
)

// notPlaces are capitalized words that open questions rather than name things.
var notPlaces = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`what whats what's how when where why who which is are can could would will
		please tell show give get find check look search list read run send create write make hi hello hey
		i i'm i'd the a an and or but do does did should weather forecast today tomorrow yes no thanks ok
		compare book plan translate summarize convert calculate fetch open order buy schedule remind set add
		remove delete update call text message email news time`) {
		notPlaces[w] = true
	}
}

func hintsFrom(question string) inputHints {
	if len(question) > maxHintText {
		cut := maxHintText
		for cut > 0 && !utf8.RuneStart(question[cut]) {
			cut--
		}
		question = question[:cut]
	}
	h := inputHints{text: strings.Join(strings.Fields(question), " ")}
	text := h.text
	for _, m := range quotedRE.FindAllStringSubmatch(text, -1) {
		for _, g := range m[1:] {
			if g != "" {
				h.quoted = append(h.quoted, g)
			}
		}
	}
	for _, u := range urlRE.FindAllString(text, -1) {
		h.urls = append(h.urls, strings.TrimRight(u, ".,;:!?)"))
	}
	h.emails = emailRE.FindAllString(text, -1)
	h.dates = dateRE.FindAllString(text, -1)
	rest := urlRE.ReplaceAllString(text, " ")
	rest = emailRE.ReplaceAllString(rest, " ")
	h.paths = pathRE.FindAllString(rest, -1)
	rest = dateRE.ReplaceAllString(pathRE.ReplaceAllString(rest, " "), " ")
	for _, n := range numberRE.FindAllString(rest, -1) {
		if f, err := strconv.ParseFloat(n, 64); err == nil {
			h.numbers = append(h.numbers, f)
		}
	}
	// Places: capitalized runs after a preposition first, then runs inside a
	// sentence, then runs that open one (where capitals prove nothing). A run
	// joined by "and", "or" or a comma ranks with the run before it.
	type run struct {
		text string
		rank int
	}
	var runs []run
	prevEnd, prevRank := -1, 2
	for _, loc := range capitalRE.FindAllStringIndex(text, -1) {
		words := strings.Fields(text[loc[0]:loc[1]])
		dropped := false
		for len(words) > 0 && notPlaces[strings.ToLower(strings.Trim(words[0], "'’"))] {
			words, dropped = words[1:], true
		}
		if len(words) == 0 || utf8.RuneCountInString(words[0]) < 2 {
			continue
		}
		before := strings.TrimRight(text[:loc[0]], " ")
		rank := 1
		switch {
		case prepositionRE.MatchString(text[:loc[0]]):
			rank = 0
		case prevEnd >= 0 && connectorRE.MatchString(text[prevEnd:loc[0]]):
			rank = prevRank
		case dropped:
			rank = 1
		case before == "" || strings.HasSuffix(before, ".") || strings.HasSuffix(before, "?") || strings.HasSuffix(before, "!"):
			rank = 2
		}
		runs = append(runs, run{strings.TrimRight(strings.Join(words, " "), "'’-"), rank})
		prevEnd, prevRank = loc[1], rank
	}
	for rank := range 3 {
		for _, r := range runs {
			if r.rank == rank {
				h.places = append(h.places, r.text)
			}
		}
	}
	h.places = dedupe(h.places)
	for _, r := range runs {
		h.names = append(h.names, r.text)
	}
	h.names = dedupe(h.names)
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isWordRune(r) && r != '-' }) {
		first, _ := utf8.DecodeRuneInString(w)
		if utf8.RuneCountInString(w) > 2 && unicode.IsLetter(first) && !stopWords[strings.ToLower(w)] {
			h.keywords = append(h.keywords, strings.ToLower(w))
		}
	}
	h.keywords = dedupe(h.keywords)
	sort.SliceStable(h.keywords, func(i, j int) bool {
		return utf8.RuneCountInString(h.keywords[i]) > utf8.RuneCountInString(h.keywords[j])
	})
	return h
}

// candidates returns the question's values for a category of parameter.
func (h inputHints) candidates(category string) []string {
	switch category {
	case "place":
		return h.places
	case "query":
		return h.quoted
	case "path", "dir":
		return h.paths
	case "url":
		return h.urls
	case "email":
		return h.emails
	case "date":
		return h.dates
	case "name":
		if len(h.quoted) > 0 {
			return h.quoted
		}
		return h.names
	case "command":
		return h.quoted
	}
	return nil
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
