package inference

import (
	"math"
	"testing"
	"time"
)

// TestSchedulerPacesOnModelClock drives the scheduler with a synthetic clock
// (no loop, no sleeping) and checks prefill, decode pacing, the batch-size
// rate and FIFO admission exactly.
func TestSchedulerPacesOnModelClock(t *testing.T) {
	p := Profile{Name: "clock", DecodeTPS: 1000, BaseTTFT: 10 * time.Millisecond, MaxBatch: 2, BatchSlowdown: 0.5}
	s := newScheduler()
	t0 := time.Unix(1_000_000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	advance := func(ms float64) {
		s.mu.Lock()
		s.advanceLocked(at(ms))
		s.mu.Unlock()
	}
	job := Job{Profile: p, OutputTokens: 100}
	g1 := s.submitAt(job, at(0))
	var g2, g3 *Generation

	steps := []struct {
		ms     float64
		do     func()
		want   [3]int // released by g1, g2, g3
		active [2]int
	}{
		{5, nil, [3]int{0, 0, 0}, [2]int{1, 0}},   // prefill (10 ms of base TTFT)
		{10, nil, [3]int{1, 0, 0}, [2]int{1, 0}},  // first token at the end of prefill
		{30, nil, [3]int{16, 0, 0}, [2]int{1, 0}}, // 20 ms at 750 tok/s (half the batch: -25 %)
		{30, func() { g2 = s.submitAt(job, at(30)) }, [3]int{16, 0, 0}, [2]int{2, 0}},
		{50, nil, [3]int{26, 6, 0}, [2]int{2, 0}}, // full batch: 500 tok/s each; g2 decodes from 40 ms
		{50, func() { g3 = s.submitAt(job, at(50)) }, [3]int{26, 6, 0}, [2]int{2, 1}},
		{60, func() { g2.cancelAt(at(60)) }, [3]int{31, 11, 0}, [2]int{2, 0}}, // g3 takes g2's slot
		{75, nil, [3]int{38, 11, 3}, [2]int{2, 0}},                            // g3's prefill ended at 70 ms; decode runs from there
		{500, nil, [3]int{100, 11, 100}, [2]int{0, 0}},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
		} else {
			advance(st.ms)
		}
		got := [3]int{g1.Released()}
		if g2 != nil {
			got[1] = g2.Released()
		}
		if g3 != nil {
			got[2] = g3.Released()
		}
		if got != st.want {
			t.Fatalf("at %v ms: released %v, want %v", st.ms, got, st.want)
		}
		if d, q := s.Active(); d != st.active[0] || q != st.active[1] {
			t.Fatalf("at %v ms: Active() = %d, %d; want %v", st.ms, d, q, st.active)
		}
	}
	if !g1.Done() || g1.Cancelled() || !g2.Cancelled() || !g3.Done() {
		t.Fatalf("end states: g1 done=%v cancelled=%v, g2 cancelled=%v, g3 done=%v", g1.Done(), g1.Cancelled(), g2.Cancelled(), g3.Done())
	}
	// Timings record when things were released, here when the clock was
	// advanced: the first token due at 70 ms went out at 75 ms.
	if tm := g3.Timings(); !tm.Admitted.Equal(at(60)) || !tm.FirstToken.Equal(at(75)) || !tm.LastToken.Equal(at(500)) {
		t.Fatalf("g3 timings %v, %v, %v; want 60, 75 and 500 ms", tm.Admitted.Sub(t0), tm.FirstToken.Sub(t0), tm.LastToken.Sub(t0))
	}
}

// TestSchedulerNextDue checks that the loop would wake when the next token
// is due, not on a fixed tick.
func TestSchedulerNextDue(t *testing.T) {
	s := newScheduler()
	t0 := time.Unix(2_000_000, 0)
	p := Profile{Name: "due", DecodeTPS: 100, BaseTTFT: 20 * time.Millisecond}
	s.submitAt(Job{Profile: p, OutputTokens: 10}, t0)
	s.submitAt(Job{Profile: p, OutputTokens: 10}, t0.Add(5*time.Millisecond))
	tests := []struct {
		now, wantDue time.Duration
	}{
		{5 * time.Millisecond, 20 * time.Millisecond},  // the first prefill ends
		{20 * time.Millisecond, 25 * time.Millisecond}, // the second prefill ends before the first's token 2 (30 ms)
		{25 * time.Millisecond, 30 * time.Millisecond},
		{31 * time.Millisecond, 35 * time.Millisecond},
	}
	for _, tt := range tests {
		s.mu.Lock()
		s.advanceLocked(t0.Add(tt.now))
		due := s.nextDue.Sub(t0)
		s.mu.Unlock()
		if math.Abs(float64(due-tt.wantDue)) > float64(time.Microsecond) {
			t.Fatalf("at %v: next due at %v, want %v", tt.now, due, tt.wantDue)
		}
	}
}

// TestReasoningTokensDecodeFirst: a job's reasoning tokens are its first
// tokens, paced like the rest; ReasoningDone is when the last of them was
// released, before the output's.
func TestReasoningTokensDecodeFirst(t *testing.T) {
	p := Profile{Name: "clock", DecodeTPS: 1000, BaseTTFT: 10 * time.Millisecond}
	s := newScheduler()
	t0 := time.Unix(1_000_000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	g := s.submitAt(Job{Profile: p, OutputTokens: 100, ReasoningTokens: 40}, at(0))
	for _, ms := range []float64{10, 30, 48, 49.5, 60, 200} {
		s.mu.Lock()
		s.advanceLocked(at(ms))
		s.mu.Unlock()
		done := g.Timings().ReasoningDone
		if reasoned := g.Released() >= 40; reasoned != !done.IsZero() {
			t.Fatalf("at %v ms: %d released, ReasoningDone %v", ms, g.Released(), done)
		}
	}
	tm := g.Timings()
	// Token 1 at 10 ms, token 40 at 10 + 39 ms; the first advance past it is at 49.5 ms.
	if !tm.ReasoningDone.Equal(at(49.5)) || !tm.FirstToken.Before(tm.ReasoningDone) || !tm.ReasoningDone.Before(tm.LastToken) {
		t.Fatalf("timings %+v: want the reasoning done at 49.5 ms, between the first and the last token", tm)
	}
}
