package inference

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/internal/wait"
)

// quickProfile decodes fast enough that tests finish in milliseconds while
// still going through queue, prefill and paced decode.
func quickProfile(name string, maxBatch int) Profile {
	return Profile{Name: name, DecodeTPS: 20000, PrefillTPS: 1e6, BaseTTFT: time.Millisecond, MaxBatch: maxBatch, BatchSlowdown: 0.2, Jitter: 0.05}
}

// slowProfile never finishes within a test; tests cancel its jobs.
func slowProfile(name string, maxBatch int) Profile {
	return Profile{Name: name, DecodeTPS: 1, PrefillTPS: 1000, BaseTTFT: time.Millisecond, MaxBatch: maxBatch}
}

// consume reads g like the engine's writer does and returns the released
// counts it observed, failing if g does not finish in time or goes backwards.
func consume(t *testing.T, g *Generation) []int {
	t.Helper()
	deadline := time.After(20 * time.Second)
	var seen []int
	last := 0
	for {
		select {
		case <-g.Ready():
		case <-deadline:
			t.Fatalf("generation not done: released %d of %d", g.Released(), g.Job().OutputTokens)
		}
		n := g.Released()
		if n < last {
			t.Fatalf("released went backwards: %d after %d", n, last)
		}
		if n > last {
			seen = append(seen, n)
			last = n
		}
		if g.Done() {
			if n := g.Released(); n > last {
				seen = append(seen, n)
			}
			return seen
		}
	}
}

func TestSchedulerReleasesEveryToken(t *testing.T) {
	s := NewScheduler()
	defer s.Close()
	tests := []struct {
		name    string
		profile Profile
		prefill int
		output  int
	}{
		{"no output", quickProfile("q", 4), 100, 0},
		{"one token", quickProfile("q", 4), 100, 1},
		{"paced", quickProfile("q", 4), 1000, 300},
		{"unmodelled", ProfileFor("spark").Unmodelled(), 5000, 50},
		{"instant decode only", Profile{Name: "d", BaseTTFT: time.Millisecond}, 0, 10},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := s.Submit(Job{Profile: tt.profile, PrefillTokens: tt.prefill, OutputTokens: tt.output, JitterSeed: uint64(i)})
			seen := consume(t, g)
			if got := g.Released(); got != tt.output {
				t.Fatalf("released %d, want %d", got, tt.output)
			}
			if g.Cancelled() {
				t.Fatal("finished generation reports cancelled")
			}
			if tt.output > 0 && seen[len(seen)-1] != tt.output {
				t.Fatalf("consumer last saw %d, want %d", seen[len(seen)-1], tt.output)
			}
			tm := g.Timings()
			if tm.Admitted.Before(tm.Submitted) || tm.FirstToken.Before(tm.Admitted) || (tt.output > 0 && tm.LastToken.Before(tm.FirstToken)) {
				t.Fatalf("timings out of order: %+v", tm)
			}
			if tm.Admitted.IsZero() || tm.FirstToken.IsZero() {
				t.Fatalf("phases not recorded: %+v", tm)
			}
		})
	}
	if d, q := s.Active(); d != 0 || q != 0 {
		t.Fatalf("Active() = %d, %d after all finished; want 0, 0", d, q)
	}
}

func TestSchedulerUnmodelledCompletesInSubmit(t *testing.T) {
	s := NewScheduler()
	defer s.Close()
	g := s.Submit(Job{Profile: ProfileFor("burst").Unmodelled(), PrefillTokens: 10000, OutputTokens: 1000})
	if !g.Done() || g.Released() != 1000 {
		t.Fatalf("Done=%v Released=%d right after Submit; want true, 1000", g.Done(), g.Released())
	}
	select {
	case <-g.Ready():
	default:
		t.Fatal("Ready did not fire for a finished generation")
	}
}

