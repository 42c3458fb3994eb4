package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"agentloop/app/apptest"
)

// The race form's compaction threshold: one past the served window is
// marked on its field before anything is sent; a valid one, with your own
// workload, reaches the run's config and every lane asks for compaction.
func TestRaceFormCompactThreshold(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	page := newPage(t)
	shortWSRaceForm(t, page, a.URL())
	path := filepath.Join(t.TempDir(), "workload.json")
	w := `{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":400}],"output_tokens":20},{"input":[{"kind":"user_message","tokens":400}],"output_tokens":20},{"input":[{"kind":"user_message","tokens":400}],"output_tokens":20}]}`
	check(t, os.WriteFile(path, []byte(w), 0o644), "write the workload")
	check(t, page.GetByTestId("race-workload").SetInputFiles(path), "choose the workload file")
	field := page.GetByTestId("race-compact-threshold")
	max, err := field.GetAttribute("max")
	check(t, err, "the field's max")
	if max != "400000" {
		t.Fatalf("the threshold's max is %q, want the largest built-in window", max)
	}
	check(t, field.Fill("400001"), "a threshold past every window")
	check(t, page.GetByTestId("race-start").Click(), "start")
	check(t, expect.Locator(field).ToHaveAttribute("aria-invalid", "true"), "the threshold marked invalid")
	check(t, field.Fill("500"), "a threshold")
	check(t, page.GetByTestId("race-start").Click(), "start again")
	check(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/race\?run=run_[0-9a-f]+$`)), "the race starts")
	id := regexp.MustCompile(`run_[0-9a-f]+`).FindString(page.URL())
	if status := waitRun(t, a.URL(), id, 60*time.Second); status != "passed" {
		t.Fatalf("the compacting race %s", status)
	}
	res, err := http.Get(a.URL() + "/api/runs/" + id)
	check(t, err, "GET the run")
	defer res.Body.Close()
	var run struct {
		Config struct {
			CompactThreshold int `json:"compact_threshold"`
		} `json:"config"`
	}
	check(t, json.NewDecoder(res.Body).Decode(&run), "decode the run")
	if run.Config.CompactThreshold != 500 {
		t.Fatalf("the run's compact_threshold: %d", run.Config.CompactThreshold)
	}
}
