package corpus

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// Report is what `agentloop bench corpus --json` prints: each session's
// share saved, and the checks of the re-costing, with when and how it was
// made.
type Report struct {
	Date    string `json:"date,omitempty"`
	Command string `json:"command,omitempty"`
	// Machine says where it ran; bench corpus leaves it empty.
	Machine      string          `json:"machine,omitempty"`
	Sessions     []SessionResult `json:"sessions"`
	Checks       []Check         `json:"checks"`
	RacedSeconds float64         `json:"raced_seconds"`
}

// SessionResult is one session's result: its shape and the share
// WebSocket mode saves against optimized HTTP, by reading and speed.
type SessionResult struct {
	File         string `json:"file"`
	Turns        int    `json:"turns"`
	FinalContext int    `json:"final_context"`
	Run          string `json:"run"`
	// Saving[reading][speed] is ws against http-optimized, re-costed;
	// SavingVsHTTP the same against http, when --lanes races it.
	Saving       map[string]map[int]float64 `json:"saving"`
	SavingVsHTTP map[string]map[int]float64 `json:"saving_vs_http,omitempty"`
}

// Check compares a race run for real with its re-costing.
type Check struct {
	File      string           `json:"file"`
	Speed     int              `json:"speed"`
	Run       string           `json:"run"`
	RealMS    map[string]int64 `json:"real_ms"`
	RecostMS  map[string]int64 `json:"recost_ms"`
	RealSave  float64          `json:"real_saving"`
	RecostSav float64          `json:"recost_saving"`
}

// Speeds are the decode speeds the report re-costed at, in order.
func (r *Report) Speeds() []int {
	var out []int
	for _, s := range r.Sessions {
		for _, bySpeed := range s.Saving {
			for v := range bySpeed {
				if !slices.Contains(out, v) {
					out = append(out, v)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

//go:embed reference.json
var reference []byte

// Reference is the reference run of bench corpus the binary carries
// (corpus/reference.json), so that the playground shows the corpus's
// answer without racing it.
func Reference() (*Report, error) {
	var r Report
	if err := json.Unmarshal(reference, &r); err != nil {
		return nil, fmt.Errorf("corpus: reference.json: %w", err)
	}
	if len(r.Sessions) == 0 {
		return nil, fmt.Errorf("corpus: reference.json holds no session")
	}
	return &r, nil
}

// Workload returns the JSON of the corpus's workload at file (as
// Session.File names it), as committed.
func Workload(file string) ([]byte, error) {
	if !fs.ValidPath(file) || !strings.HasSuffix(file, ".json") || file == "reference.json" {
		return nil, fmt.Errorf("corpus: no session %s", strconv.Quote(file))
	}
	return files.ReadFile(file)
}