// TestSchedulerReleasesInstantJobsAtOnce runs instant jobs from many
// submitters next to a paced stream: each goes through the scheduler and
// releases all its tokens in one step, at the moment it is admitted.
func TestSchedulerReleasesInstantJobsAtOnce(t *testing.T) {
	s := NewScheduler()
	defer s.Close()
	paced := s.Submit(Job{Profile: slowProfile("paced", 4), OutputTokens: 1000})
	defer paced.Cancel()
	instant := ProfileFor(api.ModelInstant)
	const submitters, each, tokens = 8, 25, 1000
	gens := make(chan *Generation, submitters*each)
	var wg sync.WaitGroup
	for w := range submitters {
		wg.Go(func() {
			for i := range each {
				gens <- s.Submit(Job{Profile: instant, PrefillTokens: 50000, OutputTokens: tokens, JitterSeed: uint64(w*each + i)})
			}
		})
	}
	wg.Wait()
	close(gens)
	for g := range gens {
		seen := consume(t, g)
		if g.Cancelled() || g.Released() != tokens || len(seen) != 1 || seen[0] != tokens {
			t.Fatalf("instant job: cancelled %v, released %d, consumer saw %v; want all %d tokens in one release", g.Cancelled(), g.Released(), seen, tokens)
		}
		tm := g.Timings()
		if tm.Admitted != tm.Submitted || tm.FirstToken != tm.Admitted || tm.LastToken != tm.FirstToken {
			t.Fatalf("instant job spent modelled time: %+v", tm)
		}
	}
	// Only the paced stream still holds a slot.
	wait.Until(t, "the instant jobs to leave the batch", func() bool { d, q := s.Active(); return d == 1 && q == 0 })
	if paced.Done() {
		t.Fatal("the paced stream finished early")
	}
}

// TestInstantJobOnModelClock checks on a synthetic clock that an instant job's
// tokens are all due when it is submitted: the clock never moves.
func TestInstantJobOnModelClock(t *testing.T) {
	s := newScheduler()
	t0 := time.Unix(1_000_000, 0)
	for _, n := range []int{0, 1, 4096} {
		g := s.submitAt(Job{Profile: ProfileFor(api.ModelInstant), PrefillTokens: 1 << 20, OutputTokens: n}, t0)
		if !g.Done() || g.Cancelled() || g.Released() != n {
			t.Fatalf("%d tokens at t0: done %v, cancelled %v, released %d", n, g.Done(), g.Cancelled(), g.Released())
		}
		if tm := g.Timings(); !tm.FirstToken.Equal(t0) || (n > 0 && !tm.LastToken.Equal(t0)) {
			t.Fatalf("%d tokens: timings %+v, want every phase at t0", n, tm)
		}
	}
	if d, q := s.Active(); d != 0 || q != 0 || !s.nextDue.IsZero() {
		t.Fatalf("after instant jobs: Active() = %d, %d, next due %v; want an idle scheduler", d, q, s.nextDue)
	}
}

func TestSchedulerAdmitsInSubmissionOrder(t *testing.T) {
	s := NewScheduler()
	defer s.Close()
	p := quickProfile("fifo", 1)
	gens := make([]*Generation, 6)
	for i := range gens {
		gens[i] = s.Submit(Job{Profile: p, PrefillTokens: 10, OutputTokens: 20, JitterSeed: uint64(i)})
	}
	for _, g := range gens {
		consume(t, g)
	}
	for i := 1; i < len(gens); i++ {
		prev, cur := gens[i-1].Timings(), gens[i].Timings()
		if cur.Admitted.Before(prev.LastToken) {
			t.Fatalf("job %d admitted at %v before job %d finished at %v (batch of 1)", i, cur.Admitted, i-1, prev.LastToken)
		}
	}
}

