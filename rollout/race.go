package rollout

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"agentloop/api"
	"agentloop/scenario"
	"agentloop/store"
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

// Normalize fills defaults and validates a config. The error is a 400.
func Normalize(cfg *Config) *api.Error {
	if cfg.Scenario == "" {
		cfg.Scenario = scenario.All()[0].Name
	}
	if _, ok := scenario.Lookup(cfg.Scenario); !ok {
		var names []string
		for _, s := range Scenarios() {
			names = append(names, s.Name)
		}
		return api.BadRequest("scenario", "invalid_value", "Unknown scenario '%s'. Supported values are: %s.", cfg.Scenario, strings.Join(names, ", "))
	}
	if cfg.Profile == "" {
		cfg.Profile = api.DefaultModel
	}
	if !api.IsBuiltinModel(cfg.Profile) {
		return api.BadRequest("profile", "invalid_value", "Unknown profile '%s'. Supported values are: %s.", cfg.Profile, strings.Join(api.ModelNames(), ", "))
	}
	if cfg.RTTms < 0 || cfg.RTTms > 5000 {
		return api.BadRequest("rtt_ms", "invalid_value", "rtt_ms must be between 0 and 5000.")
	}
	if cfg.ToolTimeMs < 0 || cfg.ToolTimeMs > 60000 {
		return api.BadRequest("tool_time_ms", "invalid_value", "tool_time_ms must be between 0 and 60000.")
	}
	if cfg.BandwidthKbps < 0 {
		return api.BadRequest("bandwidth_kbps", "invalid_value", "bandwidth_kbps must be 0 (unlimited) or positive.")
	}
	if len(cfg.Lanes) == 0 {
		cfg.Lanes = slices.Clone(AllLanes)
	}
	seen := map[string]bool{}
	for _, l := range cfg.Lanes {
		if !slices.Contains(AllLanes, l) {
			return api.BadRequest("lanes", "invalid_value", "Unknown lane '%s'. Supported values are: %s.", l, strings.Join(AllLanes, ", "))
		}
		if seen[l] {
			return api.BadRequest("lanes", "invalid_value", "Lane '%s' is listed twice.", l)
		}
		seen[l] = true
	}
	if cfg.Repeats == 0 {
		cfg.Repeats = 1
	}
	if cfg.Repeats < 1 || cfg.Repeats > 20 {
		return api.BadRequest("repeats", "invalid_value", "repeats must be between 1 and 20.")
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	return nil
}

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

	mu      sync.Mutex
	live    map[string]*race
	wg      sync.WaitGroup
	baseCtx context.Context
	stop    context.CancelFunc
}

// NewRunner returns a runner for the engine at engineURL (http://host:port).
func NewRunner(engineURL string, db RunStore, log *slog.Logger) *Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{engineURL: strings.TrimRight(engineURL, "/"), db: db, log: log, live: map[string]*race{}, baseCtx: ctx, stop: cancel}
}

// Start validates cfg, stores a queued run and runs it in the background.
func (r *Runner) Start(cfg Config) (string, error) {
	if err := Normalize(&cfg); err != nil {
		return "", err
	}
	rc, err := r.create(r.baseCtx, cfg)
	if err != nil {
		return "", err
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if _, err := rc.run(r.baseCtx); err != nil && !errors.Is(err, errStopped) {
			r.log.Warn("race failed", "run", rc.id, "err", err)
		}
	}()
	return rc.id, nil
}

// Run runs a race in the foreground and returns its run id and summary.
// onSnapshot, if set, receives live snapshots.
func (r *Runner) Run(ctx context.Context, cfg Config, onSnapshot func(Snapshot)) (string, *Summary, error) {
	if err := Normalize(&cfg); err != nil {
		return "", nil, err
	}
	rc, err := r.create(ctx, cfg)
	if err != nil {
		return "", nil, err
	}
	if onSnapshot != nil {
		ch, cancel, _ := r.Subscribe(rc.id)
		defer cancel()
		go func() {
			for s := range ch {
				onSnapshot(s)
			}
		}()
	}
	sum, err := rc.run(ctx)
	return rc.id, sum, err
}

