package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"agentloop/rollout"
)

const testWorkload = `{"version":1,"source":"hand","instructions_tokens":10,"tools_tokens":5,"tools":1,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":4}]}`

// TestWorkloadsAPI: a workload uploads to a permalink that serves it back,
// lists, races by workload_id, and deletes; a bad one is a 400 naming the
// field; a race sent with its workload inline stores it too.
func TestWorkloadsAPI(t *testing.T) {
	_, db := validatingRunner(t)
	tp := &testPlayground{pg: New(Deps{Races: &fakeRaces{running: map[string]bool{}}, Runs: StoreRuns(db), Workloads: db}), e: newEcho()}
	tp.pg.Register(tp.e)

	rec := tp.do(http.MethodPost, "/api/workloads", `{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":0}],"output_tokens":4}]}`, jsonHeader)
	if e := decodeAPIError(t, rec.Body.Bytes()); rec.Code != 400 || deref(e.Error.Param) != "workload" || !strings.Contains(e.Error.Message, "turns[0].input[0].tokens") {
		t.Fatalf("bad workload: %d %s", rec.Code, rec.Body)
	}
	rec = tp.do(http.MethodPost, "/api/workloads", testWorkload, jsonHeader)
	var info workloadInfo
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &info) != nil || info.Turns != 1 || info.Source != "hand" || info.URL != "/api/workloads/"+info.ID {
		t.Fatalf("upload: %d %s", rec.Code, rec.Body)
	}
	rec = tp.do(http.MethodGet, info.URL, "", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"instructions_tokens": 10`) {
		t.Fatalf("permalink: %d %s", rec.Code, rec.Body)
	}
	if rec := tp.do(http.MethodGet, "/api/workloads", "", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), info.ID) {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	// A race by id gets the workload; an unknown id is a 400 naming it.
	races := tp.pg.races.(*fakeRaces)
	if rec := tp.do(http.MethodPost, "/api/runs", `{"workload_id":"`+info.ID+`","profile":"instant"}`, jsonHeader); rec.Code != 200 {
		t.Fatalf("race by id: %d %s", rec.Code, rec.Body)
	}
	if got := races.started[0]; got.Workload == nil || got.Workload.InstructionsTokens != 10 {
		t.Fatalf("raced %+v", got)
	}
	rec = tp.do(http.MethodPost, "/api/runs", `{"workload_id":"wl_nope"}`, jsonHeader)
	if e := decodeAPIError(t, rec.Body.Bytes()); rec.Code != 400 || deref(e.Error.Param) != "workload_id" {
		t.Fatalf("unknown id: %d %s", rec.Code, rec.Body)
	}
	// An inline workload is stored, and the run names it.
	if rec := tp.do(http.MethodPost, "/api/runs", `{"workload":`+testWorkload+`}`, jsonHeader); rec.Code != 200 {
		t.Fatalf("inline: %d %s", rec.Code, rec.Body)
	}
	if got := races.started[1]; got.WorkloadID == "" || got.Scenario != rollout.WorkloadScenario {
		t.Fatalf("inline race %+v", got)
	}
	if _, err := db.GetWorkload(context.Background(), races.started[1].WorkloadID); err != nil {
		t.Fatal(err)
	}
	if rec := tp.do(http.MethodDelete, info.URL, "", nil); rec.Code != 200 {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if rec := tp.do(http.MethodGet, info.URL, "", nil); rec.Code != 404 {
		t.Fatalf("after delete: %d", rec.Code)
	}
}
