package inference

import (
	"sync"
	"sync/atomic"
	"time"
)

// MinTick is the shortest sleep of the scheduler loop. Tokens that fall due
// within one tick are released together, so the loop wakes at most about
// 1/MinTick times per second however many streams decode.
const MinTick = time.Millisecond

// Job is one generation to run on the simulated accelerator.
type Job struct {
	Profile       Profile
	PrefillTokens int    // uncached prompt tokens to prefill
	OutputTokens  int    // tokens this generation emits, decided by the policy beforehand
	JitterSeed    uint64 // hash of (seed, response context), see JitterSeed
	// Resumed marks a later segment of a paused response (the WebSocket
	// prototype): sampling was blocked, not restarted, so prefill pays for
	// PrefillTokens (the appended tokens) but not the profile's BaseTTFT.
	Resumed bool
	// Hold keeps the generation's batch slot after its last token: it
	// stays in the batch, paused (neither decoding nor slowing the others),
	// until Resume hands the slot to the next segment or Release frees it.
	Hold bool
	// ReasoningTokens are the first of OutputTokens: the reasoning the
	// model does before its output. They decode like any other token;
	// GenerationTimings.ReasoningDone marks their end.
	ReasoningTokens int
}

// GenerationTimings are the moments a generation reached each phase, read
// from the scheduler's clock when it acted: a token is released up to about
// MinTick after it fell due. A field stays zero until its phase is reached.
// The trace's modelled spans are queue = Admitted-Submitted, prefill =
// FirstToken-Admitted and generate = LastToken-FirstToken.
type GenerationTimings struct {
	Submitted  time.Time // Submit was called
	Admitted   time.Time // left the queue and took a batch slot
	FirstToken time.Time // prefill ended; the first token (if any) was released
	LastToken  time.Time // the latest release of tokens
	// ReasoningDone is when the last of Job.ReasoningTokens was released:
	// the trace's reasoning span is FirstToken-ReasoningDone, and generate
	// follows it.
	ReasoningDone time.Time
}

type phase uint8

const (
	phaseQueued phase = iota
	phasePrefill
	phaseDecode
	phaseDone
	phaseHeld // finished, but keeping its batch slot (Job.Hold)
)

// Generation is a job in flight. Its tokens are released on the scheduler's
// clock whether or not anyone reads them: the consumer polls Released when
// Ready fires and sends what it has not sent yet, coalesced.
type Generation struct {
	sched *Scheduler
	job   Job
	ready chan struct{}

	released  atomic.Int64
	done      atomic.Bool
	cancelled atomic.Bool

	// Guarded by sched.mu.
	acc         *accelerator
	phase       phase
	slot        int           // index in acc.active while admitted
	prefillTime time.Duration // modelled prefill, jitter applied
	baseRate    float64       // jittered light-batch decode rate; 0 = instant
	prefillEnd  time.Time
	progress    float64 // tokens decoded after the first, fractional
	lastAdvance time.Time
	timings     GenerationTimings
}

// accelerator is the batch of one profile: jobs with equal Profiles share it.
type accelerator struct {
	profile Profile
	active  []*Generation // admitted: prefilling, decoding or held
	queue   []*Generation // FIFO of jobs waiting for a slot
	held    int           // active generations paused in their slot (Job.Hold)
}

func (a *accelerator) hasRoom() bool {
	return a.profile.MaxBatch <= 0 || len(a.active) < a.profile.MaxBatch
}

// slowdown is the factor applied to every stream's decode rate for the
// current batch size.
func (a *accelerator) slowdown() float64 {
	p := a.profile
	if p.MaxBatch <= 0 || p.BatchSlowdown <= 0 {
		return 1
	}
	// A held slot keeps its place (its KV cache) but does no decode work.
	load := float64(min(len(a.active)-a.held, p.MaxBatch)) / float64(p.MaxBatch)
	return max(1-p.BatchSlowdown*load, 0.05)
}

func (a *accelerator) removeActive(g *Generation) {
	last := len(a.active) - 1
	moved := a.active[last]
	a.active[g.slot] = moved
	moved.slot = g.slot
	a.active[last] = nil
	a.active = a.active[:last]
}

