package rollout

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// laneSummary sums up one lane's turns of one repeat.
func laneSummary(lane string, turns []Turn, elapsed time.Duration) LaneSummary {
	s := LaneSummary{Lane: lane, TotalNS: elapsed.Nanoseconds(), StageNS: map[string]int64{}}
	var overheads []int64
	var turnOverhead, turnStack int64
	for _, t := range turns {
		if t.Index < 0 {
			// the warmup counts in time and stages, not as a turn
		} else if t.Error == "" {
			s.Turns++
		}
		s.APICPUNS += t.OverheadNS
		if t.Index >= 0 {
			turnOverhead += t.OverheadNS
			for _, st := range t.Stages {
				if st.Name == StageAPIStack {
					turnStack += st.DurationNS
				}
			}
		}
		s.InputTokens += t.InputTokens
		s.CachedTokens += t.CachedTokens
		s.OutputTokens += t.OutputTokens
		s.BytesSent += t.BytesSent
		s.BytesReceived += t.BytesReceived
		if t.Index >= 0 && t.ResponseID != "" {
			overheads = append(overheads, t.OverheadNS)
		}
		for _, st := range t.Stages {
			s.StageNS[st.Name] += st.DurationNS
		}
	}
	if s.InputTokens > 0 {
		s.CachedShare = float64(s.CachedTokens) / float64(s.InputTokens)
	}
	if len(overheads) > 0 {
		slices.Sort(overheads)
		s.MedianOverNS = overheads[len(overheads)/2]
		s.OverheadPerTurnNS = turnOverhead / int64(len(overheads))
		s.StackPerTurnNS = turnStack / int64(len(overheads))
	}
	if s.APICPUNS > 0 {
		s.RolloutsPerCore = float64(s.TotalNS) / float64(s.APICPUNS)
	}
	s.TopStages = topStages(s.StageNS, s.TotalNS, 2)
	return s
}

// topStages returns the n biggest stages, each with its share of total.
func topStages(stageNS map[string]int64, total int64, n int) []StageShare {
	if total <= 0 {
		return nil
	}
	var out []StageShare
	for name, ns := range stageNS {
		if ns > 0 {
			out = append(out, StageShare{Name: name, NS: ns, Share: float64(ns) / float64(total)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].NS != out[j].NS {
			return out[i].NS > out[j].NS
		}
		return out[i].Name < out[j].Name
	})
	return out[:min(n, len(out))]
}

// StageShortName names a stage in a sentence: "queue+prefill", "API stack".
func StageShortName(name string) string {
	switch name {
	case StageOverhead:
		return "API overhead"
	case StageAPIStack:
		return "API stack"
	case StagePrefill:
		return "queue+prefill"
	case StageTool:
		return "tools"
	}
	return name
}

// timeWent is the one sentence of where each lane's time went.
func timeWent(lanes []LaneSummary) string {
	var parts []string
	for _, l := range lanes {
		if len(l.TopStages) == 0 {
			continue
		}
		var ss []string
		for _, st := range l.TopStages {
			ss = append(ss, fmt.Sprintf("%s %.0f%%", StageShortName(st.Name), 100*st.Share))
		}
		parts = append(parts, LaneLabel(l.Lane)+": "+strings.Join(ss, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Where the time went: " + strings.Join(parts, "; ") + "."
}

// SaveTarget is the share WebSocket mode saved against optimized HTTP in
// the field's announcement; WhatItWouldTake solves for it.
const SaveTarget = 0.4

// whatItWouldTake solves (T_opt + n·x − T_ws) / (T_opt + n·x) = target for
// x, the extra API overhead per turn optimized HTTP would need: T_opt + n·x
// = T_ws / (1 − target).
func whatItWouldTake(opt, ws LaneSummary, target float64) *WhatItWouldTake {
	if opt.Status != StatusPassed || ws.Status != StatusPassed || opt.Turns == 0 || opt.TotalNS <= 0 || ws.TotalNS <= 0 {
		return nil
	}
	x := (float64(ws.TotalNS)/(1-target) - float64(opt.TotalNS)) / float64(opt.Turns)
	return &WhatItWouldTake{Target: target, Turns: opt.Turns, ExtraPerTurnNS: int64(math.Round(x)),
		OverheadPerTurnNS: opt.OverheadPerTurnNS, MedianOverheadNS: opt.MedianOverNS, StackPerTurnNS: opt.StackPerTurnNS,
		OptimizedTotalNS: opt.TotalNS, WebSocketTotalNS: ws.TotalNS, Already: x <= 0}
}

// summarize takes each lane's median repeat and the savings against http
// and http-optimized.
func summarize(cfg Config, results map[string][]LaneSummary) *Summary {
	sum := &Summary{SavedVsHTTP: map[string]float64{}, SavedVsOptimized: map[string]float64{}, Sequential: cfg.Sequential, TakeTurns: cfg.TakeTurns, Repeats: cfg.Repeats}
	medians := map[string]LaneSummary{}
	for _, lane := range cfg.Lanes {
		reps := slices.Clone(results[lane])
		if len(reps) == 0 {
			medians[lane] = LaneSummary{Lane: lane, Status: StatusInterrupted}
			sum.Lanes = append(sum.Lanes, medians[lane])
			continue
		}
		status := StatusPassed
		errMsg := ""
		for _, r := range reps {
			if r.Status != StatusPassed && status == StatusPassed {
				status, errMsg = r.Status, r.Error
			}
		}
		sort.Slice(reps, func(i, j int) bool { return reps[i].TotalNS < reps[j].TotalNS })
		m := reps[len(reps)/2]
		m.Status, m.Error = status, errMsg
		if len(reps) > 1 {
			m.MinTotalNS, m.MaxTotalNS = reps[0].TotalNS, reps[len(reps)-1].TotalNS
		}
		medians[lane] = m
		sum.Lanes = append(sum.Lanes, m)
	}
	for _, lane := range cfg.Lanes {
		if h, ok := medians[LaneHTTP]; ok && h.TotalNS > 0 {
			sum.SavedVsHTTP[lane] = 1 - float64(medians[lane].TotalNS)/float64(h.TotalNS)
		}
		if o, ok := medians[LaneHTTPOptimized]; ok && o.TotalNS > 0 {
			sum.SavedVsOptimized[lane] = 1 - float64(medians[lane].TotalNS)/float64(o.TotalNS)
		}
	}
	sum.TimeWent = timeWent(sum.Lanes)
	o, okO := medians[LaneHTTPOptimized]
	w, okW := medians[LaneWS]
	if okO && okW {
		sum.WhatItWouldTake = whatItWouldTake(o, w, SaveTarget)
	}
	sum.Show()
	return sum
}
