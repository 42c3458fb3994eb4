package app_test

import (
	"strings"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
)

// serve --context-window reaches the playground as the engine serves it:
// a workload upload and a race are held to the served window, not the
// profiles' own (which hold this 1,200-token workload whole), and the
// race form's compaction threshold stops at it.
func TestPlaygroundReadsTheServedContextWindow(t *testing.T) {
	a := apptest.Start(t, func(c *app.Config) { c.ContextWindow = 1000 })
	header := map[string]string{"Content-Type": "application/json"}
	w := `{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":600}],"output_tokens":10},{"input":[{"kind":"user_message","tokens":600}],"output_tokens":10}]}`
	if resp, body := do(t, "POST", a.URL()+"/api/workloads", w, header); resp.StatusCode != 400 || !strings.Contains(body, "turns[1]") {
		t.Errorf("upload of a workload over the served window: %d %s", resp.StatusCode, body)
	}
	run := `{"workload":` + w + `,"profile":"classic","lanes":["ws"],"compact_threshold":2000}`
	if resp, body := do(t, "POST", a.URL()+"/api/runs", run, header); resp.StatusCode != 400 || !strings.Contains(body, `"param":"compact_threshold"`) {
		t.Errorf("a race whose threshold passes the served window: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", a.URL()+"/race", "", nil); resp.StatusCode != 200 || !strings.Contains(body, `name="compact_threshold" type="number" min="1" max="1000"`) {
		t.Errorf("the race form's compaction threshold: %d", resp.StatusCode)
	}
}
