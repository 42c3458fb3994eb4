package rollout

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/inference"
	"agentloop/scenario"
	"agentloop/store"
	"agentloop/workload"
)

// ScenarioInfo describes a scenario for pickers and listings.
type ScenarioInfo struct {
	Name, Title, Description string
}

// Scenarios lists every scenario.
func Scenarios() []ScenarioInfo {
	var out []ScenarioInfo
	for _, s := range scenario.All() {
		out = append(out, ScenarioInfo{Name: s.Name, Title: s.Title, Description: s.Description})
	}
	return out
}

// Normalize fills defaults and validates a config for an engine with the
// built-in profiles' context windows. The error is a 400.
func Normalize(cfg *Config) *api.Error { return NormalizeFor(cfg, inference.Windows{}) }

// NormalizeFor is Normalize for an engine that serves windows
// (core.Config.Windows).
func NormalizeFor(cfg *Config, windows inference.Windows) *api.Error {
	if cfg.WorkloadID != "" && cfg.Workload == nil {
		return api.BadRequest("workload_id", api.CodeInvalidValue, "A workload_id is resolved by the run API (POST /api/runs); send the workload itself.")
	}
	if cfg.Workload != nil {
		if err := cfg.Workload.Validate(); err != nil {
			return api.BadRequest("workload", api.CodeInvalidValue, "Invalid 'workload': %s.", strings.TrimPrefix(err.Error(), "workload: "))
		}
		if cfg.Scenario != "" && cfg.Scenario != WorkloadScenario {
			return api.BadRequest("scenario", api.CodeInvalidValue, "A race replays a workload or plays a scenario, not both.")
		}
		cfg.Scenario = WorkloadScenario
		if slices.Contains(cfg.Lanes, LanePrototype) {
			return api.BadRequest("lanes", api.CodeInvalidValue, "The prototype lane does not replay workloads yet: its resumed segments cannot carry a turn's reply.")
		}
		sum := cfg.Workload.Summarize()
		cfg.WorkloadSummary = &sum
	} else if cfg.Scenario == "" {
		cfg.Scenario = scenario.All()[0].Name
	}
	if _, ok := scenario.Lookup(cfg.Scenario); !ok && cfg.Workload == nil {
		var names []string
		for _, s := range Scenarios() {
			names = append(names, s.Name)
		}
		return api.BadRequest("scenario", api.CodeInvalidValue, "Unknown scenario '%s'. Supported values are: %s.", cfg.Scenario, strings.Join(names, ", "))
	}
	if cfg.Profile == "" {
		cfg.Profile = api.DefaultModel
	}
	if !api.IsBuiltinModel(cfg.Profile) {
		return api.BadRequest("profile", api.CodeInvalidValue, "Unknown profile '%s'. Supported values are: %s.", cfg.Profile, strings.Join(api.ModelNames(), ", "))
	}
	if cfg.RTTms < 0 || cfg.RTTms > MaxRTTms {
		return api.BadRequest("rtt_ms", api.CodeInvalidValue, "rtt_ms must be between 0 and %d.", MaxRTTms)
	}
	if cfg.ToolTimeMs < 0 || cfg.ToolTimeMs > MaxToolTimeMs {
		return api.BadRequest("tool_time_ms", api.CodeInvalidValue, "tool_time_ms must be between 0 and %d.", MaxToolTimeMs)
	}
	if cfg.BandwidthKbps != 0 && (cfg.BandwidthKbps < MinBandwidthKbps || cfg.BandwidthKbps > MaxBandwidthKbps) {
		return api.BadRequest("bandwidth_kbps", api.CodeInvalidValue, "bandwidth_kbps must be 0 (unlimited) or from %d to %d: below that a full-history request cannot cross the proxy in time.", MinBandwidthKbps, MaxBandwidthKbps)
	}
	if len(cfg.Lanes) == 0 {
		cfg.Lanes = slices.Clone(DefaultLanes)
	}
	seen := map[string]bool{}
	for _, l := range cfg.Lanes {
		if !slices.Contains(AllLanes, l) {
			return api.BadRequest("lanes", api.CodeInvalidValue, "Unknown lane '%s'. Supported values are: %s.", l, strings.Join(AllLanes, ", "))
		}
		if seen[l] {
			return api.BadRequest("lanes", api.CodeInvalidValue, "Lane '%s' is listed twice.", l)
		}
		seen[l] = true
	}
	if cfg.Stack.Preset == "" {
		cfg.Stack = apistack.Lean
	}
	if err := cfg.Stack.Validate("stack"); err != nil {
		return err
	}
	if cfg.DecodeTPS != 0 {
		if math.IsNaN(cfg.DecodeTPS) || cfg.DecodeTPS < api.MinCustomTPS || cfg.DecodeTPS > api.MaxCustomTPS || cfg.DecodeTPS != math.Trunc(cfg.DecodeTPS) {
			return api.BadRequest("decode_tps", api.CodeInvalidValue, "decode_tps must be a whole number from %d to %d (tokens/s per stream), or 0 for the profile's own rate.",
				api.MinCustomTPS, api.MaxCustomTPS)
		}
		// On the wire it is model custom-<tps>, which runs spark's profile.
		if cfg.Profile != api.ModelSpark {
			return api.BadRequest("decode_tps", api.CodeInvalidValue, "decode_tps needs profile '%s': a custom decode rate runs spark's profile (its prefill and base time to first token) at that rate.", api.ModelSpark)
		}
	}
	if err := checkDrills(cfg); err != nil {
		return err
	}
	if cfg.Reasoning != nil {
		if err := cfg.Reasoning.validate(); err != nil {
			return err
		}
	}
	if err := checkContext(cfg, windows); err != nil {
		return err
	}
	if cfg.Sequential && cfg.TakeTurns {
		return api.BadRequest("take_turns", api.CodeInvalidValue, "take_turns and sequential are two lane orders: set one of them, or neither for lanes together.")
	}
	if cfg.Repeats == 0 {
		cfg.Repeats = 1
	}
	if cfg.Repeats < 1 || cfg.Repeats > MaxRepeats {
		return api.BadRequest("repeats", api.CodeInvalidValue, "repeats must be between 1 and %d.", MaxRepeats)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	return checkWork(cfg)
}

// The limits of a race's config: Normalize refuses what lies outside them,
// and the race form renders them as its fields' min and max.
const (
	MaxRTTms      = 5000  // a modelled round trip, ms
	MaxToolTimeMs = 60000 // a modelled tool time, ms
	MaxRepeats    = 20
	// MinBandwidthKbps is the slowest link a race may model: a
	// full-history request (about 0.4 MB at the largest scenario's end)
	// then still crosses the proxy in a few seconds.
	MinBandwidthKbps = 1000
	MaxBandwidthKbps = 10_000_000
	// MaxDrillTimes is how often one drill of the schedule may fire.
	MaxDrillTimes = 10
	// MaxRaceTurns caps a workload race's work, lanes × repeats × the
	// workload's turns (checkWork): every turn is stored with its spans
	// and read back whole by the run's permalink. It admits 2 lanes × 3
	// repeats of a 1,000-turn workload, and is about 2.7 times the largest
	// scenario race (4 lanes × 20 repeats of about 37 turns).
	MaxRaceTurns = 8000
)

// Race limits of a Runner that starts races in the background (Start).
// The slots are shared between clients (docs/engine.md, "Race slots"):
// one client runs at most DefaultMaxRunningPerClient races at once, fewer
// than the slots, so another client's race starts at once; it queues at
// most DefaultMaxQueuedPerClient more; and a freed slot goes to the
// client served longest ago.
const (
	DefaultMaxRunning          = 2
	DefaultMaxQueued           = 8
	DefaultMaxRunningPerClient = 1
	DefaultMaxQueuedPerClient  = 3
	DefaultTimeLimit           = 30 * time.Minute
)

// Why a race stopped early, as its context's cause.
var (
	errCancelled = errors.New("rollout: the run was cancelled")
	errTimeLimit = errors.New("rollout: the run passed its time limit")
)

// Runner runs races against one engine and stores them.
type Runner struct {
	engineURL string
	db        RunStore
	log       *slog.Logger
	// TLS, when set, is the client config for an engine listener that
	// speaks TLS (engineURL is then https://...).
	TLS *tls.Config
	// APIKey is sent as a Bearer token when the engine requires one.
	APIKey string
	// Replica is the id of the process that runs the races, stored with
	// each run (replicas sharing a store each end only their own).
	Replica string
	// Windows are the engine's context windows, which races are held to
	// (zero: the built-in profiles' own).
	Windows inference.Windows

	// MaxRunning races run at once from Start, and MaxQueued more wait;
	// beyond that Start answers 429. One client runs at most
	// MaxRunningPerClient of them and queues at most MaxQueuedPerClient
	// more (0: no cap of its own). TimeLimit bounds each race's
	// wall-clock time. NewRunner sets the defaults.
	MaxRunning, MaxQueued                   int
	MaxRunningPerClient, MaxQueuedPerClient int
	TimeLimit                               time.Duration

	mu      sync.Mutex
	live    map[string]*race
	order   []*slot // races started with Start and not ended, oldest first
	running int     // how many of them hold a slot
	// served is when each client with live races last got a slot (a
	// count of slots handed out); the next slot goes to the lowest.
	served  map[string]uint64
	handed  uint64
	changed chan struct{} // closed and replaced when a slot changes hands
	wg      sync.WaitGroup
	baseCtx context.Context
	stop    context.CancelFunc

	// engine is the one client of engineDo, built on first use (TLS is
	// set after NewRunner).
	engineOnce sync.Once
	engine     *http.Client
}

// slot is a race started with Start: queued, or running in a slot.
type slot struct {
	id, client string
	running    bool
}

// NewRunner returns a runner for the engine at engineURL (http://host:port).
func NewRunner(engineURL string, db RunStore, log *slog.Logger) *Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{engineURL: strings.TrimRight(engineURL, "/"), db: db, log: log, live: map[string]*race{}, baseCtx: ctx, stop: cancel,
		MaxRunning: DefaultMaxRunning, MaxQueued: DefaultMaxQueued, TimeLimit: DefaultTimeLimit,
		MaxRunningPerClient: DefaultMaxRunningPerClient, MaxQueuedPerClient: DefaultMaxQueuedPerClient,
		served: map[string]uint64{}, changed: make(chan struct{})}
}