// Subscribe returns live snapshots of a run running in this process.
func (r *Runner) Subscribe(runID string) (<-chan Snapshot, func(), bool) {
	r.mu.Lock()
	rc, ok := r.live[runID]
	r.mu.Unlock()
	if !ok {
		ch := make(chan Snapshot)
		close(ch)
		return ch, func() {}, false
	}
	ch, cancel := rc.subscribe()
	return ch, cancel, true
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
}

func (r *Runner) create(ctx context.Context, cfg Config) (*race, error) {
	id := "run_" + api.NewID("")[1:21]
	cfgJSON, _ := json.Marshal(cfg)
	if err := r.db.CreateRun(ctx, &store.Run{ID: id, CreatedAt: time.Now(), Scenario: cfg.Scenario, Profile: cfg.Profile,
		Status: StatusQueued, Config: cfgJSON}); err != nil {
		return nil, err
	}
	sc, _ := scenario.Lookup(cfg.Scenario)
	rc := &race{r: r, id: id, cfg: cfg, sc: sc, lanes: map[string]*LaneSnapshot{}, subs: map[chan Snapshot]struct{}{}, saves: make(chan Turn, 1024), mergeSlots: make(chan struct{}, 2)}
	for _, l := range cfg.Lanes {
		rc.lanes[l] = &LaneSnapshot{Lane: l, Status: StatusQueued}
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

	mu      sync.Mutex
	status  string
	started time.Time
	lanes   map[string]*LaneSnapshot
	summary *Summary
	subs    map[chan Snapshot]struct{}
	dirty   bool
	saves   chan Turn
	// mergeSlots bounds concurrent trace lookups.
	mergeSlots chan struct{}
}

func (rc *race) snapshot() Snapshot {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	s := Snapshot{RunID: rc.id, Status: rc.status, Config: rc.cfg, Summary: rc.summary}
	if !rc.started.IsZero() {
		s.ElapsedNS = time.Since(rc.started).Nanoseconds()
	}
	for _, l := range rc.cfg.Lanes {
		ls := *rc.lanes[l]
		ls.Turns = slices.Clone(ls.Turns)
		s.Lanes = append(s.Lanes, ls)
	}
	return s
}

func (rc *race) subscribe() (<-chan Snapshot, func()) {
	ch := make(chan Snapshot, 4)
	rc.mu.Lock()
	rc.subs[ch] = struct{}{}
	rc.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			rc.mu.Lock()
			if _, ok := rc.subs[ch]; ok {
				delete(rc.subs, ch)
				close(ch)
			}
			rc.mu.Unlock()
		})
	}
}

