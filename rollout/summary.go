package rollout

import (
	"slices"
	"sort"
	"time"
)

// laneSummary sums up one lane's turns of one repeat.
func laneSummary(lane string, turns []Turn, elapsed time.Duration) LaneSummary {
	s := LaneSummary{Lane: lane, TotalNS: elapsed.Nanoseconds(), StageNS: map[string]int64{}}
	var overheads []int64
	for _, t := range turns {
		if t.Index < 0 {
			// the warmup counts in time and stages, not as a turn
		} else if t.Error == "" {
			s.Turns++
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
	}
	return s
}

// summarize takes each lane's median repeat and the savings against http
// and http-optimized.
func summarize(cfg Config, results map[string][]LaneSummary) *Summary {
	sum := &Summary{SavedVsHTTP: map[string]float64{}, SavedVsOptimized: map[string]float64{}, Sequential: cfg.Sequential, Repeats: cfg.Repeats}
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
	return sum
}