// Start validates cfg, stores a queued run for client (who asks: see
// web.Identify) and runs it in the background once a slot is free for it
// (acquire). Past MaxQueued waiting races, or past the client's own
// share, it answers 429. onSnapshot, if set, receives its live snapshots,
// as with Run.
func (r *Runner) Start(client string, cfg Config, onSnapshot func(Snapshot)) (string, error) {
	if err := NormalizeFor(&cfg, r.Windows); err != nil {
		return "", err
	}
	if err := checkDuration(cfg, r.TimeLimit); err != nil {
		return "", err
	}
	s := &slot{client: client}
	r.mu.Lock()
	err := r.admit(client)
	if err == nil {
		r.order = append(r.order, s)
	}
	r.mu.Unlock()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancelCause(r.baseCtx)
	rc, err := r.create(ctx, cfg, onSnapshot)
	if err != nil {
		cancel(nil)
		r.forget(s)
		return "", err
	}
	rc.cancel, rc.slot = cancel, s
	r.mu.Lock()
	s.id = rc.id
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel(nil)
		if !r.acquire(ctx, rc) {
			rc.endUnrun(ctx)
			r.forget(s)
			return
		}
		defer r.forget(s)
		limited, stop := context.WithTimeoutCause(ctx, r.TimeLimit, errTimeLimit)
		defer stop()
		if _, err := rc.run(limited); err != nil && !errors.Is(err, errStopped) {
			r.log.Warn("race failed", "run", rc.id, "err", err)
		}
	}()
	return rc.id, nil
}

