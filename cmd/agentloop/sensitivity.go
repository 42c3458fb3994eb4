package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"agentloop/apistack"
	"agentloop/rollout"
)

// sensitivityFactors scale one parameter at a time, with their headers.
var sensitivityFactors = []struct {
	Factor float64
	Label  string
}{{0.25, "×¼"}, {0.5, "×½"}, {1, "×1"}, {2, "×2"}, {4, "×4"}}

// sensitivityRow is the headline saving with one parameter scaled by each
// factor in turn, and how far it moves.
type sensitivityRow struct {
	Param   string    `json:"param"`
	Value   float64   `json:"value"`   // the parameter as the run had it
	Savings []float64 `json:"savings"` // at each factor; 0.41 = ws finished 41% sooner
	Swing   float64   `json:"swing"`   // the largest saving less the smallest
}

type sensitivity struct {
	Run      string           `json:"run"`
	Stack    apistack.Stack   `json:"stack"`
	Factors  []float64        `json:"factors"`
	Rows     []sensitivityRow `json:"rows"`
	Dominant string           `json:"dominant"`
}

// sensitivityOf re-costs the recorded run with each parameter scaled by
// each factor, one at a time, and reads the headline saving: ws against
// http-optimized, from the median repeat.
func sensitivityOf(rec *rollout.RunRecord) (*sensitivity, error) {
	s := &sensitivity{Run: rec.ID, Stack: rec.Config.Stack}
	for _, f := range sensitivityFactors {
		s.Factors = append(s.Factors, f.Factor)
	}
	for _, p := range apistack.Params {
		from := rec.Config.Stack
		row := sensitivityRow{Param: p.Key, Value: p.Get(from)}
		lo, hi := 2.0, -2.0
		for _, f := range sensitivityFactors {
			st := from
			p.Set(&st, p.Get(from)*f.Factor) // may leave the range: re-costing needs no validation
			if f.Factor != 1 {
				st.Preset = "custom"
			}
			re, err := rec.Recosted(st)
			if err != nil {
				return nil, err
			}
			saved, ok := re.Summary.SavedVsOptimized[rollout.LaneWS]
			if !ok {
				return nil, fmt.Errorf("run %s has no saving of %s against %s: race both lanes", rec.ID, rollout.LaneWS, rollout.LaneHTTPOptimized)
			}
			row.Savings = append(row.Savings, saved)
			lo, hi = min(lo, saved), max(hi, saved)
		}
		row.Swing = hi - lo
		s.Rows = append(s.Rows, row)
		if s.Dominant == "" || row.Swing > s.rowOf(s.Dominant).Swing {
			s.Dominant = p.Key
		}
	}
	return s, nil
}

func (s *sensitivity) rowOf(key string) sensitivityRow {
	for _, r := range s.Rows {
		if r.Param == key {
			return r
		}
	}
	return sensitivityRow{}
}

func runBenchSensitivity(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop bench sensitivity", flag.ContinueOnError)
	runFile := fs.String("run", "", "a recorded race: the JSON that agentloop race --json printed (raced under a hosted stack)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: agentloop bench sensitivity --run FILE [flags]

How much each stack parameter moves the headline saving (ws against http-optimized, the median repeat):
each parameter in turn is scaled by ×¼, ×½, ×1, ×2 and ×4 while the others stay as the run had them.
It never races: a stack stage's cost is a function of the work the run recorded, so the one race is
re-costed for each setting (docs/stack.md, "Sensitivity"). It prints a Markdown table and names the
parameter that moves the saving most.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if *runFile == "" {
		fs.Usage()
		return fmt.Errorf("bench sensitivity: --run FILE is required")
	}
	b, err := os.ReadFile(*runFile)
	if err != nil {
		return err
	}
	var rec rollout.RunRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("%s: not a race's JSON: %w", *runFile, err)
	}
	s, err := sensitivityOf(&rec)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(stdout, "The headline saving (ws against http-optimized, median repeat) of run %s, re-costed with one parameter of %s scaled at a time:\n\n", s.Run, s.Stack.String())
	head := []string{"parameter"}
	for _, f := range sensitivityFactors {
		head = append(head, f.Label)
	}
	fmt.Fprintf(stdout, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, r := range s.Rows {
		cells := []string{r.Param}
		for _, v := range r.Savings {
			cells = append(cells, fmt.Sprintf("%.0f%%", 100*v))
		}
		fmt.Fprintf(stdout, "| %s |\n", strings.Join(cells, " | "))
	}
	d := s.rowOf(s.Dominant)
	fmt.Fprintf(stdout, "\nThe dominant parameter is %s: from ×¼ to ×4 it moves the saving by %.0f points.\n", d.Param, 100*d.Swing)
	return nil
}
