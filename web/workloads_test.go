package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/internal/wait"
	"agentloop/rollout"
	"agentloop/store"
	"agentloop/store/sqlite"
	"agentloop/workload"
)

const testWorkload = `{"version":1,"source":"hand","instructions_tokens":10,"tools_tokens":5,"tools":1,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":4}]}`

// TestWorkloadsAPI: a workload uploads to a permalink that serves it back
// compact, under its content's id (the same upload twice is one
// workload), lists, races by workload_id, and deletes; a bad one is a 400
// naming the field.
func TestWorkloadsAPI(t *testing.T) {
	_, db := validatingRunner(t)
	tp := &testPlayground{pg: New(Deps{Races: &fakeRaces{running: map[string]bool{}}, Runs: StoreRuns(db), Workloads: db}), e: newEcho()}
	tp.pg.Register(tp.e)

	rec := tp.do(http.MethodPost, "/api/workloads", `{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":0}],"output_tokens":4}]}`, jsonHeader)
	if e := decodeAPIError(t, rec.Body.Bytes()); rec.Code != 400 || deref(e.Error.Param) != "workload" || !strings.Contains(e.Error.Message, "turns[0].input[0].tokens") {
		t.Fatalf("bad workload: %d %s", rec.Code, rec.Body)
	}
	rec = tp.do(http.MethodPost, "/api/workloads", strings.Replace(testWorkload, `"version"`, `"VERSION"`, 1), jsonHeader)
	if e := decodeAPIError(t, rec.Body.Bytes()); rec.Code != 400 || !strings.Contains(e.Error.Message, "VERSION: unknown field") {
		t.Fatalf("a field name in another case: %d %s", rec.Code, rec.Body)
	}
	var info workloadInfo
	for range 2 {
		rec = tp.do(http.MethodPost, "/api/workloads", strings.ReplaceAll(testWorkload, ",", ",\n  "), jsonHeader)
		var again workloadInfo
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &again) != nil || again.Turns != 1 || again.Source != "hand" || again.URL != "/api/workloads/"+again.ID {
			t.Fatalf("upload: %d %s", rec.Code, rec.Body)
		}
		if info.ID != "" && again.ID != info.ID {
			t.Fatalf("the same workload twice: %s, then %s", info.ID, again.ID)
		}
		info = again
	}
	rec = tp.do(http.MethodGet, info.URL, "", nil)
	if rec.Code != 200 || rec.Body.String() != testWorkload {
		t.Fatalf("permalink: %d %s", rec.Code, rec.Body)
	}
	// The permalink's file uploads again, to the same id.
	if again := tp.do(http.MethodPost, "/api/workloads", rec.Body.String(), jsonHeader); again.Code != 200 || !strings.Contains(again.Body.String(), info.ID) {
		t.Fatalf("the permalink's file: %d %s", again.Code, again.Body)
	}
	if rec := tp.do(http.MethodGet, "/api/workloads", "", nil); rec.Code != 200 || strings.Count(rec.Body.String(), `"id":`) != 1 {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	// A race by id gets the workload; an unknown id is a 400 naming it.
	races := tp.pg.races.(*fakeRaces)
	if rec := tp.do(http.MethodPost, "/api/runs", `{"workload_id":"`+info.ID+`","profile":"instant"}`, jsonHeader); rec.Code != 200 {
		t.Fatalf("race by id: %d %s", rec.Code, rec.Body)
	}
	if got := races.started[0]; got.Workload == nil || got.Workload.InstructionsTokens != 10 || got.WorkloadID != info.ID {
		t.Fatalf("raced %+v", got)
	}
	rec = tp.do(http.MethodPost, "/api/runs", `{"workload_id":"wl_nope"}`, jsonHeader)
	if e := decodeAPIError(t, rec.Body.Bytes()); rec.Code != 400 || deref(e.Error.Param) != "workload_id" {
		t.Fatalf("unknown id: %d %s", rec.Code, rec.Body)
	}
	if rec := tp.do(http.MethodDelete, info.URL, "", nil); rec.Code != 200 {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if rec := tp.do(http.MethodGet, info.URL, "", nil); rec.Code != 404 {
		t.Fatalf("after delete: %d", rec.Code)
	}
}

// TestInlineWorkloadRaceNamesIt: a race sent with its workload inline
// stores the workload once, under its content's id, and the run names it
// and holds no copy; the workload stays while the run does.
func TestInlineWorkloadRaceNamesIt(t *testing.T) {
	runner, db := validatingRunner(t)
	tp := &testPlayground{pg: New(Deps{Races: runner, Runs: StoreRuns(db), Workloads: db}), e: newEcho()}
	tp.pg.Register(tp.e)
	rec := tp.do(http.MethodPost, "/api/runs", `{"workload":`+testWorkload+`,"lanes":["ws"]}`, jsonHeader)
	var started struct{ ID string }
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &started) != nil {
		t.Fatalf("inline: %d %s", rec.Code, rec.Body)
	}
	run, _, err := db.GetRun(context.Background(), started.ID)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := workload.Parse([]byte(testWorkload))
	canonical, _ := w.Canonical()
	if run.WorkloadID != workload.ID(canonical) || strings.Contains(string(run.Config), `"turns":[`) || !strings.Contains(string(run.Config), `"workload_summary":{`) {
		t.Fatalf("stored run names %q, config %s", run.WorkloadID, run.Config)
	}
	if sw, err := db.GetWorkload(context.Background(), run.WorkloadID); err != nil || string(sw.JSON) != testWorkload {
		t.Fatalf("stored workload: %v", err)
	}
	if rec := tp.do(http.MethodDelete, "/api/workloads/"+run.WorkloadID, "", nil); rec.Code != http.StatusConflict {
		t.Fatalf("deleting a workload a run names: %d %s", rec.Code, rec.Body)
	}
}