// admit refuses a race past the queue, or past client's own share of it,
// with a 429; under mu.
func (r *Runner) admit(client string) error {
	if len(r.order) >= r.MaxRunning+r.MaxQueued {
		return tooManyRaces("%d races are running and %d more are queued, the most this server takes; try again once one ends.", r.MaxRunning, r.MaxQueued)
	}
	if r.MaxQueuedPerClient <= 0 {
		return nil
	}
	running, queued := r.count(client)
	if running+queued >= r.runningShare()+r.MaxQueuedPerClient {
		return tooManyRaces("You have %d races running and %d queued, the most one client may have while others share the server; try again once one ends.", running, queued)
	}
	return nil
}

func tooManyRaces(format string, args ...any) *api.Error {
	e := api.Errorf(http.StatusTooManyRequests, "", api.CodeTooManyRaces, format, args...)
	e.Headers = map[string]string{"Retry-After": "30"}
	return e
}

// runningShare is how many races one client may run at once; under mu.
func (r *Runner) runningShare() int {
	if r.MaxRunningPerClient <= 0 || r.MaxRunningPerClient > r.MaxRunning {
		return r.MaxRunning
	}
	return r.MaxRunningPerClient
}

// count is how many of client's races run and wait; under mu.
func (r *Runner) count(client string) (running, queued int) {
	for _, s := range r.order {
		switch {
		case s.client != client:
		case s.running:
			running++
		default:
			queued++
		}
	}
	return running, queued
}

