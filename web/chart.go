package web

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"agentloop/views"
)

// chartBox is a line chart's size and margins around its plot area, in
// SVG units.
type chartBox struct {
	w, h, left, right, top, bottom float64
}

// frame lays out a chart whose y axis runs from lo (bottom) to hi (top),
// with a labelled tick every unit, or every two units when more than six
// would crowd it. It returns the frame, and where a value stands on y and
// where a fraction (0 to 1) of the width stands on x.
func (b chartBox) frame(lo, hi, unit float64, label func(float64) string) (f views.ChartFrame, x, y func(float64) float64) {
	x = func(frac float64) float64 { return b.left + frac*(b.w-b.left-b.right) }
	y = func(v float64) float64 { return b.top + (hi-v)/(hi-lo)*(b.h-b.top-b.bottom) }
	f = views.ChartFrame{W: b.w, H: b.h, X0: b.left, X1: b.w - b.right, Y0: b.top, Y1: b.h - b.bottom}
	step := unit
	if hi-lo > 6*unit {
		step = 2 * unit
	}
	for v := lo; v <= hi+unit*1e-9; v += step {
		f.YTicks = append(f.YTicks, views.ChartTick{At: y(v), Label: label(v)})
	}
	return f, x, y
}

// polyline is an SVG polyline's points attribute.
func polyline(xs, ys []float64) string {
	parts := make([]string, len(xs))
	for i := range xs {
		parts[i] = strconv.FormatFloat(xs[i], 'f', 1, 64) + "," + strconv.FormatFloat(ys[i], 'f', 1, 64)
	}
	return strings.Join(parts, " ")
}

// chartSeries is how many series app.css gives a colour and dash of
// their own (.series-0 to .series-7).
const chartSeries = 8

// endLabelIndent is how far right of the plot an end label starts: room
// for the leader from the line's end.
const endLabelIndent = 22

// endLabelGap is the height one end label takes, in SVG units (14-unit
// text and a little air).
const endLabelGap = 17

// endLabels writes each series' name at its line's right end, x units
// right of the plot: labels whose ends lie closer than endLabelGap are
// spread apart around their middle, and kept between top and bottom.
func endLabels(labels []*views.EndLabel, x, top, bottom float64) {
	want := make([]float64, len(labels))
	for i, l := range labels {
		want[i] = l.EndY
	}
	for i, y := range spreadLabels(want, endLabelGap, top, bottom) {
		labels[i].LabelX, labels[i].LabelY = x, y
	}
}

// spreadLabels places labels wanted at the y positions given (in any
// order) at least gap apart: labels that would collide form a run centred
// on their wanted positions' mean, and a run that would leave [top,
// bottom] is moved back inside. It returns each label's y, in the order
// given.
func spreadLabels(want []float64, gap, top, bottom float64) []float64 {
	order := make([]int, len(want))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(want[a], want[b]) })
	type run struct {
		first, n int     // in order
		sum      float64 // of the wanted positions
	}
	start := func(r run) float64 {
		s := r.sum/float64(r.n) - float64(r.n-1)*gap/2
		return max(top, min(s, bottom-float64(r.n-1)*gap))
	}
	var runs []run
	for i, idx := range order {
		r := run{first: i, n: 1, sum: want[idx]}
		// Merge with the run above while they overlap.
		for len(runs) > 0 {
			prev := runs[len(runs)-1]
			if start(prev)+float64(prev.n)*gap <= start(r) {
				break
			}
			runs = runs[:len(runs)-1]
			r = run{first: prev.first, n: prev.n + r.n, sum: prev.sum + r.sum}
		}
		runs = append(runs, r)
	}
	out := make([]float64, len(want))
	for _, r := range runs {
		s := start(r)
		for k := 0; k < r.n; k++ {
			out[order[r.first+k]] = s + float64(k)*gap
		}
	}
	return out
}