func (a *accelerator) removeQueued(g *Generation) {
	for i, q := range a.queue {
		if q == g {
			copy(a.queue[i:], a.queue[i+1:])
			a.queue[len(a.queue)-1] = nil
			a.queue = a.queue[:len(a.queue)-1]
			return
		}
	}
}

// Scheduler is the simulated accelerator: one loop goroutine that paces the
// tokens of every live generation against the monotonic clock, with
// continuous batching per profile. It holds one timer and wakes at the
// earliest due time across all streams (at least MinTick apart).
type Scheduler struct {
	mu      sync.Mutex
	accels  map[Profile]*accelerator
	nextDue time.Time // earliest due time across streams; zero when idle
	closed  bool

	wake      chan struct{} // 1-buffered: the schedule changed
	quit      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
}

// NewScheduler starts a scheduler's loop. Close stops it.
func NewScheduler() *Scheduler {
	s := newScheduler()
	go s.run()
	return s
}

// newScheduler returns a scheduler without its loop: tests drive it with
// their own clock through submitAt, cancelAt and advanceLocked.
func newScheduler() *Scheduler {
	return &Scheduler{
		accels:  make(map[Profile]*accelerator),
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
}

func (s *Scheduler) run() {
	defer close(s.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-s.quit:
			timer.Stop()
			return
		case <-s.wake:
		case <-timer.C:
		}
		s.mu.Lock()
		now := time.Now()
		s.advanceLocked(now)
		next := s.nextDue
		s.mu.Unlock()
		if next.IsZero() {
			timer.Stop()
			continue
		}
		timer.Reset(max(next.Sub(now), MinTick))
	}
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Submit queues job and returns its generation. It never blocks: a job
// beyond its accelerator's batch waits in a FIFO queue. A job whose costs are
// all zero (the instant profile, or see Profile.Unmodelled) has all its tokens
// due at admission, and the scheduler pass that admits it releases them at
// once: with a free slot, it is complete when Submit returns.
func (s *Scheduler) Submit(job Job) *Generation {
	g := s.submitAt(job, time.Now())
	s.poke()
	return g
}

func (s *Scheduler) submitAt(job Job, now time.Time) *Generation {
	job.Profile = job.Profile.sanitized()
	g := &Generation{
		sched:       s,
		job:         job,
		ready:       make(chan struct{}, 1),
		prefillTime: job.Prefill(),
		baseRate:    job.DecodeRate(0),
	}
	g.timings.Submitted = now
	s.mu.Lock()
	if s.closed {
		g.endLocked(now, true)
		s.mu.Unlock()
		return g
	}
	acc := s.accels[job.Profile]
	if acc == nil {
		acc = &accelerator{profile: job.Profile}
		s.accels[job.Profile] = acc
	}
	g.acc = acc
	acc.queue = append(acc.queue, g)
	// One pass integrates the running streams at the batch size they had
	// until now, then admits the new job if there is room.
	s.advanceLocked(now)
	s.mu.Unlock()
	return g
}

// Close stops the loop. Generations still queued or running end cancelled.
func (s *Scheduler) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		now := time.Now()
		for _, acc := range s.accels {
			for _, g := range acc.active {
				g.endLocked(now, true)
			}
			for _, g := range acc.queue {
				g.endLocked(now, true)
			}
		}
		clear(s.accels)
		s.nextDue = time.Time{}
		s.mu.Unlock()
		close(s.quit)
		<-s.stopped
	})
}

// Slots is one profile's batch at a moment: its slots running a generation
// (prefilling or decoding), its slots held by a paused one (Job.Hold), and
// the jobs waiting for a slot.
type Slots struct {
	Profile string
	Running int
	Held    int
	Queued  int
}

// SlotsByProfile returns every profile's batch that has a slot taken or a
// job waiting, in no particular order.
func (s *Scheduler) SlotsByProfile() []Slots {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Slots, 0, len(s.accels))
	for _, acc := range s.accels {
		out = append(out, Slots{Profile: acc.profile.Name, Running: len(acc.active) - acc.held, Held: acc.held,
			Queued: len(acc.queue)})
	}
	return out
}

// Active returns how many generations hold a batch slot (prefilling or
// decoding) and how many wait in queues, across all profiles.
func (s *Scheduler) Active() (decoding, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, acc := range s.accels {
		decoding += len(acc.active)
		queued += len(acc.queue)
	}
	return decoding, queued
}

