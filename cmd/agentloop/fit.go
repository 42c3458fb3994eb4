package main

import (
	"fmt"
	"math"

	"agentloop/apistack"
)

// fitResult is the classifier rates solved under one reading, and the
// residuals of every announced figure at them.
type fitResult struct {
	Reading string `json:"reading"`
	// Stack is the fitted stack: the given one with both classifier rates
	// solved, rounded to three significant figures (what a preset keeps).
	Stack apistack.Stack `json:"stack"`
	// Solved are the rates before rounding.
	Solved struct {
		ClassifyTPS         float64 `json:"classify_tps"`
		ClassifyTPSBaseline float64 `json:"classify_tps_baseline"`
	} `json:"solved"`
	// Residuals are the announced figures at Stack, turn by turn.
	Residuals []figureStats `json:"residuals"`
	// AtBound says when a rate ended at the edge of the search: the
	// figures want a faster (or slower) classifier than it allows.
	AtBound string `json:"at_bound,omitempty"`
}

// The fit searches each rate over 10^fitMinLog … 10^fitMaxLog tokens/s.
const fitMinLog, fitMaxLog = 3.0, 8.0

// fitReading solves the reading's free parameters, the classifier rates,
// by least squares over every row and announced figure. Only the rates
// move; every other parameter stays as base has it.
func fitReading(rows []calibrationRow, base apistack.Stack, reading string, targets []comparison) *fitResult {
	tps, baseline := fitRates(rows, base, targets)
	f := &fitResult{Reading: reading}
	f.Solved.ClassifyTPS, f.Solved.ClassifyTPSBaseline = tps, baseline
	f.Stack = withRates(base, roundSig(tps, 3), roundSig(baseline, 3))
	for _, t := range targets {
		f.Residuals = append(f.Residuals, t.stats(rows, f.Stack))
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"classify_tps", tps}, {"classify_tps_baseline", baseline}} {
		if l := math.Log10(r.v); l < fitMinLog+0.01 || l > fitMaxLog-0.01 {
			f.AtBound += fmt.Sprintf("%s ended at the edge of the search (%.0f to %.0f tokens/s). ", r.name, math.Pow(10, fitMinLog), math.Pow(10, fitMaxLog))
		}
	}
	return f
}

// withRates is base with both classifier rates set.
func withRates(base apistack.Stack, tps, baseline float64) apistack.Stack {
	s := base
	s.Preset, s.ClassifyTPS, s.ClassifyTPSBaseline = "custom", tps, baseline
	return s
}

// fitResiduals are change − announced for every target and row, with the
// rates as given.
func fitResiduals(rows []calibrationRow, base apistack.Stack, targets []comparison, tps, baseline float64) []float64 {
	st := withRates(base, tps, baseline)
	var out []float64
	for _, t := range targets {
		for _, c := range t.changes(rows, st) {
			out = append(out, c-t.Announced)
		}
	}
	return out
}

// fitCost is the sum of squared residuals.
func fitCost(rows []calibrationRow, base apistack.Stack, targets []comparison, tps, baseline float64) float64 {
	var sum float64
	for _, r := range fitResiduals(rows, base, targets, tps, baseline) {
		sum += r * r
	}
	return sum
}

// fitRates minimises fitCost over the two rates, in log10 space: a grid
// over the whole range finds the basin, Levenberg–Marquardt steps (a
// numerical Jacobian) settle its bottom, and a pattern search polishes it
// within the bounds. It is deterministic.
func fitRates(rows []calibrationRow, base apistack.Stack, targets []comparison) (tps, baseline float64) {
	res := func(p [2]float64) []float64 {
		return fitResiduals(rows, base, targets, math.Pow(10, p[0]), math.Pow(10, p[1]))
	}
	cost := func(p [2]float64) float64 {
		var sum float64
		for _, r := range res(p) {
			sum += r * r
		}
		return sum
	}
	const grid = 0.05
	var best [2]float64
	bestCost := math.Inf(1)
	for a := fitMinLog; a <= fitMaxLog+1e-9; a += grid {
		for b := fitMinLog; b <= fitMaxLog+1e-9; b += grid {
			if c := cost([2]float64{a, b}); c < bestCost {
				best, bestCost = [2]float64{a, b}, c
			}
		}
	}
	clamp := func(v float64) float64 { return min(max(v, fitMinLog), fitMaxLog) }
	const h = 1e-6
	lambda := 1e-3
	for range 500 {
		r := res(best)
		// J[i][k] = ∂r_i/∂p_k, by central differences.
		var jtj [2][2]float64
		var jtr [2]float64
		cols := [2][]float64{}
		for k := range 2 {
			up, down := best, best
			up[k] += h
			down[k] -= h
			ru, rd := res(up), res(down)
			cols[k] = make([]float64, len(r))
			for i := range r {
				cols[k][i] = (ru[i] - rd[i]) / (2 * h)
			}
		}
		for i := range r {
			for k := range 2 {
				jtr[k] += cols[k][i] * r[i]
				for l := range 2 {
					jtj[k][l] += cols[k][i] * cols[l][i]
				}
			}
		}
		improved := false
		for !improved && lambda < 1e12 {
			a11, a22, a12 := jtj[0][0]*(1+lambda), jtj[1][1]*(1+lambda), jtj[0][1]
			det := a11*a22 - a12*a12
			if det == 0 {
				lambda *= 10
				continue
			}
			step := [2]float64{-(a22*jtr[0] - a12*jtr[1]) / det, -(a11*jtr[1] - a12*jtr[0]) / det}
			next := [2]float64{clamp(best[0] + step[0]), clamp(best[1] + step[1])}
			if c := cost(next); c < bestCost {
				moved := math.Hypot(next[0]-best[0], next[1]-best[1])
				best, bestCost, improved = next, c, true
				lambda = max(lambda/10, 1e-12)
				if moved < 1e-12 {
					return math.Pow(10, best[0]), math.Pow(10, best[1])
				}
			} else {
				lambda *= 10
			}
		}
		if !improved {
			break
		}
	}
	// A pattern search polishes the point: it settles a rate that the
	// figures push against the search's edge, where a clamped
	// Levenberg–Marquardt step stops short.
	for step, n := 0.01, 0; step > 1e-9 && n < 20_000; n++ {
		moved := false
		for _, d := range [][2]float64{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			next := [2]float64{clamp(best[0] + d[0]*step), clamp(best[1] + d[1]*step)}
			if c := cost(next); c < bestCost {
				best, bestCost, moved = next, c, true
			}
		}
		if !moved {
			step /= 2
		}
	}
	return math.Pow(10, best[0]), math.Pow(10, best[1])
}

// roundSig rounds v to n significant figures.
func roundSig(v float64, n int) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}
