package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MiniSWEAgentMajor is the major version of mini-swe-agent whose
// interactive output ImportMiniSWEAgentCast reads (1.x; 1.7.0 recorded the
// Terminal-Bench sessions of the corpus).
const MiniSWEAgentMajor = "1"

// Bounds of an asciinema recording.
const (
	maxCastLine  = 4 << 20   // one event line
	maxCastBytes = 256 << 20 // the whole recording
)

// Markers of mini-swe-agent's interactive output, once the escape
// sequences are gone.
var (
	miniStart   = regexp.MustCompile(`This is mini-swe-agent version ([0-9][0-9A-Za-z.+-]*?)\.?\r?\n`)
	miniModel   = regexp.MustCompile(`(?:^|\s)mini(?:-swe-agent)?\s(?:[^\n]*?\s)?(?:-m|--model)[ =]'?([A-Za-z0-9._:/@-]+)`)
	miniMarker  = regexp.MustCompile(`(?:\r?\n|^)(System|User):\r?\n|mini-swe-agent \(step ([0-9]+), \$[0-9.]+\):\r?\n`)
	miniSpinner = regexp.MustCompile(`[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Waiting for the LM to respond\.\.\.`)
	miniAction  = regexp.MustCompile("(?s)```bash\\s*\\n(.*?)\\n```")
	// A log record printed among the agent's output (LiteLLM's, with its
	// traceback): "04:13:00 - LiteLLM:ERROR: ...".
	miniLog       = regexp.MustCompile(`^[0-9]{2}:[0-9]{2}:[0-9]{2} - [A-Za-z_.]+:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\b`)
	miniException = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Warning|Exit|Interrupt)(?::|$)`)
	miniSaved     = regexp.MustCompile(`\r?\nSaved trajectory to `)
	// The rule mini prints under a message, and the spinner it starts when
	// it calls the model: what follows either is not the message.
	miniMessageEnd = regexp.MustCompile(`─{20,}|[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Waiting for the LM`)
)

// ImportMiniSWEAgentCast reads an asciinema recording (format version 2:
// a header line, then one [time, code, data] event a line) of
// mini-swe-agent's interactive CLI (`mini`, MiniSWEAgentMajor.x) and
// returns its workload. mini-swe-agent prints its whole conversation, so
// the recording holds what the model read and wrote:
//
//   - "System:" is the instructions, the first "User:" the task;
//   - each "mini-swe-agent (step N, $C):" is a response, printed whole
//     once the model answered; its one ```bash block, if any, is the
//     command it runs (a call; its arguments are the command), and the
//     next "User:" is the command's output (a tool output) or, when the
//     response had no single command, the agent's feedback (a user
//     message);
//   - escape sequences, the spinner and log records printed among the
//     output (LiteLLM's tracebacks) are not the conversation and are not
//     counted; Rich's line wraps are, as printed.
//
// Tool time is the client's own time from a command's start to the end of
// its output: from the event that printed the response (mini runs the
// command as soon as it prints it) to the event that printed the last of
// the command's output. The gap from there to the next response's header,
// while the spinner turns, is the model's latency and is not tool time.
// The recording has no usage, so input_tokens are left out.
func ImportMiniSWEAgentCast(r io.Reader, count Counter) (*Workload, error) {
	text, times, err := readCast(r)
	if err != nil {
		return nil, err
	}
	start := miniStart.FindStringSubmatchIndex(text)
	if start == nil {
		return nil, errorf("", "no mini-swe-agent session in the recording (its banner \"This is mini-swe-agent version\" is missing)")
	}
	version := text[start[2]:start[3]]
	if major, _, _ := strings.Cut(version, "."); major != MiniSWEAgentMajor {
		return nil, errorf("banner", "the recording was made by mini-swe-agent %q; agentloop reads mini-swe-agent %s.x", version, MiniSWEAgentMajor)
	}
	model := ""
	if m := miniModel.FindStringSubmatch(text[:start[0]]); m != nil {
		model = m[1]
	}
	body := text[start[1]:]
	offset := start[1]
	if end := miniSaved.FindStringIndex(body); end != nil {
		body = body[:end[0]]
	}
	at := func(i int) float64 { return castTime(times, offset+i) }

	type segment struct {
		kind       string // "System", "User" or "step"
		start, end int    // the text after the marker, in body
	}
	var segs []segment
	for _, m := range miniMarker.FindAllStringSubmatchIndex(body, -1) {
		if n := len(segs); n > 0 {
			segs[n-1].end = m[0]
		}
		kind := "step"
		if m[2] >= 0 {
			kind = body[m[2]:m[3]]
		}
		segs = append(segs, segment{kind: kind, start: m[1], end: len(body)})
	}

	w := &Workload{Version: Version, Source: "mini-swe-agent-" + version}
	var (
		pending   []Input
		lastCalls int     // calls of the last response
		stepAt    float64 // when the last response was printed
		outputEnd float64 // when the last tool output ended
		sawTask   bool
		steps     int
	)
	for _, s := range segs {
		raw := body[s.start:s.end]
		if s.kind != "step" {
			if end := miniMessageEnd.FindStringIndex(raw); end != nil {
				raw = raw[:end[0]]
			}
		}
		switch s.kind {
		case "System":
			if !sawTask {
				w.InstructionsTokens += count(miniClean(raw))
			}
		case "User":
			clean := miniClean(raw)
			if strings.TrimSpace(clean) == "" {
				continue // the empty observation of the final submission
			}
			kind := KindUserMessage
			if sawTask && lastCalls > 0 {
				kind = KindToolOutput
				lastCalls--
				outputEnd = at(lastPrinted(raw, s.start))
			}
			sawTask = true
			pending = append(pending, Input{Kind: kind, Tokens: max(count(clean), 1)})
		case "step":
			steps++
			if len(w.Turns) >= MaxTurns {
				return nil, errorf("turns", "the session has more than %d steps; a workload holds at most %d", MaxTurns, MaxTurns)
			}
			if n := len(w.Turns); n > 0 && outputEnd > stepAt {
				w.Turns[n-1].ToolTimeMs = min(math.Round((outputEnd-stepAt)*1e6)/1e3, MaxToolTimeMs) // to the recording's microsecond
			}
			clean := miniClean(raw)
			t := Turn{Input: pending, OutputTokens: max(count(clean), 1)}
			if acts := miniAction.FindAllStringSubmatch(clean, -1); len(acts) == 1 {
				t.Calls = []Call{{ArgumentTokens: max(count(acts[0][1]), 1)}}
			}
			lastCalls = len(t.Calls)
			stepAt = at(s.start)
			outputEnd = 0
			w.Turns = append(w.Turns, t)
			pending = nil
		}
	}
	if steps == 0 {
		return nil, errorf("turns", "the mini-swe-agent session holds no response (no \"mini-swe-agent (step N, $C):\")")
	}
	desc := "mini-swe-agent " + version
	if model != "" {
		desc += ", " + model
	}
	w.Describe(desc, "; asciinema: tool time from a command's printing to its output's end")
	normalize(w)
	Fit(w)
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

// readCast reads an asciinema v2 recording's output events into one text
// with their escape sequences removed, and the time each output event
// began at in that text (times[i] = {offset, seconds}).
func readCast(r io.Reader) (string, []castMark, error) {
	in := newLines(r, maxCastBytes, maxCastLine)
	var (
		header bool
		text   strings.Builder
		times  []castMark
		strip  escapeStripper
		last   float64
	)
	for in.Scan() {
		line, b := in.Line(), in.Bytes()
		if !header {
			header = true
			var h struct {
				Version *int `json:"version"`
			}
			if err := json.Unmarshal(b, &h); err != nil || h.Version == nil {
				return "", nil, errorf(fmt.Sprintf("line %d", line), "not an asciinema header (a JSON object with a version)")
			}
			if *h.Version != 2 {
				return "", nil, errorf(fmt.Sprintf("line %d", line), "asciinema format version %d; agentloop reads version 2", *h.Version)
			}
			continue
		}
		var ev []json.RawMessage
		if err := json.Unmarshal(b, &ev); err != nil || len(ev) != 3 {
			return "", nil, errorf(fmt.Sprintf("line %d", line), "not an asciinema event ([time, code, data])")
		}
		var (
			t    float64
			code string
			data string
		)
		if json.Unmarshal(ev[0], &t) != nil || json.Unmarshal(ev[1], &code) != nil || json.Unmarshal(ev[2], &data) != nil {
			return "", nil, errorf(fmt.Sprintf("line %d", line), "not an asciinema event ([time, code, data])")
		}
		if !(t >= 0 && t <= 1e9) {
			return "", nil, errorf(fmt.Sprintf("line %d", line), "time %s out of range", strconv.FormatFloat(t, 'g', -1, 64))
		}
		// Events are written as they are printed, but their times may
		// step back a little (the recorder's clock): time never runs
		// backwards here.
		last = max(last, t)
		t = last
		if code != "o" {
			continue
		}
		times = append(times, castMark{offset: text.Len(), seconds: t})
		strip.write(&text, data)
	}
	if err := in.Err(); err != nil {
		return "", nil, err
	}
	if !header {
		return "", nil, errorf("", "empty; expected an asciinema recording")
	}
	return text.String(), times, nil
}

// castMark is when the output event that begins at offset was printed.
type castMark struct {
	offset  int
	seconds float64
}

// castTime is when the byte at offset was printed.
func castTime(times []castMark, offset int) float64 {
	i := sort.Search(len(times), func(i int) bool { return times[i].offset > offset })
	if i == 0 {
		return 0
	}
	return times[i-1].seconds
}

// lastPrinted is the offset in the whole text of the last byte of raw
// (found at start) that is not white space: when an output ended.
func lastPrinted(raw string, start int) int {
	return start + max(len(strings.TrimRight(raw, " \t\r\n"))-1, 0)
}

// escapeStripper removes terminal escape sequences (CSI, OSC and
// two-byte ones) from a stream written in pieces: a sequence may be cut
// across two events.
type escapeStripper struct {
	state byte // 0 text, 1 after ESC, 2 in CSI, 3 in OSC/DCS, 4 ESC inside OSC
}

func (e *escapeStripper) write(out *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch e.state {
		case 0:
			if c == 0x1b {
				e.state = 1
				continue
			}
			out.WriteByte(c)
		case 1:
			switch c {
			case '[':
				e.state = 2
			case ']', 'P', '_', '^':
				e.state = 3
			default:
				e.state = 0
			}
		case 2:
			if c >= 0x40 && c <= 0x7e {
				e.state = 0
			}
		case 3:
			switch c {
			case 0x07:
				e.state = 0
			case 0x1b:
				e.state = 4
			}
		case 4:
			e.state = 0
			if c != '\\' {
				e.state = 3
			}
		}
	}
}

// miniClean is a printed message as the model read or wrote it: without
// the spinner, carriage returns and the log records printed among it.
func miniClean(raw string) string {
	s := miniSpinner.ReplaceAllString(raw, "")
	s = strings.ReplaceAll(s, "\r", "")
	if !strings.Contains(s, " - ") {
		return strings.Trim(s, "\n")
	}
	lines := strings.Split(s, "\n")
	kept := lines[:0]
	inLog := false
	for _, l := range lines {
		switch {
		case miniLog.MatchString(l):
			inLog = true
			continue
		case inLog && (l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "Traceback ") ||
			strings.HasPrefix(l, "During handling") || strings.HasPrefix(l, "The above exception") ||
			miniException.MatchString(l)):
			continue
		}
		inLog = false
		kept = append(kept, l)
	}
	return strings.Trim(strings.Join(kept, "\n"), "\n")
}
