package corpus

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"agentloop/workload"
)

//go:embed terminal-bench-mini-swe-agent swe-agent attribution.tsv
var files embed.FS

// Session is one workload of the corpus with its attribution.
type Session struct {
	// File is the workload's path in the corpus ("swe-agent/….json").
	File        string
	Workload    *workload.Workload
	Attribution Attribution
}

// Attribution is where a session was recorded, as attribution.tsv says.
type Attribution struct {
	Repository, Commit, Path, Agent, Model, Licence string
}

// NoLicence is the attribution of a source without a licence file.
const NoLicence = "no licence; derived counts only; removed on request"

// Load reads every session of the corpus, in the order of its files, and
// refuses a corpus whose files and attribution disagree.
func Load() ([]Session, error) {
	attr, err := attributions()
	if err != nil {
		return nil, err
	}
	var out []Session
	err = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := workload.Parse(bytes.TrimSpace(b))
		if err != nil {
			return fmt.Errorf("corpus: %s: %w", p, err)
		}
		a, ok := attr[p]
		if !ok {
			return fmt.Errorf("corpus: %s: not in attribution.tsv", p)
		}
		delete(attr, p)
		out = append(out, Session{File: p, Workload: w, Attribution: a})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for p := range attr {
		return nil, fmt.Errorf("corpus: attribution.tsv names %s, which the corpus does not hold", p)
	}
	return out, nil
}

// attributions reads attribution.tsv: a header, then one session a line,
// by its workload's path (written from the repository's root: corpus/…).
func attributions() (map[string]Attribution, error) {
	b, err := files.ReadFile("attribution.tsv")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	out := map[string]Attribution{}
	for i, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != 7 {
			return nil, fmt.Errorf("corpus: attribution.tsv line %d: %d fields, want 7", i+2, len(f))
		}
		out[strings.TrimPrefix(f[0], "corpus/")] = Attribution{Repository: f[1], Commit: f[2], Path: f[3], Agent: f[4], Model: f[5], Licence: f[6]}
	}
	return out, nil
}

// Shape is the corpus's shape in percentiles (p10, median, p90) and its
// maximum: what decides how much WebSocket mode can save.
type Shape struct {
	Sessions int
	// Turns per session; FinalContext the tokens a session's last request
	// holds with its output (instructions, tools, every input and output);
	// ToolOutput the tokens of each tool output; ToolTimeMs the recorded
	// tool time after each response that called a tool and was answered.
	Turns, FinalContext, ToolOutput, ToolTimeMs Spread
	// Untimed counts the sessions without recorded tool times.
	Untimed int
}

// Spread is a distribution in a few numbers.
type Spread struct {
	N                  int
	P10, P50, P90, Max float64
}

// ShapeOf is the shape of sessions.
func ShapeOf(sessions []Session) Shape {
	var turns, ctx, outs, times []float64
	s := Shape{Sessions: len(sessions)}
	for _, se := range sessions {
		w := se.Workload
		turns = append(turns, float64(len(w.Turns)))
		timed := false
		for i := range w.Turns {
			t := &w.Turns[i]
			for _, in := range t.Input {
				if in.Kind == workload.KindToolOutput {
					outs = append(outs, float64(in.Tokens))
				}
			}
			if i+1 < len(w.Turns) && len(t.Calls) > 0 {
				timed = timed || t.ToolTimeMs > 0
				times = append(times, t.ToolTimeMs)
			}
		}
		if !timed {
			s.Untimed++
		}
		ctx = append(ctx, float64(FinalContext(w)))
	}
	s.Turns, s.FinalContext, s.ToolOutput, s.ToolTimeMs = spread(turns), spread(ctx), spread(outs), spread(times)
	return s
}

// FinalContext is every token a session holds at its end: its
// instructions, tools, every input and every output.
func FinalContext(w *workload.Workload) int {
	n := w.InstructionsTokens + w.ToolsTokens
	for i := range w.Turns {
		n += w.Turns[i].NewInputTokens() + w.Turns[i].OutputTokens
	}
	return n
}

func spread(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	v = slices.Clone(v)
	sort.Float64s(v)
	return Spread{N: len(v), P10: Percentile(v, 0.10), P50: Percentile(v, 0.50), P90: Percentile(v, 0.90), Max: v[len(v)-1]}
}

// Percentile is the p-th quantile (0 to 1) of sorted values, linearly
// interpolated between the two nearest ranks.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := p * float64(len(sorted)-1)
	i := int(k)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (sorted[i+1]-sorted[i])*(k-float64(i))
}