// advanceLocked releases every token due by now, admits queued jobs into
// free slots and recomputes the earliest due time.
func (s *Scheduler) advanceLocked(now time.Time) {
	var next time.Time
	for key, acc := range s.accels {
		s.advanceAccelerator(acc, now, &next)
		if len(acc.active) == 0 && len(acc.queue) == 0 {
			delete(s.accels, key)
		}
	}
	s.nextDue = next
}

func (s *Scheduler) advanceAccelerator(acc *accelerator, now time.Time, next *time.Time) {
	factor := acc.slowdown()
	for i := 0; i < len(acc.active); {
		g := acc.active[i]
		if g.phase == phaseHeld {
			i++
			continue
		}
		due, finished := g.stepLocked(now, factor)
		if finished && !acc.keep(g) {
			acc.removeActive(g) // moves the last stream to i, which is stepped next
			continue
		}
		if !finished {
			earliest(next, due)
		}
		i++
	}
	for acc.hasRoom() && len(acc.queue) > 0 {
		g := acc.queue[0]
		acc.queue[0] = nil
		acc.queue = acc.queue[1:]
		if len(acc.queue) == 0 {
			acc.queue = nil // let the backing array go
		}
		g.phase = phasePrefill
		g.timings.Admitted = now
		g.prefillEnd = now.Add(g.prefillTime)
		g.slot = len(acc.active)
		acc.active = append(acc.active, g)
		g.notify()
		if due, finished := g.stepLocked(now, acc.slowdown()); !finished {
			earliest(next, due)
		} else if !acc.keep(g) {
			acc.removeActive(g)
		}
	}
}

// keep turns a generation that has just finished into a held slot when its
// job asked for it, and reports whether it stays in the batch.
func (a *accelerator) keep(g *Generation) bool {
	if !g.job.Hold || g.cancelled.Load() {
		return false
	}
	g.phase = phaseHeld
	a.held++
	return true
}

func earliest(next *time.Time, due time.Time) {
	if next.IsZero() || due.Before(*next) {
		*next = due
	}
}

// stepLocked moves g forward to now. It returns when g next has something due,
// or finished when g released its last token.
func (g *Generation) stepLocked(now time.Time, factor float64) (due time.Time, finished bool) {
	total := g.job.OutputTokens
	switch g.phase {
	case phasePrefill:
		if now.Before(g.prefillEnd) {
			return g.prefillEnd, false
		}
		g.phase = phaseDecode
		g.timings.FirstToken = now
		g.lastAdvance = g.prefillEnd // decode runs on the model's clock from the end of prefill
		if total <= 0 {
			g.endLocked(now, false)
			return time.Time{}, true
		}
		g.releaseLocked(1, now)
		fallthrough
	case phaseDecode:
		rate := g.baseRate * factor
		if rate <= 0 {
			g.releaseLocked(total, now)
			g.endLocked(now, false)
			return time.Time{}, true
		}
		if dt := now.Sub(g.lastAdvance); dt > 0 {
			g.progress += rate * dt.Seconds()
			g.lastAdvance = now
		}
		if g.progress >= float64(total-1) {
			g.releaseLocked(total, now)
			g.endLocked(now, false)
			return time.Time{}, true
		}
		n := 1 + int(g.progress)
		if int64(n) > g.released.Load() {
			g.releaseLocked(n, now)
		}
		wait := (float64(n) - g.progress) / rate // until progress reaches n: token n+1
		return now.Add(time.Duration(wait*float64(time.Second)) + 1), false
	}
	return time.Time{}, false
}

func (g *Generation) releaseLocked(n int, now time.Time) {
	g.released.Store(int64(n))
	g.timings.LastToken = now
	if r := g.job.ReasoningTokens; r > 0 && n >= r && g.timings.ReasoningDone.IsZero() {
		g.timings.ReasoningDone = now
	}
	g.notify()
}

