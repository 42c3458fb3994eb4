package core

import "time"

// tokenGaps counts one response's inter-token gaps in the buckets of the
// inter-token latency histogram. The streamer fills it without locks or
// allocation, one increment per delta; it is merged once per response, so
// the metric costs the hot path nothing shared.
type tokenGaps struct {
	counts [gapBuckets + 1]uint32 // the last counts gaps above every bound
	sum    float64
	n      uint64
}

const gapBuckets = 12

func (g *tokenGaps) zeros(n int) {
	if n > 0 {
		g.counts[0] += uint32(n)
		g.n += uint64(n)
	}
}

// add counts one gap of d, and zeros more of zero.
func (g *tokenGaps) add(d time.Duration, zeros int, bounds []float64) {
	g.zeros(zeros)
	s := d.Seconds()
	i := 0
	for i < len(bounds) && s > bounds[i] {
		i++
	}
	g.counts[i]++
	g.sum += s
	g.n++
}