// next is the queued race that takes the next free slot: of the clients
// running fewer than their share, the one that got a slot longest ago (a
// new client first), and of its races the oldest. nil when none may run;
// under mu.
func (r *Runner) next() *slot {
	var best *slot
	for _, s := range r.order {
		if s.running || s.id == "" {
			continue
		}
		if running, _ := r.count(s.client); running >= r.runningShare() {
			continue
		}
		if best == nil || r.served[s.client] < r.served[best.client] {
			best = s
		}
	}
	return best
}

// acquire waits until a slot is free and rc's race is the next to take
// it, or ctx ends. Meanwhile its snapshot says what it waits behind.
func (r *Runner) acquire(ctx context.Context, rc *race) bool {
	for {
		r.mu.Lock()
		if r.running < r.MaxRunning && r.next() == rc.slot {
			rc.slot.running = true
			r.running++
			r.handed++
			r.served[rc.slot.client] = r.handed
			r.wake()
			r.mu.Unlock()
			return true
		}
		changed := r.changed
		r.mu.Unlock()
		rc.publish()
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// wake tells every waiting race that the slots changed; under mu.
func (r *Runner) wake() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// forget takes s off the queue, and frees its slot if it held one. A
// client with no race left is forgotten too.
func (r *Runner) forget(s *slot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.order, s); i >= 0 {
		r.order = slices.Delete(r.order, i, i+1)
	}
	if s.running {
		r.running--
	}
	if running, queued := r.count(s.client); running+queued == 0 {
		delete(r.served, s.client)
	}
	r.wake()
}

// waitingBehind is the race that a queued race waits behind: the live
// race started just before it (the first running race when it is
// first), or "" when it runs.
func (r *Runner) waitingBehind(s *slot) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s == nil || s.running {
		return ""
	}
	pos := slices.Index(r.order, s)
	if pos > 0 {
		return r.order[pos-1].id
	}
	for _, o := range r.order {
		if o.running {
			return o.id
		}
	}
	return ""
}

// Cancel stops a race started in this process; it ends as cancelled, with
// its lanes consistent. A run that is not running here is a 409.
func (r *Runner) Cancel(id string) error {
	r.mu.Lock()
	rc, ok := r.live[id]
	r.mu.Unlock()
	if !ok || rc.cancel == nil {
		return api.Errorf(http.StatusConflict, "", api.CodeRunNotRunning, "Run '%s' is not running on this server; only a running or queued run can be cancelled.", id)
	}
	rc.cancel(errCancelled)
	return nil
}