// endLocked finishes g, completed or cancelled. The caller removes it from its
// accelerator.
func (g *Generation) endLocked(now time.Time, cancelled bool) {
	if g.phase == phaseDone {
		return
	}
	g.phase = phaseDone
	if cancelled {
		g.cancelled.Store(true)
	}
	if g.timings.FirstToken.IsZero() && !cancelled {
		g.timings.FirstToken = now
	}
	g.done.Store(true)
	g.notify()
}

func (g *Generation) notify() {
	select {
	case g.ready <- struct{}{}:
	default:
	}
}

// Ready fires (1-buffered, so signals coalesce) when tokens were released or
// the phase changed, at least at the first token and at the end. The consumer
// drains it at its own pace.
func (g *Generation) Ready() <-chan struct{} { return g.ready }

// Released returns how many tokens have been released so far. It only grows.
func (g *Generation) Released() int { return int(g.released.Load()) }

// Done reports whether all tokens were released or the generation was
// cancelled.
func (g *Generation) Done() bool { return g.done.Load() }

// Cancelled reports whether the generation ended before releasing all its
// tokens (Cancel or Scheduler.Close).
func (g *Generation) Cancelled() bool { return g.cancelled.Load() }

// Job returns the job the generation runs.
func (g *Generation) Job() Job { return g.job }

// Timings returns the moments the generation reached each phase so far.
func (g *Generation) Timings() GenerationTimings {
	g.sched.mu.Lock()
	defer g.sched.mu.Unlock()
	return g.timings
}

// Cancel ends the generation now and frees its batch slot, so the next queued
// job is admitted at once. It is for a consumer that went away; calling it on
// a finished generation does nothing.
func (g *Generation) Cancel() {
	g.cancelAt(time.Now())
	g.sched.poke()
}

func (g *Generation) cancelAt(now time.Time) {
	s := g.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.phase == phaseDone {
		return
	}
	if g.phase == phaseHeld {
		g.releaseSlotLocked(now)
		return
	}
	s.advanceLocked(now) // the others decoded at the old batch size until now
	if g.phase != phaseDone {
		acc := g.acc
		if g.phase == phaseQueued {
			acc.removeQueued(g)
		} else {
			acc.removeActive(g)
		}
		g.endLocked(now, true)
		s.advanceLocked(now) // admit the next queued job into the freed slot
	}
}

// Release frees the batch slot a held generation (Job.Hold) kept. On a
// finished generation it does nothing, and on a running one it does what
// Cancel does, so a caller may call it however the generation ended.
func (g *Generation) Release() { g.Cancel() }

// releaseSlotLocked frees a held slot and admits the next queued job.
func (g *Generation) releaseSlotLocked(now time.Time) {
	s := g.sched
	s.advanceLocked(now)
	g.acc.removeActive(g)
	g.acc.held--
	g.phase = phaseDone
	s.advanceLocked(now)
}

// Resume runs job as the next segment of the paused response whose last
// segment is held: the new generation takes held's batch slot at once,
// without queueing. When held no longer holds a slot (nil, released, or
// another profile), job is submitted as usual.
func (s *Scheduler) Resume(held *Generation, job Job) *Generation {
	now := time.Now()
	job.Profile = job.Profile.sanitized()
	s.mu.Lock()
	if held == nil || held.sched != s || held.phase != phaseHeld || held.acc.profile != job.Profile || s.closed {
		s.mu.Unlock()
		if held != nil {
			held.Release()
		}
		return s.Submit(job)
	}
	s.advanceLocked(now) // the others decoded at the old batch size until now
	acc := held.acc
	g := &Generation{sched: s, job: job, ready: make(chan struct{}, 1), prefillTime: job.Prefill(),
		baseRate: job.DecodeRate(0), acc: acc, phase: phasePrefill, slot: held.slot}
	g.timings.Submitted, g.timings.Admitted = now, now
	g.prefillEnd = now.Add(g.prefillTime)
	acc.active[held.slot] = g
	acc.held--
	held.phase = phaseDone
	g.notify()
	var next time.Time
	if due, finished := g.stepLocked(now, acc.slowdown()); !finished {
		earliest(&next, due)
	} else if !acc.keep(g) {
		acc.removeActive(g)
	}
	if !next.IsZero() && (s.nextDue.IsZero() || next.Before(s.nextDue)) {
		s.nextDue = next
	}
	s.mu.Unlock()
	s.poke()
	return g
}
