package rollout

import (
	"fmt"
	"math"
	"strconv"
)

// WorkloadAnswer is a workload race's answer in one sentence: how much
// sooner WebSocket mode (ws) finishes than optimized HTTP, at the race's
// speed and under its stack, and the same under lean. The lean figure
// re-costs the recorded race without its modelled stack (each lane's
// median repeat less its api_stack stage); it never re-races. "" when the
// race replayed no workload or lacks either lane's median.
//
// The race's headline (summary.go) is built elsewhere; this sentence joins
// it for workload races.
func WorkloadAnswer(cfg Config, sum *Summary) string {
	if cfg.Scenario != WorkloadScenario || sum == nil {
		return ""
	}
	var opt, ws *LaneSummary
	for i := range sum.Lanes {
		switch l := &sum.Lanes[i]; l.Lane {
		case LaneHTTPOptimized:
			opt = l
		case LaneWS:
			ws = l
		}
	}
	if opt == nil || ws == nil || opt.Status != StatusPassed || ws.Status != StatusPassed || opt.TotalNS <= 0 {
		return ""
	}
	speed := cfg.Profile
	if cfg.DecodeTPS > 0 {
		speed = strconv.FormatFloat(cfg.DecodeTPS, 'f', -1, 64) + " tok/s"
	}
	stack := cfg.Stack.Preset
	if stack == "" {
		stack = "lean"
	}
	saved := 1 - float64(ws.TotalNS)/float64(opt.TotalNS)
	s := fmt.Sprintf("Your workload: WebSocket mode would finish %s than optimized HTTP at %s, under %s", sooner(saved), speed, stack)
	if lo, hi, n := repeatRange(*opt, *ws); n > 1 {
		s += fmt.Sprintf(" (the median of %d repeats; from %s to %s across them)", n, sooner(lo), sooner(hi))
	}
	if stack == "lean" {
		return s + "."
	}
	optLean := opt.TotalNS - opt.StageNS[StageAPIStack]
	wsLean := ws.TotalNS - ws.StageNS[StageAPIStack]
	if optLean <= 0 {
		return s + "."
	}
	return s + fmt.Sprintf("; %s under lean.", percent(1-float64(wsLean)/float64(optLean)))
}

// repeatRange is the least and the most WebSocket saved against optimized
// HTTP in one repeat, pairing each lane's repeats in order, and how many
// repeats were paired.
func repeatRange(opt, ws LaneSummary) (lo, hi float64, n int) {
	n = min(len(opt.RepeatTotalsNS), len(ws.RepeatTotalsNS))
	for i := range n {
		if opt.RepeatTotalsNS[i] <= 0 {
			return 0, 0, 0
		}
		v := 1 - float64(ws.RepeatTotalsNS[i])/float64(opt.RepeatTotalsNS[i])
		if i == 0 || v < lo {
			lo = v
		}
		if i == 0 || v > hi {
			hi = v
		}
	}
	return lo, hi, n
}

// sooner says a share saved as "23% sooner" or, when negative, "4% later".
func sooner(saved float64) string {
	if math.Round(100*saved) < 0 {
		return percent(-saved) + " later"
	}
	return percent(saved) + " sooner"
}

func percent(v float64) string {
	if math.Round(100*v) < 0 {
		return "−" + strconv.Itoa(int(math.Round(-100*v))) + "%"
	}
	return strconv.Itoa(int(math.Round(100*v))) + "%"
}
