package rollout

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// What the pages and the CLI show about a lane, phrased once here so that
// no page phrases it again: the run API, the live snapshot and the stored
// run carry these strings, and every page shows them as they are.

// laneLabels name the lanes on screen and in a sentence.
var laneLabels = map[string]string{LaneHTTP: "HTTP", LaneHTTPOptimized: "HTTP optimized", LaneHTTPChained: "HTTP chained",
	LaneWS: "WebSocket", LanePrototype: "Prototype"}

// laneHows say, under a lane's label, how it talks to the engine.
var laneHows = map[string]string{
	LaneHTTP:          "full input every turn · /baseline/v1, no request caches",
	LaneHTTPOptimized: "full input every turn · /v1 with request caches",
	LaneHTTPChained:   "previous_response_id, store: true · /v1",
	LaneWS:            "one connection, previous_response_id, store: false · /v1",
	LanePrototype:     "experimental: one long-running response, response.append, store: false · /v1",
}

// LaneLabel is how a lane is named on screen and in the headline.
func LaneLabel(lane string) string {
	if l, ok := laneLabels[lane]; ok {
		return l
	}
	return lane
}

// LaneHow says how a lane talks to the engine ("" for an unknown lane).
func LaneHow(lane string) string { return laneHows[lane] }

// LaneShown is one row of a race's result table, phrased: the race page,
// the run page and presenter mode show these strings as they are.
type LaneShown struct {
	// Total is the lane's total, with the spread over its repeats next to
	// the median when it has some: "1.20 s (1.10 s – 1.31 s)".
	Total           string `json:"total"`
	Turns           string `json:"turns"`
	Input           string `json:"input"`
	Cached          string `json:"cached"` // "1,200 (40%)"
	MedianOverhead  string `json:"median_overhead"`
	StackPerTurn    string `json:"stack_per_turn"`
	APICPU          string `json:"api_cpu"`
	RolloutsPerCore string `json:"rollouts_per_core"` // "–" when nothing was measured
	// VsHTTP is how much sooner than http the lane finished ("40%
	// sooner", "10% later"), or "–" for http itself or without it.
	VsHTTP string `json:"vs_http"`
}

// Show labels the summary's lanes and phrases their rows, and says when
// they are medians. It runs when a
// summary is built and when a stored one is read, so a run stored before
// gets them too.
func (s *Summary) Show() {
	s.Medians = ""
	if s.Repeats > 1 {
		s.Medians = fmt.Sprintf("Each lane shows its median of %d repeats, with the fastest and slowest in brackets.", s.Repeats)
	}
	if tw := timeWent(s.Lanes); tw != "" { // lanes by their labels, a stored run's too
		s.TimeWent = tw
	}
	for i := range s.Lanes {
		l := &s.Lanes[i]
		l.Label = LaneLabel(l.Lane)
		vs := "–"
		if v, ok := s.SavedVsHTTP[l.Lane]; ok && l.Lane != LaneHTTP {
			vs = Sooner(v)
		}
		per := "–"
		if l.RolloutsPerCore > 0 {
			per = FormatInt(int64(math.Round(l.RolloutsPerCore)))
		}
		l.Shown = &LaneShown{Total: TotalWithSpread(*l), Turns: strconv.Itoa(l.Turns), Input: FormatInt(int64(l.InputTokens)),
			Cached:         fmt.Sprintf("%s (%d%%)", FormatInt(int64(l.CachedTokens)), int(math.Round(l.CachedShare*100))),
			MedianOverhead: FormatNS(l.MedianOverNS), StackPerTurn: FormatNS(l.StackPerTurnNS), APICPU: FormatNS(l.APICPUNS),
			RolloutsPerCore: per, VsHTTP: vs}
	}
}

// TotalWithSpread is a lane's total, with the spread over its repeats next
// to the median when it has some: "1.20 s (1.10 s – 1.31 s)".
func TotalWithSpread(l LaneSummary) string {
	if l.MaxTotalNS <= 0 {
		return FormatNS(l.TotalNS)
	}
	return FormatNS(l.TotalNS) + " (" + FormatNS(l.MinTotalNS) + " – " + FormatNS(l.MaxTotalNS) + ")"
}

// FormatInt writes n with a comma between groups of three digits.
func FormatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
