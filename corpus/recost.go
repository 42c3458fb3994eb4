package corpus

import (
	"fmt"
	"time"

	"agentloop/apistack"
	"agentloop/inference"
	"agentloop/rollout"
	"agentloop/workload"
)

// Recost returns each lane's total time as if the race rec had run under
// the stack st, with the model p and the tool times of w (or fixedToolMs
// between every two turns when it is not negative), from a race run once
// at instant with no tool time and lanes one after another:
//
//   - raced: each lane's own time, the engine's and the transport's, and
//     the stack work of every request (the race's stack must model every
//     stage st does: rollout.RunRecord.Recosted re-costs it);
//   - re-costed: the stack under st (a pure function of that work), the
//     model's time for each request that generated (p's base time to
//     first token, its uncached input at p's prefill rate and its output at
//     p's decode rate, without the profile's jitter), and the tool times.
//
// A warm-up (generate:false) generates nothing but pays the base time and
// its prefill, as the engine models it.
func Recost(rec *rollout.RunRecord, st apistack.Stack, p inference.Profile, w *workload.Workload, fixedToolMs float64) (map[string]time.Duration, error) {
	re, err := rec.Recosted(st)
	if err != nil {
		return nil, err
	}
	totals := map[string]time.Duration{}
	for _, l := range re.Summary.Lanes {
		if l.Status != rollout.StatusPassed {
			return nil, fmt.Errorf("run %s: lane %s %s", rec.ID, l.Lane, l.Status)
		}
		totals[l.Lane] = time.Duration(l.TotalNS)
	}
	for _, t := range re.Turns {
		if t.Repeat != 0 {
			continue
		}
		totals[t.Lane] += ModelTime(p, t.InputTokens-t.CachedTokens, t.OutputTokens)
		if t.Index >= 0 && t.Index+1 < len(w.Turns) {
			ms := w.Turns[t.Index].ToolTimeMs
			if fixedToolMs >= 0 {
				ms = fixedToolMs
			}
			totals[t.Lane] += time.Duration(ms * float64(time.Millisecond))
		}
	}
	return totals, nil
}

// ModelTime is the model's time for one request of p without jitter: its
// base time to first token, its uncached input at the prefill rate and
// its output at the decode rate.
func ModelTime(p inference.Profile, uncached, output int) time.Duration {
	d := float64(p.BaseTTFT)
	if p.PrefillTPS > 0 && uncached > 0 {
		d += float64(uncached) / p.PrefillTPS * float64(time.Second)
	}
	if p.DecodeTPS > 0 {
		d += float64(output) / p.DecodeTPS * float64(time.Second)
	}
	return time.Duration(d)
}

// Saving is the share of the reference's time a lane saves: 0.25 when it
// finishes 25% sooner.
func Saving(reference, lane time.Duration) float64 {
	if reference <= 0 {
		return 0
	}
	return 1 - float64(lane)/float64(reference)
}