func TestSchedulerCancelFreesSlot(t *testing.T) {
	s := NewScheduler()
	defer s.Close()
	p := slowProfile("slots", 2)
	gens := make([]*Generation, 5)
	for i := range gens {
		gens[i] = s.Submit(Job{Profile: p, OutputTokens: 1000, JitterSeed: uint64(i)})
	}
	admitted := func() []bool {
		out := make([]bool, len(gens))
		for i, g := range gens {
			out[i] = !g.Timings().Admitted.IsZero()
		}
		return out
	}
	steps := []struct {
		cancel       int
		wantAdmitted []bool
		wantActive   [2]int
	}{
		{-1, []bool{true, true, false, false, false}, [2]int{2, 3}},
		{0, []bool{true, true, true, false, false}, [2]int{2, 2}},
		{3, []bool{true, true, true, false, false}, [2]int{2, 1}}, // a queued job leaves the queue
		{2, []bool{true, true, true, false, true}, [2]int{2, 0}},
		{1, []bool{true, true, true, false, true}, [2]int{1, 0}},
	}
	for _, st := range steps {
		if st.cancel >= 0 {
			g := gens[st.cancel]
			g.Cancel()
			if !g.Done() || !g.Cancelled() {
				t.Fatalf("job %d: Done=%v Cancelled=%v after Cancel", st.cancel, g.Done(), g.Cancelled())
			}
		}
		got := admitted()
		for i := range got {
			if got[i] != st.wantAdmitted[i] {
				t.Fatalf("after cancelling %d: admitted = %v, want %v", st.cancel, got, st.wantAdmitted)
			}
		}
		if d, q := s.Active(); d != st.wantActive[0] || q != st.wantActive[1] {
			t.Fatalf("after cancelling %d: Active() = %d, %d; want %v", st.cancel, d, q, st.wantActive)
		}
	}
	gens[3].Cancel() // cancelling twice does nothing
	if !gens[3].Timings().Admitted.IsZero() {
		t.Fatal("a cancelled queued job was admitted")
	}
}

func TestSchedulerNoGoroutinePerStream(t *testing.T) {
	s := NewScheduler()
	before := runtime.NumGoroutine()
	gens := make([]*Generation, 500)
	for i := range gens {
		gens[i] = s.Submit(Job{Profile: slowProfile("many", 1024), PrefillTokens: 100, OutputTokens: 100, JitterSeed: uint64(i)})
	}
	wait.Until(t, "first tokens", func() bool { return gens[len(gens)-1].Released() >= 1 })
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Fatalf("goroutines grew from %d to %d with 500 streams", before, after)
	}
	if d, q := s.Active(); d != 500 || q != 0 {
		t.Fatalf("Active() = %d, %d; want 500, 0", d, q)
	}
	s.Close()
	for i, g := range gens {
		if !g.Done() || !g.Cancelled() {
			t.Fatalf("stream %d: Done=%v Cancelled=%v after Close", i, g.Done(), g.Cancelled())
		}
	}
	if g := s.Submit(Job{Profile: quickProfile("late", 1), OutputTokens: 5}); !g.Done() || !g.Cancelled() {
		t.Fatal("Submit after Close did not return a cancelled generation")
	}
}

func TestSchedulerProfilesHaveSeparateBatches(t *testing.T) {
	s := NewScheduler()
	defer s.Close()
	a := s.Submit(Job{Profile: slowProfile("a", 1), OutputTokens: 100})
	b := s.Submit(Job{Profile: slowProfile("b", 1), OutputTokens: 100})
	c := s.Submit(Job{Profile: slowProfile("a", 1), OutputTokens: 100})
	if b.Timings().Admitted.IsZero() {
		t.Fatal("a job of another profile waited behind a full batch")
	}
	if !c.Timings().Admitted.IsZero() {
		t.Fatal("a job beyond its profile's batch was admitted")
	}
	a.Cancel()
	if c.Timings().Admitted.IsZero() {
		t.Fatal("queued job not admitted after the slot was freed")
	}
}

func TestJitterIsDeterministic(t *testing.T) {
	for _, p := range Profiles() {
		if p.Name == api.ModelInstant {
			continue // models no time; see TestInstantProfileModelsNoTime
		}
		t.Run(p.Name, func(t *testing.T) {
			job := func(seed uint64) Job { return Job{Profile: p, PrefillTokens: 4000, OutputTokens: 10, JitterSeed: seed} }
			nominalPrefill := float64(p.BaseTTFT) + 4000/p.PrefillTPS*float64(time.Second)
			distinct := map[time.Duration]bool{}
			for seed := range uint64(50) {
				a, b := job(seed), job(seed)
				if a.Prefill() != b.Prefill() || a.DecodeRate(1) != b.DecodeRate(1) {
					t.Fatalf("seed %d: two draws differ", seed)
				}
				pf := float64(a.Prefill())
				if pf < nominalPrefill*(1-p.Jitter)-1 || pf > nominalPrefill*(1+p.Jitter)+1 {
					t.Fatalf("seed %d: prefill %v outside ±%.0f%% of %v", seed, a.Prefill(), p.Jitter*100, time.Duration(nominalPrefill))
				}
				r := a.DecodeRate(1)
				if r < p.DecodeTPS*(1-p.Jitter)*(1-p.BatchSlowdown) || r > p.DecodeTPS*(1+p.Jitter) {
					t.Fatalf("seed %d: decode rate %.1f outside the jitter band of %.1f", seed, r, p.DecodeTPS)
				}
				distinct[a.Prefill()] = true
			}
			if len(distinct) < 40 {
				t.Fatalf("only %d distinct prefill times over 50 seeds", len(distinct))
			}
		})
	}
	if JitterSeed(7, "resp_1") != JitterSeed(7, "resp_1") || JitterSeed(7, "resp_1") == JitterSeed(8, "resp_1") || JitterSeed(7, "a", "b") == JitterSeed(7, "ab") {
		t.Fatal("JitterSeed is not a function of its seed and context parts")
	}
}