// Run runs a race in the foreground and returns its run id and summary.
//
// onSnapshot, if set, is the race's one live observer: it receives a
// snapshot at most every 50 ms while the race runs, one call at a time,
// and last the final snapshot (Snapshot.Final), once the run no longer
// counts as Running. It is called on the race's own goroutines, so it must
// not block; fanning snapshots out to many readers is the caller's job
// (the playground's hub).
func (r *Runner) Run(ctx context.Context, cfg Config, onSnapshot func(Snapshot)) (string, *Summary, error) {
	if err := NormalizeFor(&cfg, r.Windows); err != nil {
		return "", nil, err
	}
	rc, err := r.create(ctx, cfg, onSnapshot)
	if err != nil {
		return "", nil, err
	}
	sum, err := rc.run(ctx)
	return rc.id, sum, err
}

// Running reports whether runID is a race running in this process.
func (r *Runner) Running(runID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.live[runID]
	return ok
}

// Shutdown interrupts running races; they are stored as interrupted.
func (r *Runner) Shutdown(ctx context.Context) {
	r.stop()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	r.engineClient().CloseIdleConnections()
}

func (r *Runner) create(ctx context.Context, cfg Config, onSnapshot func(Snapshot)) (*race, error) {
	id := "run_" + api.NewID("")[1:21]
	if err := r.storeWorkload(ctx, &cfg); err != nil {
		return nil, err
	}
	cfgJSON, _ := json.Marshal(cfg)
	if err := r.db.CreateRun(ctx, &store.Run{ID: id, CreatedAt: time.Now(), Scenario: cfg.Scenario, Profile: cfg.Profile,
		Status: StatusQueued, Config: cfgJSON, Replica: r.Replica, WorkloadID: cfg.WorkloadID}); err != nil {
		return nil, err
	}
	sc, _ := scenario.Lookup(cfg.Scenario)
	rc := &race{r: r, id: id, cfg: cfg, sc: sc, onSnapshot: onSnapshot, status: StatusQueued, lanes: map[string]*LaneSnapshot{},
		saves: make(chan Turn, 1024), mergeSlots: make(chan struct{}, 2)}
	for _, l := range cfg.Lanes {
		rc.lanes[l] = &LaneSnapshot{Lane: l, Label: LaneLabel(l), Status: StatusQueued}
		if err := r.db.SaveLane(ctx, &store.Lane{RunID: id, Name: l, Status: StatusQueued}); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	r.live[id] = rc
	r.mu.Unlock()
	return rc, nil
}

// race is one run in progress.
type race struct {
	r   *Runner
	id  string
	cfg Config
	sc  *scenario.Scenario
	// wl is the workload the race replays, loaded by id when it runs.
	wl *workload.Workload
	// onSnapshot is the one observer of live snapshots (see Runner.Run).
	onSnapshot func(Snapshot)
	// cancel stops a race started with Start, with the reason as cause.
	cancel context.CancelCauseFunc
	// slot is its place among the races started with Start.
	slot *slot

	mu      sync.Mutex
	status  string
	started time.Time
	lanes   map[string]*LaneSnapshot
	summary *Summary
	// clocks are the lanes' own clocks in the current repeat, in the
	// lanes' order (Snapshot.ClockNS).
	clocks []*laneClock
	dirty  bool
	saves  chan Turn
	// mergeSlots bounds concurrent trace lookups.
	mergeSlots chan struct{}
}

func (rc *race) snapshot() Snapshot {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	s := Snapshot{RunID: rc.id, Status: rc.status, Config: rc.cfg, Summary: rc.summary}
	if rc.status == StatusQueued {
		s.WaitingBehind = rc.r.waitingBehind(rc.slot)
	}
	switch {
	case rc.summary != nil && rc.summary.ElapsedNS > 0:
		s.ElapsedNS = rc.summary.ElapsedNS // the clock stops at the end
	case !rc.started.IsZero():
		s.ElapsedNS = time.Since(rc.started).Nanoseconds()
	}
	s.ClockNS = raceClock(rc.clocks, rc.cfg.TakeTurns, time.Now()).Nanoseconds()
	for _, l := range rc.cfg.Lanes {
		ls := *rc.lanes[l]
		ls.Turns = slices.Clone(ls.Turns)
		s.Lanes = append(s.Lanes, ls)
	}
	return s
}

// publish hands the latest snapshot to the race's observer. The ticker
// and the race's end never publish at the same time: the ticker stops
// before the final snapshot.
func (rc *race) publish() {
	rc.mu.Lock()
	rc.dirty = false
	rc.mu.Unlock()
	if rc.onSnapshot != nil {
		rc.onSnapshot(rc.snapshot())
	}
}

// end stores the race's final status, takes it off the running races, and
// publishes the final snapshot, in that order: an observer that sees the
// final snapshot finds the run stored and no longer running.
func (rc *race) end(ctx context.Context, status string, summary *Summary) {
	rc.mu.Lock()
	if summary != nil && !rc.started.IsZero() {
		summary.ElapsedNS = time.Since(rc.started).Nanoseconds()
	}
	rc.mu.Unlock()
	rc.setStatus(ctx, status, summary)
	rc.r.mu.Lock()
	delete(rc.r.live, rc.id)
	rc.r.mu.Unlock()
	rc.publish()
}

func (rc *race) setLane(lane string, f func(*LaneSnapshot)) {
	rc.mu.Lock()
	f(rc.lanes[lane])
	rc.dirty = true
	rc.mu.Unlock()
}

func (rc *race) setStatus(ctx context.Context, status string, summary *Summary) {
	rc.mu.Lock()
	rc.status = status
	rc.summary = summary
	rc.dirty = true
	rc.mu.Unlock()
	var sum []byte
	if summary != nil {
		sum, _ = json.Marshal(summary)
	}
	if err := rc.r.db.UpdateRun(context.WithoutCancel(ctx), rc.id, status, sum); err != nil {
		rc.r.log.Error("update run", "run", rc.id, "err", err)
	}
}

// run executes the race: every repeat, the lanes together (or one after
// another when sequential, or taking turns: turns.go), each through the
// latency proxy.
func (rc *race) run(ctx context.Context) (*Summary, error) {
	rc.mu.Lock()
	rc.started = time.Now()
	rc.mu.Unlock()
	rc.setStatus(ctx, StatusRunning, nil)
	saverDone := make(chan struct{})
	go func() {
		defer close(saverDone)
		for t := range rc.saves {
			rc.saveTurn(ctx, t)
		}
	}()

	// Live snapshots at no more than 20 Hz, until stopTicker returns.
	tickDone, tickStopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(tickStopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-tickDone:
				return
			case <-t.C:
				rc.mu.Lock()
				dirty := rc.dirty || rc.status == StatusRunning
				rc.mu.Unlock()
				if dirty {
					rc.publish()
				}
			}
		}
	}()
	stopTicker := func() { close(tickDone); <-tickStopped }

	u, err := url.Parse(rc.r.engineURL)
	if err == nil && rc.cfg.WorkloadID != "" {
		rc.wl, err = rc.r.loadWorkload(ctx, rc.cfg.WorkloadID)
	}
	var proxy *Proxy
	if err == nil {
		proxy, err = NewProxy(u.Host, rc.cfg.RTT(), rc.cfg.BandwidthKbps)
	}
	if err != nil {
		close(rc.saves)
		<-saverDone
		stopTicker()
		rc.endLanes(ctx, StatusFailed)
		rc.end(ctx, StatusFailed, nil)
		return nil, err
	}
	defer proxy.Close()
	base := u.Scheme + "://" + proxy.Addr()

	results := map[string][]LaneSummary{}
	var runErr error
	load := loadProbe()
	for rep := 0; rep < rc.cfg.Repeats && runErr == nil; rep++ {
		order := slices.Clone(rc.cfg.Lanes)
		if rc.cfg.Sequential && rep%2 == 1 {
			slices.Reverse(order) // interleave over repeats
		}
		// Each lane's own clock for this repeat, in the lanes' order;
		// lanes that take turns share a baton.
		clocks := make([]*laneClock, len(rc.cfg.Lanes))
		if rc.cfg.TakeTurns {
			_, clocks = newBaton(len(rc.cfg.Lanes), time.Now)
		} else {
			for i := range clocks {
				clocks[i] = freeClock()
			}
		}
		rc.mu.Lock()
		rc.clocks = clocks
		rc.mu.Unlock()
		var wg sync.WaitGroup
		var mu sync.Mutex
		runLane := func(lane string) {
			clock := clocks[slices.Index(rc.cfg.Lanes, lane)]
			defer clock.leave() // whatever ends the lane, the others go on
			sum, err := rc.runLane(ctx, lane, rep, base, clock)
			mu.Lock()
			results[lane] = append(results[lane], sum)
			if err != nil && runErr == nil && errors.Is(err, errStopped) {
				runErr = err
			}
			mu.Unlock()
		}
		for _, lane := range order {
			if rc.cfg.Sequential {
				runLane(lane)
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); runLane(lane) }()
		}
		wg.Wait()
		if ctx.Err() != nil {
			runErr = errStopped
		}
	}
	close(rc.saves)
	<-saverDone
	summary := summarize(rc.cfg, results)
	summary.Load = load.end()
	keepRepeatTotals(summary, results)
	status := StatusPassed
	for _, l := range summary.Lanes {
		if l.Status != StatusPassed {
			status = StatusFailed
		}
	}
	if runErr != nil {
		status = stoppedStatus(ctx)
	}
	for i := range summary.Lanes {
		l := &summary.Lanes[i]
		// A stopped race's lanes that did not pass stopped with it,
		// whatever error their last request met on the way out.
		if runErr != nil && l.Status != StatusPassed {
			l.Status = status
		}
		b, _ := json.Marshal(l)
		if err := rc.r.db.SaveLane(context.WithoutCancel(ctx), &store.Lane{RunID: rc.id, Name: l.Lane, Status: l.Status, Summary: b}); err != nil {
			rc.r.log.Error("save lane", "err", err)
		}
		rc.setLane(l.Lane, func(s *LaneSnapshot) { s.Status = l.Status })
	}
	rc.describe(ctx, summary)
	stopTicker()
	rc.end(ctx, status, summary)
	if runErr != nil {
		return summary, runErr
	}
	return summary, nil
}