// TestRefusedRunStoresNothing: a race refused for its config (its caps
// included) or for the race slots stores neither a run nor its workload.
func TestRefusedRunStoresNothing(t *testing.T) {
	runner, db := validatingRunner(t)
	tp := &testPlayground{pg: New(Deps{Races: runner, Runs: StoreRuns(db), Workloads: db}), e: newEcho()}
	tp.pg.Register(tp.e)
	var turns []string
	for range 1000 {
		turns = append(turns, `{"input":[{"kind":"user_message","tokens":3}],"output_tokens":4}`)
	}
	long := `{"version":1,"turns":[` + strings.Join(turns, ",") + `]}`
	rec := tp.do(http.MethodPost, "/api/runs", `{"workload":`+long+`,"repeats":20}`, jsonHeader)
	if e := decodeAPIError(t, rec.Body.Bytes()); rec.Code != 400 || !strings.Contains(e.Error.Message, "max_race_turns") {
		t.Fatalf("80,000 turns: %d %s", rec.Code, rec.Body)
	}
	runner.MaxRunning, runner.MaxQueued = 0, 0
	if rec := tp.do(http.MethodPost, "/api/runs", `{"workload":`+testWorkload+`}`, jsonHeader); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("no race slot: %d %s", rec.Code, rec.Body)
	}
	ws, err := db.ListWorkloads(context.Background(), 0)
	runs, _, rerr := db.ListRuns(context.Background(), store.RunFilter{})
	if err != nil || rerr != nil || len(ws) != 0 || len(runs) != 0 {
		t.Fatalf("refused races stored %d workloads and %d runs (%v %v)", len(ws), len(runs), err, rerr)
	}
}

// failingWorkloads is a workload store whose saves fail as a full disk does.
type failingWorkloads struct{ WorkloadDB }

func (failingWorkloads) SaveWorkload(context.Context, *store.Workload) error {
	return fmt.Errorf("store: save workload: %w", store.ErrFull)
}

// TestWorkloadSaveFailure: a save that fails says the workload could not
// be stored, why, with a 503, and names no id.
func TestWorkloadSaveFailure(t *testing.T) {
	_, db := validatingRunner(t)
	tp := &testPlayground{pg: New(Deps{Races: &fakeRaces{running: map[string]bool{}}, Runs: StoreRuns(db), Workloads: failingWorkloads{db}}), e: newEcho()}
	tp.pg.Register(tp.e)
	rec := tp.do(http.MethodPost, "/api/workloads", testWorkload, jsonHeader)
	e := decodeAPIError(t, rec.Body.Bytes())
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(e.Error.Message, "could not be stored") ||
		!strings.Contains(e.Error.Message, "the disk is full") || strings.Contains(e.Error.Message, "wl_") {
		t.Fatalf("failed save: %d %s", rec.Code, rec.Body)
	}
}

// largeWorkload is a valid workload of about 1 MiB: 1,000 turns of many
// small inputs.
func largeWorkload(t testing.TB, salt int) string {
	t.Helper()
	var turns []string
	item := `{"kind":"user_message","tokens":1}`
	for i := range workload.MaxTurns {
		n := 28
		if i == 0 {
			n = 1 + salt%8
		}
		turns = append(turns, `{"input":[`+strings.TrimSuffix(strings.Repeat(item+",", n), ",")+`],"output_tokens":1}`)
	}
	body := `{"version":1,"source":"bench","turns":[` + strings.Join(turns, ",") + `]}`
	if _, err := workload.Parse([]byte(body)); err != nil {
		t.Fatal(err)
	}
	return body
}