func TestDecodeRateUnderLoad(t *testing.T) {
	tests := []struct {
		profile   string
		active    int
		wantRatio float64 // of the light-batch rate
	}{
		{"classic", 64, 0.7},
		{"classic", 32, 0.85},
		{"classic", 640, 0.7}, // beyond the batch, jobs queue; the rate stops falling
		{"spark", 512, 1},
		{"burst", 256, 0.85},
	}
	for _, tt := range tests {
		job := Job{Profile: ProfileFor(tt.profile), JitterSeed: 42}
		got := job.DecodeRate(tt.active) / job.DecodeRate(0)
		if got < tt.wantRatio-1e-9 || got > tt.wantRatio+1e-9 {
			t.Errorf("%s with %d active: rate ratio %.4f, want %.4f", tt.profile, tt.active, got, tt.wantRatio)
		}
	}
	if r := (Job{Profile: ProfileFor("spark").Unmodelled()}).DecodeRate(1); r != 0 {
		t.Errorf("unmodelled decode rate = %v, want 0 (instant)", r)
	}
}

// A held generation keeps its slot after its last token: a job queued
// behind it waits until the response resumes in that slot and ends.
func TestHeldSlotResumes(t *testing.T) {
	s := NewScheduler()
	defer s.Close()
	p := quickProfile("held", 1)
	a := s.Submit(Job{Profile: p, OutputTokens: 3, Hold: true})
	consume(t, a)
	other := s.Submit(Job{Profile: p, OutputTokens: 2})
	// The slot stays taken while the response is paused.
	wait.Until(t, "the other job queued", func() bool { d, q := s.Active(); return d == 1 && q == 1 })
	if other.Done() || !other.Timings().Admitted.IsZero() {
		t.Fatal("a job was admitted into a held slot")
	}
	b := s.Resume(a, Job{Profile: p, PrefillTokens: 10, OutputTokens: 3, Resumed: true})
	if b.Timings().Admitted.IsZero() {
		t.Fatal("the resumed segment queued instead of taking the held slot")
	}
	if got := consume(t, b); got[len(got)-1] != 3 {
		t.Fatalf("resumed segment released %v", got)
	}
	consume(t, other)
	if other.Cancelled() {
		t.Fatal("the queued job was cancelled")
	}
}

// Releasing a held slot admits the next job.
func TestHeldSlotRelease(t *testing.T) {
	s := NewScheduler()
	defer s.Close()
	p := quickProfile("release", 1)
	a := s.Submit(Job{Profile: p, OutputTokens: 2, Hold: true})
	consume(t, a)
	other := s.Submit(Job{Profile: p, OutputTokens: 2})
	wait.Until(t, "the other job queued", func() bool { _, q := s.Active(); return q == 1 })
	a.Release()
	consume(t, other)
	if d, q := s.Active(); d != 0 || q != 0 {
		t.Fatalf("after release: %d active, %d queued", d, q)
	}
}

// A resumed segment does not pay the base time to first token again.
func TestResumedJobSkipsBaseTTFT(t *testing.T) {
	p := Profile{BaseTTFT: time.Second, PrefillTPS: 1000}
	if got := (Job{Profile: p, PrefillTokens: 100, Resumed: true}).Prefill(); got != 100*time.Millisecond {
		t.Fatalf("resumed prefill %v, want 100ms", got)
	}
	if got := (Job{Profile: p, PrefillTokens: 100}).Prefill(); got != 1100*time.Millisecond {
		t.Fatalf("prefill %v, want 1.1s", got)
	}
}
