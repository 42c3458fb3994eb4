package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestOverlap: a run says which runs ran while it ran, judged by when
// each really sent its requests, not by when it was queued.
func TestOverlap(t *testing.T) {
	tp := newTestPlayground(t)
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	run := func(id string, created, first, end time.Duration) {
		r := fixtureRun(id)
		r.CreatedAt, r.UpdatedAt = t0.Add(created), t0.Add(end)
		for i := range r.Turns {
			r.Turns[i].SentUnixNS = t0.Add(first).UnixNano() + r.Turns[i].SentNS
		}
		tp.runs.runs[id] = r
	}
	run("run_a", 0, 0, 10*time.Second)
	run("run_b", 5*time.Second, 5*time.Second, 20*time.Second)
	// Queued during run_a, but it sent nothing until run_b had ended.
	run("run_c", 8*time.Second, 21*time.Second, 30*time.Second)

	for id, want := range map[string]string{"run_a": "run_b", "run_b": "run_a", "run_c": "", "run_done": ""} {
		rec := tp.do(http.MethodGet, "/ui/runs/"+id+"/overlaps", "", nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", id, rec.Code, rec.Body)
		}
		var got struct {
			With []string `json:"overlapped_with"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got.With, ",") != want {
			t.Errorf("%s overlapped %v, want %q", id, got.With, want)
		}
	}
	page := tp.do(http.MethodGet, "/runs/run_a", "", nil).Body.String()
	if !strings.Contains(page, "This race overlapped run_b: they shared the machine") {
		t.Error("the run page does not say the race overlapped run_b")
	}
	if page := tp.do(http.MethodGet, "/runs/run_c", "", nil).Body.String(); strings.Contains(page, "overlapped") {
		t.Error("run_c, which ran alone, is said to have overlapped")
	}
	if rec := tp.do(http.MethodGet, "/ui/runs/run_nope/overlaps", "", nil); rec.Code != http.StatusNotFound {
		t.Errorf("unknown run: %d", rec.Code)
	}
}

// TestOverlapReadsListRowsOnly: runs that kept when they started are
// judged from their list rows: the permalink's overlap check reads no
// neighbour whole (with its turns).
func TestOverlapReadsListRowsOnly(t *testing.T) {
	tp := newTestPlayground(t)
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	for i := range 15 { // with run_done, fewer than the 20 candidates
		r := fixtureRun(fmt.Sprintf("run_%02d", i))
		r.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		r.StartedAt, r.UpdatedAt = r.CreatedAt.Add(time.Second), r.CreatedAt.Add(3*time.Second)
		tp.runs.runs[r.ID] = r
	}
	rec := tp.do(http.MethodGet, "/ui/runs/run_10/overlaps", "", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"run_09","run_11"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if got := tp.runs.loaded; len(got) != 1 || got[0] != "run_10" {
		t.Fatalf("read whole: %v", got)
	}
}