// describe builds the race's sentences into its summary, the range across
// the readings from re-costing the turns just stored.
func (rc *race) describe(ctx context.Context, summary *Summary) {
	rec := &RunRecord{ID: rc.id, Config: rc.cfg, Summary: summary}
	if turns, _, err := rc.r.db.RunTurns(context.WithoutCancel(ctx), rc.id); err == nil {
		for _, st := range turns {
			var t Turn
			if json.Unmarshal(st.Timings, &t) == nil {
				rec.Turns = append(rec.Turns, t)
			}
		}
	} else {
		rc.r.log.Error("read turns", "run", rc.id, "err", err)
	}
	rec.Describe()
}

// stoppedStatus is how a race that stopped early ends, from its context's
// cause: cancelled, past its time limit (failed), or interrupted by the
// server stopping.
func stoppedStatus(ctx context.Context) string {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCancelled):
		return StatusCancelled
	case errors.Is(cause, errTimeLimit):
		return StatusFailed
	}
	return StatusInterrupted
}

// endLanes gives every lane that has not ended the status status.
func (rc *race) endLanes(ctx context.Context, status string) {
	for _, l := range rc.cfg.Lanes {
		rc.mu.Lock()
		ended := Ended(rc.lanes[l].Status)
		rc.mu.Unlock()
		if ended {
			continue
		}
		rc.setLane(l, func(s *LaneSnapshot) { s.Status = status })
		if err := rc.r.db.SaveLane(context.WithoutCancel(ctx), &store.Lane{RunID: rc.id, Name: l, Status: status}); err != nil {
			rc.r.log.Error("save lane", "err", err)
		}
	}
}

// endUnrun ends a race that never left the queue: cancelled, or
// interrupted when the server stopped first.
func (rc *race) endUnrun(ctx context.Context) {
	status := stoppedStatus(ctx)
	rc.endLanes(ctx, status)
	rc.end(ctx, status, nil)
}
