package main

import (
	"context"
	"math"
	"slices"
	"testing"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
)

// TestCalibrate races the check's lanes once, on a short scenario with
// instant, and asserts on spans (and "bench sensitivity" re-costs that
// race, sensitivity_test.go): every lane's turns ran under the stack
// the check names (not the lean default its requests used to ask for), the
// same turn index is compared across lanes, the WebSocket's warm-up left
// out; then the fit recovers rates it was given figures for.
func TestCalibrate(t *testing.T) {
	t.Parallel() // its own engine or process: overlaps the other slow tests of this package
	ctx := context.Background()
	a, stop, err := startEngine(ctx, nil) // the server's default stack stays lean
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// The hosted stack's stages, with fast classifiers to keep it short.
	st := apistack.Hosted
	st.Preset, st.ClassifyTPS, st.ClassifyTPSBaseline = "custom", 5e6, 1e6
	c, err := calibrate(ctx, a, st, "quick-fix", "instant", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rollout.LoadRun(ctx, a.DB, c.Run)
	if err != nil {
		t.Fatal(err)
	}

	// bench sensitivity re-costs a race like this one: the same race
	// serves it (the race is most of either check's time).
	t.Run("bench sensitivity", func(t *testing.T) { checkBenchSensitivity(t, rec, st) })

	t.Run("every lane runs under the stack", func(t *testing.T) {
		turns := map[string]rollout.Turn{}
		perLane := map[string][]int{}
		for _, turn := range rec.Turns {
			turns[turn.ResponseID] = turn
			if turn.Index >= 0 {
				perLane[turn.Lane] = append(perLane[turn.Lane], turn.Index)
			}
		}
		for _, lane := range calibrationLanes {
			slices.Sort(perLane[lane])
			if !slices.Equal(perLane[lane], c.Indices) {
				t.Errorf("%s turns %v, compared %v", lane, perLane[lane], c.Indices)
			}
		}
		want := map[string][]string{
			rollout.LaneHTTP:          {api.StageStackConfigHop, api.StageStackSprintHops, api.StageStackClassify, api.StageStackBilling},
			rollout.LaneHTTPOptimized: {api.StageStackClassify, api.StageStackBilling},
			rollout.LaneWS:            {api.StageStackClassify, api.StageStackBilling},
		}
		for _, row := range c.Rows {
			for _, lane := range calibrationLanes {
				req := row.Lanes[lane]
				turn, ok := turns[req.ResponseID]
				if !ok || turn.Lane != lane || turn.Index != row.Index {
					t.Fatalf("turn %d of %s compares %s, which is %s turn %d", row.Index, lane, req.ResponseID, turn.Lane, turn.Index)
				}
				tr, ok := a.Shared.Traces.Get(req.ResponseID)
				if !ok {
					t.Fatalf("no trace for %s", req.ResponseID)
				}
				if tr.Stack != st.String() {
					t.Errorf("%s turn %d ran under stack %q, not %q", lane, row.Index, tr.Stack, st.String())
				}
				var spans []string
				for _, s := range tr.Spans {
					if api.IsStackStage(s.Name) {
						spans = append(spans, s.Name)
					}
				}
				for _, w := range want[lane] {
					if !slices.Contains(spans, w) {
						t.Errorf("%s turn %d has stack spans %v, no %s", lane, row.Index, spans, w)
					}
				}
			}
		}
		if len(c.Figures) != len(checkComparisons) || c.Figures[0].Min > c.Figures[0].Mean || c.Figures[0].Mean > c.Figures[0].Max {
			t.Errorf("figures %+v", c.Figures)
		}
	})

	t.Run("the fit recovers known rates", func(t *testing.T) {
		const tps, baseline = 180_000, 30_000
		known := withRates(st, tps, baseline)
		row := c.Rows[len(c.Rows)/2 : len(c.Rows)/2+1]
		for _, reading := range []string{apistack.ReadingPlain, apistack.ReadingPostSprint} {
			targets, _ := readingComparisons(reading)
			for i := range targets { // the figures the known rates give
				targets[i].Announced = targets[i].changes(row, known)[0]
			}
			gotTPS, gotBaseline := fitRates(row, st, targets)
			if math.Abs(gotTPS/tps-1) > 0.001 || math.Abs(gotBaseline/baseline-1) > 0.001 {
				t.Errorf("%s: fitted %.0f and %.0f, figures made from %d and %d", reading, gotTPS, gotBaseline, tps, baseline)
			}
		}
	})

	t.Run("the fit is a least-squares minimum, deterministic", func(t *testing.T) {
		for _, reading := range []string{apistack.ReadingPlain, apistack.ReadingPostSprint} {
			targets, _ := readingComparisons(reading)
			a, b := fitRates(c.Rows, st, targets)
			if a2, b2 := fitRates(c.Rows, st, targets); a2 != a || b2 != b {
				t.Errorf("%s: fitted %g, %g then %g, %g", reading, a, b, a2, b2)
			}
			best := fitCost(c.Rows, st, targets, a, b)
			inside := func(v float64) bool { return v >= math.Pow(10, fitMinLog) && v <= math.Pow(10, fitMaxLog) }
			for _, d := range [][2]float64{{1.01, 1}, {0.99, 1}, {1, 1.01}, {1, 0.99}} {
				if !inside(a*d[0]) || !inside(b*d[1]) { // the search's edge
					continue
				}
				if near := fitCost(c.Rows, st, targets, a*d[0], b*d[1]); near < best {
					t.Errorf("%s: cost %g at %g, %g beats the fit's %g at %g, %g", reading, near, a*d[0], b*d[1], best, a, b)
				}
			}
			f := fitReading(c.Rows, st, reading, targets)
			if len(f.Residuals) != 3 || f.Stack.ClassifyTPS != roundSig(a, 3) || f.Stack.HopMS != st.HopMS {
				t.Errorf("%s: fit %+v", reading, f)
			}
		}
	})
}

// TestStackFlagTakesEveryPreset: race --stack (and bench's) takes each
// preset by name, the fitted ones included.
func TestStackFlagTakesEveryPreset(t *testing.T) {
	for _, name := range []string{"lean", "hosted", "hosted-plain", "hosted-post-sprint"} {
		var s apistack.Stack
		if err := (stackFlag{&s}).Set(name); err != nil || s.Preset != name {
			t.Errorf("--stack %s: %+v, %v", name, s, err)
		}
	}
}
