package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A workload that no model's context window holds whole is refused at
// upload, naming the turn that passes the largest (classic's 400,000).
func TestUploadRefusesAWorkloadNoWindowHolds(t *testing.T) {
	_, db := validatingRunner(t)
	tp := &testPlayground{pg: New(Deps{Races: &fakeRaces{running: map[string]bool{}}, Runs: StoreRuns(db), Workloads: db}), e: newEcho()}
	tp.pg.Register(tp.e)
	turns := []string{`{"input":[{"kind":"user_message","tokens":200000}],"output_tokens":1}`}
	for range 2 {
		turns = append(turns, `{"input":[{"kind":"user_message","tokens":150000}],"output_tokens":1}`)
	}
	body := fmt.Sprintf(`{"version":1,"instructions_tokens":10,"tools_tokens":0,"tools":0,"turns":[%s]}`, strings.Join(turns, ","))
	rec := tp.do(http.MethodPost, "/api/workloads", body, jsonHeader)
	if e := decodeAPIError(t, rec.Body.Bytes()); rec.Code != 400 || deref(e.Error.Param) != "workload" || !strings.Contains(e.Error.Message, "turns[2]") ||
		!strings.Contains(e.Error.Message, "context window") {
		t.Fatalf("a workload past every window: %d %s", rec.Code, rec.Body)
	}
	fits := fmt.Sprintf(`{"version":1,"instructions_tokens":10,"tools_tokens":0,"tools":0,"turns":[%s]}`, strings.Join(turns[:2], ","))
	if rec := tp.do(http.MethodPost, "/api/workloads", fits, jsonHeader); rec.Code != 200 {
		t.Fatalf("a 350k-token workload: %d %s", rec.Code, rec.Body)
	}
}