// TestLiveFrameOfAWorkloadRaceIsSmall: a live frame never carries the
// workload: a race of a 1 MiB workload sends frames of a few KiB.
func TestLiveFrameOfAWorkloadRaceIsSmall(t *testing.T) {
	runner, db := validatingRunner(t)
	tp := &testPlayground{pg: New(Deps{Races: runner, Runs: StoreRuns(db), Workloads: db}), e: newEcho()}
	body := largeWorkload(t, 0)
	if len(body) < 900<<10 {
		t.Fatalf("workload of %d bytes", len(body))
	}
	w, _ := workload.Parse([]byte(body))
	var (
		mu      sync.Mutex
		largest int
		final   bool
	)
	_, err := runner.Start("client", rollout.Config{Workload: w}, func(s rollout.Snapshot) {
		b, err := json.Marshal(tp.pg.liveFrame(s))
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		largest = max(largest, len(b))
		final = final || s.Final()
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the race's final frame", func() bool { mu.Lock(); defer mu.Unlock(); return final })
	if largest == 0 || largest > 64<<10 {
		t.Fatalf("largest live frame: %d bytes", largest)
	}
	// Late in a long race: 4 lanes with 1,000 turns each of timings.
	var stages []rollout.StageTime
	for _, g := range api.WaterfallGroups {
		stages = append(stages, rollout.StageTime{Name: g.Name, DurationNS: 123456789, Kind: api.Modelled})
	}
	snap := rollout.Snapshot{RunID: "run_x", Status: rollout.StatusRunning, Config: rollout.Config{Scenario: rollout.WorkloadScenario, Lanes: rollout.DefaultLanes}}
	for _, lane := range rollout.DefaultLanes {
		ls := rollout.LaneSnapshot{Lane: lane, Turn: 1000}
		for i := range 1000 {
			ls.Turns = append(ls.Turns, rollout.Turn{Lane: lane, Index: i, ResponseID: "resp_0123456789abcdef0123456789abcdef", SentNS: 123456789012,
				FirstTokenNS: 123456789012, LastTokenNS: 123456789012, DoneNS: 123456789012, ToolNS: 1234567890, SentUnixNS: 1796415121123456789,
				InputTokens: 123456, CachedTokens: 123000, OutputTokens: 1234, Stages: stages, OverheadNS: 1234567,
				StackWork: []apistack.Work{{Stage: api.StageStackClassify, Tokens: 123456}, {Stage: api.StageStackBilling}},
				Calls:     []rollout.Call{{Name: "replay", CallID: "call_0123456789abcdef01234567", Arguments: "{}"}}})
		}
		snap.Lanes = append(snap.Lanes, ls)
	}
	b, _ := json.Marshal(tp.pg.liveFrame(snap))
	t.Logf("a frame of 4 lanes at turn 1,000: %d bytes", len(b))
	if len(b) > 64<<10 || !strings.Contains(string(b), `"index":999`) {
		t.Fatalf("a frame of 4 lanes at turn 1,000: %d bytes", len(b))
	}
}

// failingRunStore is a store whose workload saves fail as a full disk does.
type failingRunStore struct{ *sqlite.DB }

func (failingRunStore) SaveWorkload(context.Context, *store.Workload) error {
	return fmt.Errorf("store: save workload: %w", store.ErrFull)
}

// TestRaceStorageFailure: a race whose workload cannot be stored is a 503
// that says so and why, and leaves no run.
func TestRaceStorageFailure(t *testing.T) {
	_, db := validatingRunner(t)
	runner := rollout.NewRunner("http://127.0.0.1:1", failingRunStore{db}, nil)
	t.Cleanup(func() { runner.Shutdown(context.Background()) })
	tp := &testPlayground{pg: New(Deps{Races: runner, Runs: StoreRuns(db), Workloads: db}), e: newEcho()}
	tp.pg.Register(tp.e)
	rec := tp.do(http.MethodPost, "/api/runs", `{"workload":`+testWorkload+`}`, jsonHeader)
	e := decodeAPIError(t, rec.Body.Bytes())
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(e.Error.Message, "could not be stored: the disk is full") {
		t.Fatalf("failed race storage: %d %s", rec.Code, rec.Body)
	}
	if runs, _, err := db.ListRuns(context.Background(), store.RunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("stored %d runs (%v)", len(runs), err)
	}
}
