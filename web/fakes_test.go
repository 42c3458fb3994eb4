package web

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/rollout"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// fakeRaces runs nothing; it records configs and the observer of the last
// start, which the test feeds, and says running for the runs in running.
type fakeRaces struct {
	mu         sync.Mutex
	started    []rollout.Config
	clients    []string
	startErr   error
	running    map[string]bool
	cancelled  []string
	onSnapshot func(rollout.Snapshot)
}

func (f *fakeRaces) Start(client string, cfg rollout.Config, onSnapshot func(rollout.Snapshot)) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return "", f.startErr
	}
	f.started = append(f.started, cfg)
	f.clients = append(f.clients, client)
	f.running["run_fake"] = true
	f.onSnapshot = onSnapshot
	return "run_fake", nil
}

func (f *fakeRaces) Cancel(id string) error {
	if !f.Running(id) {
		return api.Errorf(409, "", "run_not_running", "Run '%s' is not running.", id)
	}
	f.mu.Lock()
	f.cancelled = append(f.cancelled, id)
	f.mu.Unlock()
	return nil
}

func (f *fakeRaces) Running(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[id]
}

// publish feeds a snapshot to the observer of the last start.
func (f *fakeRaces) publish(s rollout.Snapshot) {
	f.mu.Lock()
	on := f.onSnapshot
	f.mu.Unlock()
	on(s)
}

// fakeRuns is an in-memory store of run records.
type fakeRuns struct {
	mu      sync.Mutex
	runs    map[string]*rollout.RunRecord
	filters []store.RunFilter
	failing bool
	// failWith, when set, is what every call answers; deleteErr what
	// DeleteRun answers.
	failWith, deleteErr error
	loaded              []string // the runs LoadRun read whole
}

func (f *fakeRuns) LoadRun(_ context.Context, id string) (*rollout.RunRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loaded = append(f.loaded, id)
	if f.failWith != nil {
		return nil, f.failWith
	}
	if f.failing {
		return nil, errors.New("disk on fire")
	}
	r, ok := f.runs[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	c := *r
	if r.Summary != nil {
		s := *r.Summary
		c.Summary = &s
	}
	c.Describe() // as rollout.LoadRun does for a run stored without sentences
	return &c, nil
}

func (f *fakeRuns) ListRuns(_ context.Context, flt store.RunFilter) ([]rollout.RunRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filters = append(f.filters, flt)
	if f.failWith != nil {
		return nil, f.failWith
	}
	var out []rollout.RunRecord
	for _, r := range f.runs {
		if (flt.Scenario == "" || r.Config.Scenario == flt.Scenario) && (flt.Profile == "" || r.Config.Profile == flt.Profile) {
			c := *r
			c.Turns = nil
			out = append(out, c)
		}
	}
	if len(out) > flt.Limit {
		out = out[:flt.Limit]
	}
	return out, nil
}

func (f *fakeRuns) DeleteRun(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleteErr != nil {
		return f.deleteErr
	}
	if _, ok := f.runs[id]; !ok {
		return store.ErrNotFound
	}
	delete(f.runs, id)
	return nil
}

// fixtureRun is a finished two-lane race with tool calls.
func fixtureRun(id string) *rollout.RunRecord {
	cfg := rollout.Config{Scenario: "fix-failing-test", Profile: "burst", Lanes: []string{rollout.LaneHTTP, rollout.LaneWS}, Seed: 1, Repeats: 1}
	turn := func(lane string, i int, overhead int64) rollout.Turn {
		return rollout.Turn{Lane: lane, Index: i, ResponseID: "resp_" + lane + string(rune('a'+i)),
			SentNS: int64(i) * 100e6, FirstTokenNS: int64(i)*100e6 + 40e6, LastTokenNS: int64(i)*100e6 + 60e6, DoneNS: int64(i)*100e6 + 70e6,
			ToolNS: 10e6, InputTokens: 1000 + 100*i, CachedTokens: 896, OutputTokens: 20, OverheadNS: overhead,
			Stages: []rollout.StageTime{{Name: rollout.StageOverhead, DurationNS: overhead, Kind: "measured"},
				{Name: rollout.StagePrefill, DurationNS: 20e6, Kind: "modelled"}, {Name: rollout.StageDecode, DurationNS: 20e6, Kind: "modelled"},
				{Name: rollout.StageTool, DurationNS: 10e6, Kind: "measured"}},
			Calls: []rollout.Call{{Name: "run_tests", Arguments: `{"path":"./..."}`, CallID: "call_" + lane, Output: "ok  \tpricing\t0.01s"}},
			Text:  "Running the tests."}
	}
	return &rollout.RunRecord{ID: id, CreatedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Status: rollout.StatusPassed, Config: cfg,
		Summary: &rollout.Summary{Repeats: 1, Lanes: []rollout.LaneSummary{
			{Lane: rollout.LaneHTTP, Status: rollout.StatusPassed, TotalNS: 1e9, Turns: 2, MedianOverNS: 5e6},
			{Lane: rollout.LaneWS, Status: rollout.StatusPassed, TotalNS: 6e8, Turns: 2, MedianOverNS: 1e6}},
			SavedVsHTTP: map[string]float64{rollout.LaneHTTP: 0, rollout.LaneWS: 0.4}, SavedVsOptimized: map[string]float64{}},
		Lanes: []rollout.LaneSummary{{Lane: rollout.LaneHTTP, Status: rollout.StatusPassed, TotalNS: 1e9}, {Lane: rollout.LaneWS, Status: rollout.StatusPassed, TotalNS: 6e8}},
		Turns: []rollout.Turn{turn(rollout.LaneHTTP, 0, 5e6), turn(rollout.LaneHTTP, 1, 9e6), turn(rollout.LaneWS, -1, 1e6), turn(rollout.LaneWS, 0, 1e6), turn(rollout.LaneWS, 1, 1e6)}}
}

type testPlayground struct {
	races *fakeRaces
	runs  *fakeRuns
	pg    *Playground
	e     *echo.Echo
}

func newTestPlayground(t *testing.T, opts ...func(*Deps)) *testPlayground {
	t.Helper()
	tp := &testPlayground{
		races: &fakeRaces{running: map[string]bool{}},
		runs:  &fakeRuns{runs: map[string]*rollout.RunRecord{"run_done": fixtureRun("run_done")}},
	}
	d := Deps{Races: tp.races, Runs: tp.runs, Cores: 2}
	for _, o := range opts {
		o(&d)
	}
	tp.pg = New(d)
	tp.e = newEcho()
	tp.pg.Register(tp.e)
	return tp
}

func (tp *testPlayground) do(method, target, body string, header map[string]string) *httptest.ResponseRecorder {
	var req *http.Request
	if body != "" {
		req = httptest.NewRequest(method, target, strings.NewReader(body))
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	tp.e.ServeHTTP(rec, req)
	return rec
}

// newEcho is an Echo whose error handler writes an *api.Error the way
// app.ErrorHandler does (web cannot import app); other errors go to Echo's
// default handler, as app leaves HTML pages to the playground.
func newEcho() *echo.Echo {
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		var ae *api.Error
		if errors.As(err, &ae) && !c.Response().Committed {
			_ = api.WriteHTTPError(c.Response(), ae)
			return
		}
		e.DefaultHTTPErrorHandler(err, c)
	}
	return e
}

var jsonHeader = map[string]string{"Content-Type": "application/json"}