// publish sends the latest snapshot to every subscriber that has room;
// a slow subscriber misses intermediate snapshots, never the final one.
func (rc *race) publish(final bool) {
	s := rc.snapshot()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.dirty = false
	for ch := range rc.subs {
		if final {
			select {
			case ch <- s:
			default:
				// make room for the final snapshot
				select {
				case <-ch:
				default:
				}
				select {
				case ch <- s:
				default:
				}
			}
			close(ch)
			delete(rc.subs, ch)
			continue
		}
		select {
		case ch <- s:
		default:
		}
	}
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
// another when sequential), each through the latency proxy.
func (rc *race) run(ctx context.Context) (*Summary, error) {
	defer func() {
		rc.r.mu.Lock()
		delete(rc.r.live, rc.id)
		rc.r.mu.Unlock()
	}()
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

	// Live snapshots at no more than 20 Hz.
	tickDone := make(chan struct{})
	go func() {
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
					rc.publish(false)
				}
			}
		}
	}()

	u, err := url.Parse(rc.r.engineURL)
	var proxy *Proxy
	if err == nil {
		proxy, err = NewProxy(u.Host, rc.cfg.RTT(), rc.cfg.BandwidthKbps)
	}
	if err != nil {
		close(rc.saves)
		<-saverDone
		close(tickDone)
		rc.setStatus(ctx, StatusFailed, nil)
		rc.publish(true)
		return nil, err
	}
	defer proxy.Close()
	base := u.Scheme + "://" + proxy.Addr()

	results := map[string][]LaneSummary{}
	var runErr error
	for rep := 0; rep < rc.cfg.Repeats && runErr == nil; rep++ {
		order := slices.Clone(rc.cfg.Lanes)
		if rc.cfg.Sequential && rep%2 == 1 {
			slices.Reverse(order) // interleave over repeats
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		runLane := func(lane string) {
			sum, err := rc.runLane(ctx, lane, rep, base)
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
	status := StatusPassed
	for _, l := range summary.Lanes {
		if l.Status != StatusPassed {
			status = StatusFailed
		}
	}
	if runErr != nil {
		status = StatusInterrupted
	}
	for _, l := range summary.Lanes {
		laneStatus := l.Status
		if runErr != nil && laneStatus != StatusPassed && laneStatus != StatusFailed {
			laneStatus = StatusInterrupted
		}
		b, _ := json.Marshal(l)
		if err := rc.r.db.SaveLane(context.WithoutCancel(ctx), &store.Lane{RunID: rc.id, Name: l.Lane, Status: laneStatus, Summary: b}); err != nil {
			rc.r.log.Error("save lane", "err", err)
		}
	}
	rc.setStatus(ctx, status, summary)
	close(tickDone)
	rc.publish(true)
	if runErr != nil {
		return summary, runErr
	}
	return summary, nil
}

func (rc *race) runLane(ctx context.Context, lane string, repeat int, base string) (LaneSummary, error) {
	d := &dialer{addr: strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://")}
	tr, err := NewTransport(lane, base, d, rc.r.TLS, rc.r.APIKey)
	if err != nil {
		return LaneSummary{Lane: lane, Status: StatusFailed, Error: err.Error()}, err
	}
	rc.setLane(lane, func(s *LaneSnapshot) {
		s.Status, s.Repeat, s.Turn, s.Tokens, s.Turns, s.ElapsedNS, s.Error = StatusRunning, repeat, 0, 0, nil, 0, ""
	})
	lr := &laneRun{lane: lane, repeat: repeat, sc: rc.sc, cfg: rc.cfg,
		cacheKey: fmt.Sprintf("%s-%s-r%d", rc.id, lane, repeat), tr: tr}
	// Engine traces are merged as each turn ends, off the lane's path, so
	// the live waterfall shows every stage; at most two lookups at a time.
	var merges sync.WaitGroup
	var mergedMu sync.Mutex
	merged := map[int]Turn{}
	lr.onTurn = func(t Turn) {
		if t.ResponseID != "" {
			mt := t
			mt.Stages = slices.Clone(t.Stages)
			merges.Add(1)
			go func() {
				defer merges.Done()
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
			}()
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
	elapsed := time.Since(lr.start)
	// Merge the engine's traces (fetched directly, after the lane, so the
	// lookups never slow the lane down).
	merges.Wait()
	rc.mergeTraces(ctx, lr.turns, merged)
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

func (rc *race) fetchTrace(ctx context.Context, id string) (*api.Trace, error) {
	req, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), "GET", rc.r.engineURL+"/api/traces/"+id, nil)
	if rc.r.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+rc.r.APIKey)
	}
	client := http.DefaultClient
	if rc.r.TLS != nil {
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: rc.r.TLS}}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("trace %s: %d", id, resp.StatusCode)
	}
	var tr api.Trace
	return &tr, json.NewDecoder(resp.Body).Decode(&tr)
}

// mergeTraces fills each turn's engine stages that live merging has not
// filled already.
func (rc *race) mergeTraces(ctx context.Context, turns []Turn, merged map[int]Turn) {
	for i := range turns {
		if m, ok := merged[turns[i].Index]; ok && m.ResponseID == turns[i].ResponseID {
			turns[i].Stages, turns[i].OverheadNS = m.Stages, m.OverheadNS
			continue
		}
		rc.merge(ctx, &turns[i])
	}
}

