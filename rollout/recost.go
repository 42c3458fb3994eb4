package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"agentloop/api"
	"agentloop/apistack"
)

// Recosted returns the run as if it had been raced under the stack st.
//
// A stack stage's cost is a pure function of the work it recorded (tokens
// classified, bytes loaded, hops made: apistack.Stack.StageCost), so each turn's
// stack work is costed again under st; every other time stays as measured.
// A turn's events after its pre-inference stages move by the change of
// those stages, its end also by the change of billing, and every later
// turn of the same lane and repeat, and the repeat's total, by the changes
// before it. The summary is then computed again from the re-costed turns.
//
// This is exact for a sequential race. For lanes that ran together it
// keeps each lane's own timeline but not how the lanes' overlap would have
// changed.
//
// A run raced under a stack that models none of st's stages (lean, say)
// recorded no work to re-cost, and neither did a run stored before turns
// kept their stack work: both are an error.
func (rec *RunRecord) Recosted(st apistack.Stack) (*RunRecord, error) {
	from := rec.Config.Stack
	if !from.Modelled() {
		return nil, fmt.Errorf("run %s was raced under the %s stack, which models no stack stage, so it recorded no stack work to re-cost; race it under a hosted stack", rec.ID, from.String())
	}
	if err := st.Validate("stack"); err != nil {
		return nil, fmt.Errorf("%s", err.Message)
	}
	for _, stage := range apistack.Stages {
		for _, pre := range []bool{false, true} {
			if st.Runs(stage, pre) && !from.Runs(stage, pre) {
				return nil, fmt.Errorf("run %s was raced under a stack that does not model %s, so that stage's work was not recorded; race under a stack that models every stage the new one does", rec.ID, stage)
			}
		}
	}
	lanes := rec.Lanes
	if rec.Summary != nil && len(rec.Summary.Lanes) > 0 {
		lanes = rec.Summary.Lanes
	}
	stored := map[string]LaneSummary{}
	for _, l := range lanes {
		if len(l.RepeatTotalsNS) == 0 {
			return nil, fmt.Errorf("run %s was stored before each repeat's total was kept, so it cannot be re-costed; race it again", rec.ID)
		}
		stored[l.Lane] = l
	}
	out := *rec
	out.Config.Stack = st
	out.Turns = slices.Clone(rec.Turns)
	// Each lane's repeats, their turns in the order they ran.
	type key struct {
		lane   string
		repeat int
	}
	runs := map[key][]int{}
	for i, t := range out.Turns {
		if len(t.StackWork) == 0 && stageNS(t, StageAPIStack) > 0 {
			return nil, fmt.Errorf("run %s was stored before turns kept their stack work, so it cannot be re-costed; race it again", rec.ID)
		}
		k := key{t.Lane, t.Repeat}
		runs[k] = append(runs[k], i)
	}
	shifts := map[key]int64{}
	for k, idx := range runs {
		slices.SortStableFunc(idx, func(a, b int) int {
			ta, tb := out.Turns[a], out.Turns[b]
			return cmp.Or(cmp.Compare(ta.SentNS, tb.SentNS), cmp.Compare(ta.Index, tb.Index))
		})
		var shift int64
		for _, i := range idx {
			shift = recostTurn(&out.Turns[i], from, st, shift)
		}
		shifts[k] = shift
	}
	results := map[string][]LaneSummary{}
	for _, lane := range out.Config.Lanes {
		l, ok := stored[lane]
		if !ok {
			continue
		}
		for r, total := range l.RepeatTotalsNS {
			var turns []Turn
			for _, i := range runs[key{lane, r}] {
				turns = append(turns, out.Turns[i])
			}
			slices.SortStableFunc(turns, func(a, b Turn) int { return a.Index - b.Index })
			s := laneSummary(lane, turns, time.Duration(total+shifts[key{lane, r}]))
			s.Status, s.Error = l.Status, l.Error
			results[lane] = append(results[lane], s)
		}
	}
	out.Summary = summarize(out.Config, results)
	keepRepeatTotals(out.Summary, results)
	out.Lanes = slices.Clone(out.Summary.Lanes)
	return &out, nil
}

// recostTurn costs one turn's stack work under st instead of from, moves
// its offsets by shift (the change of the turns before it) and by its own
// change, and returns the shift of the turns after it.
func recostTurn(t *Turn, from, st apistack.Stack, shift int64) int64 {
	var pre, post, total int64
	for _, w := range t.StackWork {
		d := int64(st.StageCost(w) - from.StageCost(w))
		total += int64(st.StageCost(w))
		if w.Stage == api.StageStackBilling { // after finalize, before the terminal event
			post += d
		} else {
			pre += d
		}
	}
	t.SentNS += shift
	for _, v := range []*int64{&t.FirstEventNS, &t.FirstTokenNS, &t.LastTokenNS} {
		if *v != 0 {
			*v += shift + pre
		}
	}
	t.DoneNS += shift + pre + post
	if len(t.StackWork) > 0 {
		t.Stages = withStage(t.Stages, StageTime{Name: StageAPIStack, DurationNS: total, Kind: api.Modelled})
	}
	return shift + pre + post
}

// withStage returns stages with s's duration set: dropped when it is zero,
// as merge drops an empty api_stack, added after the overhead when absent.
func withStage(stages []StageTime, s StageTime) []StageTime {
	stages = slices.Clone(stages)
	i := slices.IndexFunc(stages, func(x StageTime) bool { return x.Name == s.Name })
	switch {
	case i >= 0 && s.DurationNS == 0:
		return slices.Delete(stages, i, i+1)
	case i >= 0:
		stages[i].DurationNS = s.DurationNS
		return stages
	case s.DurationNS == 0:
		return stages
	}
	at := slices.IndexFunc(stages, func(x StageTime) bool { return x.Name == StageOverhead }) + 1
	return slices.Insert(stages, at, s)
}

// stageNS is a turn's time in the named stage.
func stageNS(t Turn, name string) int64 {
	var ns int64
	for _, s := range t.Stages {
		if s.Name == name {
			ns += s.DurationNS
		}
	}
	return ns
}

// keepRepeatTotals records each lane's total of every repeat in its
// summary, so that the run can be re-costed later.
func keepRepeatTotals(sum *Summary, results map[string][]LaneSummary) {
	for i := range sum.Lanes {
		var totals []int64
		for _, r := range results[sum.Lanes[i].Lane] {
			totals = append(totals, r.TotalNS)
		}
		sum.Lanes[i].RepeatTotalsNS = totals
	}
}
