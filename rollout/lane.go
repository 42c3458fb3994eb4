package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"agentloop/store"
)

// runLane runs one lane of one repeat through base (the latency proxy),
// keeps its live state, stores its turns and sums it up.
//
// clock is the lane's own clock in this repeat; runLane leaves it once the
// lane's last step is done.
func (rc *race) runLane(ctx context.Context, lane string, repeat int, base string, clock *laneClock) (LaneSummary, error) {
	d := &dialer{addr: strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://")}
	cacheKey := fmt.Sprintf("%s-%s-r%d", rc.id, lane, repeat)
	// The lane's drills are armed for this repeat, scoped to its requests.
	drills, scope := rc.laneDrills(lane), ""
	var drillIDs []string
	if len(drills) > 0 {
		scope = cacheKey
		var err error
		if drillIDs, err = rc.armDrills(ctx, drills, scope); err != nil {
			return LaneSummary{Lane: lane, Status: StatusFailed, Error: "arm drills: " + err.Error()}, err
		}
	}
	tr, err := NewTransport(lane, base, d, rc.r.TLS, rc.r.APIKey, rc.cfg.Stack, scope, rc.id+"/"+lane)
	if err != nil {
		rc.disarmDrills(ctx, drillIDs)
		return LaneSummary{Lane: lane, Status: StatusFailed, Error: err.Error()}, err
	}
	rc.setLane(lane, func(s *LaneSnapshot) {
		s.Status, s.Repeat, s.Turn, s.Tokens, s.Turns, s.ElapsedNS, s.Error = StatusRunning, repeat, 0, 0, nil, 0, ""
	})
	lr := &laneRun{lane: lane, repeat: repeat, sc: rc.sc, wl: rc.wl, cfg: rc.cfg,
		cacheKey: cacheKey, tr: tr, clock: clock}
	// Engine traces are merged as each turn ends, off the lane's path, so
	// the live waterfall shows every stage; at most two lookups at a time.
	var merges sync.WaitGroup
	var mergedMu sync.Mutex
	merged := map[int]Turn{}
	lr.onTurn = func(t Turn) {
		// A prototype turn that paused has no trace yet: the response's
		// trace is kept once, at its end, and merged then.
		if t.ResponseID != "" && (lane != LanePrototype || len(t.Calls) == 0) {
			mt := t
			mt.Stages = slices.Clone(t.Stages)
			mergeOne := func() {
				rc.mergeSlots <- struct{}{}
				defer func() { <-rc.mergeSlots }()
				if !rc.merge(ctx, &mt) {
					return
				}
				mergedMu.Lock()
				merged[mt.Index] = mt
				mergedMu.Unlock()
				rc.setLane(lane, func(s *LaneSnapshot) {
					for i := range s.Turns {
						if s.Turns[i].ResponseID == mt.ResponseID {
							s.Turns[i] = mt
						}
					}
				})
			}
			if rc.cfg.TakeTurns {
				// The lane still holds the baton: the lookup runs while
				// nothing else does, off every lane's clock.
				clock.sideline(mergeOne)
			} else {
				merges.Add(1)
				go func() { defer merges.Done(); mergeOne() }()
			}
		}
		// Each turn is stored as it ends, off the lane's path, so a crash
		// loses at most the turns in flight; the lane's end stores them
		// again with the engine's stages merged.
		select {
		case rc.saves <- t:
		default:
			rc.r.log.Warn("turn store queue full; the turn is stored at the lane's end", "lane", lane)
		}
		rc.setLane(lane, func(s *LaneSnapshot) {
			s.Turn = t.Index + 1
			s.Tokens += t.OutputTokens
			s.ElapsedNS = t.DoneNS + t.ToolNS
			if s.ElapsedNS > 0 {
				s.TokensPerSec = float64(s.Tokens) / (float64(s.ElapsedNS) / 1e9)
			}
			s.Turns = append(s.Turns, t)
		})
	}
	runErr := lr.run(ctx)
	// Merge the engine's traces (fetched directly, after the lane, so the
	// lookups never slow the lane down; lanes that take turns look up what
	// is left at their turn, off the clock, so that nothing overlaps a
	// step).
	mergedAll := false
	if rc.cfg.TakeTurns && clock.take(ctx) == nil {
		clock.sideline(func() { rc.mergeTraces(ctx, lr.turns, merged) })
		mergedAll = true
	}
	clock.leave()
	elapsed := clock.own(time.Now())
	merges.Wait()
	if !mergedAll {
		rc.mergeTraces(ctx, lr.turns, merged)
	}
	rc.nameDrops(ctx, lr.turns)
	rc.disarmDrills(ctx, drillIDs)
	sum := laneSummary(lane, lr.turns, elapsed)
	sum.Status = StatusPassed
	if runErr != nil {
		sum.Status = StatusFailed
		if errors.Is(runErr, errStopped) {
			sum.Status = StatusInterrupted
		}
		sum.Error = runErr.Error()
	}
	for _, t := range lr.turns {
		rc.saves <- t // after this lane's live saves, in order
	}
	rc.setLane(lane, func(s *LaneSnapshot) {
		s.Status = sum.Status
		s.Error = sum.Error
		s.ElapsedNS = elapsed.Nanoseconds()
		s.Turns = slices.Clone(lr.turns)
	})
	return sum, runErr
}

// saveTurn stores one turn with its stages as spans.
func (rc *race) saveTurn(ctx context.Context, t Turn) {
	bare := t
	bare.Calls, bare.Text = nil, ""
	timings, _ := json.Marshal(bare)
	calls, _ := json.Marshal(struct {
		Text  string `json:"text"`
		Calls []Call `json:"calls"`
	}{t.Text, t.Calls})
	var spans []store.Span
	for _, s := range t.Stages {
		spans = append(spans, store.Span{RunID: rc.id, Lane: t.Lane, Repeat: t.Repeat, TurnIndex: t.Index, ResponseID: t.ResponseID,
			Name: s.Name, Kind: s.Kind, DurationNS: s.DurationNS})
	}
	err := rc.r.db.SaveTurn(context.WithoutCancel(ctx), &store.Turn{RunID: rc.id, Lane: t.Lane, Repeat: t.Repeat, Index: t.Index,
		ResponseID: t.ResponseID, Timings: timings, Output: calls}, spans)
	if err != nil {
		rc.r.log.Error("save turn", "run", rc.id, "err", err)
	}
}