// merge fills one turn's stages from the engine's trace for its response:
// the engine's measured overhead, its modelled queue, prefill and decode,
// and the network time the client saw beyond them.
func (rc *race) merge(ctx context.Context, t *Turn) bool {
	if t.ResponseID == "" {
		return false
	}
	tr, err := rc.fetchTrace(ctx, t.ResponseID)
	if err != nil {
		return false
	}
	var overhead, prefill, decode int64
	for _, s := range tr.Spans {
		switch {
		case api.IsOverhead(s.Name):
			overhead += s.DurationNS
		case s.Name == api.StageQueue || s.Name == api.StagePrefill:
			prefill += s.DurationNS
		case s.Name == api.StageGenerate:
			decode += s.DurationNS
		}
	}
	t.OverheadNS = overhead
	stages := []StageTime{}
	if t.ConnectNS > 0 {
		stages = append(stages, StageTime{Name: StageConnect, DurationNS: t.ConnectNS, Kind: "modelled"})
	}
	stages = append(stages,
		StageTime{Name: StageOverhead, DurationNS: overhead, Kind: "measured"},
		StageTime{Name: StagePrefill, DurationNS: prefill, Kind: "modelled"},
		StageTime{Name: StageDecode, DurationNS: decode, Kind: "modelled"})
	network := (t.DoneNS - t.SentNS) - overhead - prefill - decode - t.ConnectNS
	kind := "measured"
	if rc.cfg.RTTms > 0 {
		kind = "modelled"
	}
	stages = append(stages, StageTime{Name: StageNetwork, DurationNS: max(network, 0), Kind: kind})
	t.Stages = append(stages, t.Stages...) // tool stages last
	return true
}

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

func laneSummary(lane string, turns []Turn, elapsed time.Duration) LaneSummary {
	s := LaneSummary{Lane: lane, TotalNS: elapsed.Nanoseconds(), StageNS: map[string]int64{}}
	var overheads []int64
	for _, t := range turns {
		if t.Index < 0 {
			// the warmup counts in time and stages, not as a turn
		} else if t.Error == "" {
			s.Turns++
		}
		s.InputTokens += t.InputTokens
		s.CachedTokens += t.CachedTokens
		s.OutputTokens += t.OutputTokens
		s.BytesSent += t.BytesSent
		s.BytesReceived += t.BytesReceived
		if t.Index >= 0 && t.ResponseID != "" {
			overheads = append(overheads, t.OverheadNS)
		}
		for _, st := range t.Stages {
			s.StageNS[st.Name] += st.DurationNS
		}
	}
	if s.InputTokens > 0 {
		s.CachedShare = float64(s.CachedTokens) / float64(s.InputTokens)
	}
	if len(overheads) > 0 {
		slices.Sort(overheads)
		s.MedianOverNS = overheads[len(overheads)/2]
	}
	return s
}

// summarize takes each lane's median repeat and the savings against http
// and http-optimized.
func summarize(cfg Config, results map[string][]LaneSummary) *Summary {
	sum := &Summary{SavedVsHTTP: map[string]float64{}, SavedVsOptimized: map[string]float64{}, Sequential: cfg.Sequential, Repeats: cfg.Repeats}
	medians := map[string]LaneSummary{}
	for _, lane := range cfg.Lanes {
		reps := slices.Clone(results[lane])
		if len(reps) == 0 {
			medians[lane] = LaneSummary{Lane: lane, Status: StatusInterrupted}
			sum.Lanes = append(sum.Lanes, medians[lane])
			continue
		}
		status := StatusPassed
		errMsg := ""
		for _, r := range reps {
			if r.Status != StatusPassed && status == StatusPassed {
				status, errMsg = r.Status, r.Error
			}
		}
		sort.Slice(reps, func(i, j int) bool { return reps[i].TotalNS < reps[j].TotalNS })
		m := reps[len(reps)/2]
		m.Status, m.Error = status, errMsg
		medians[lane] = m
		sum.Lanes = append(sum.Lanes, m)
	}
	for _, lane := range cfg.Lanes {
		if h, ok := medians[LaneHTTP]; ok && h.TotalNS > 0 {
			sum.SavedVsHTTP[lane] = 1 - float64(medians[lane].TotalNS)/float64(h.TotalNS)
		}
		if o, ok := medians[LaneHTTPOptimized]; ok && o.TotalNS > 0 {
			sum.SavedVsOptimized[lane] = 1 - float64(medians[lane].TotalNS)/float64(o.TotalNS)
		}
	}
	return sum
}
