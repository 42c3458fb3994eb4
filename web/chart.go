package web

import (
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
