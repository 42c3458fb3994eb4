package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"agentloop/app"

	"github.com/mxschmitt/playwright-go"
)

// TestRunSurvivesRestart stores a race, restarts the server on the same
// database, and finds the run with its transcript; then replays and deletes it.
func TestRunSurvivesRestart(t *testing.T) {
	needBrowser(t)
	db := filepath.Join(t.TempDir(), "agentloop.db")
	first := startApp(t, db, nil)
	id := startRace(t, first.URL(), `{"scenario":"fix-failing-test","profile":"burst","rtt_ms":0,"tool_time_ms":0,"lanes":["http","ws"]}`)
	if status := waitRun(t, first.URL(), id, 2*time.Minute); status != "passed" {
		t.Fatalf("run %s ended %s", id, status)
	}
	if err := first.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	second := startApp(t, db, nil)
	page := newPage(t)
	goTo(t, page, second.URL()+"/runs")
	row := page.Locator(`[data-testid="run-row"][data-run="` + id + `"]`)
	check(t, expect.Locator(row).ToBeVisible(), "run listed after the restart")
	check(t, expect.Locator(row).ToContainText("passed"), "run status listed")
	check(t, row.GetByRole("link").First().Click(), "open the run")

	check(t, expect.Locator(page.Locator("h1")).ToContainText(id), "run page")
	check(t, expect.Locator(page.Locator(".summary .headline")).ToContainText("WebSocket finished"), "summary")
	// The transcript: responses with tool calls and their real outputs.
	turns := page.Locator(".turn")
	if n, err := turns.Count(); err != nil || n < 4 {
		t.Fatalf("%d turns in the transcript (%v)", n, err)
	}
	calls := page.Locator(".call pre.output")
	if n, err := calls.Count(); err != nil || n == 0 {
		t.Fatalf("%d tool outputs in the transcript (%v)", n, err)
	}
	// The timeline draws from GET /api/runs/{id} and replays.
	check(t, expect.Locator(page.Locator("#timeline-lanes svg")).ToHaveCount(2), "two lane timelines")
	bars := page.Locator("#timeline-lanes rect.stage-decode")
	check(t, expect.Locator(bars.First()).ToBeAttached(), "timeline bars")
	check(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "16×"}).Click(), "replay at 16x")
	check(t, expect.Locator(page.Locator("#replay-clock")).ToContainText("of"), "replay clock")
	check(t, page.Locator("#replay-stop").Click(), "show all")
	check(t, expect.Locator(page.Locator("#replay-clock")).ToContainText("Total"), "replay stopped")
	screenshot(t, page, "run-detail.png")

	page.OnDialog(func(d playwright.Dialog) { d.Accept() })
	check(t, page.Locator("#run-delete").Click(), "delete")
	check(t, page.WaitForURL(second.URL()+"/runs"), "back to the list")
	check(t, expect.Locator(page.Locator(`[data-testid="run-row"][data-run="`+id+`"]`)).ToHaveCount(0), "run deleted")
	res, err := http.Get(second.URL() + "/api/runs/" + id)
	check(t, err, "get the deleted run")
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET a deleted run: %d", res.StatusCode)
	}
}

// TestLoginWithKey: with --api-key, a page asks for the key once; the cookie
// then opens the pages and the engine over HTTP.
func TestLoginWithKey(t *testing.T) {
	needBrowser(t)
	a := startApp(t, filepath.Join(t.TempDir(), "agentloop.db"), func(c *app.Config) { c.APIKey = "sk-e2e" })
	// Browsers log refused requests (401) as console errors; only those are allowed here.
	page := newPage(t, "status of 401")
	res, err := page.Goto(a.URL() + "/explorer")
	check(t, err, "open the explorer")
	if res.Status() != http.StatusUnauthorized {
		t.Errorf("without the key: %d", res.Status())
	}
	check(t, page.GetByLabel("API key").Fill("wrong"), "type a wrong key")
	check(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Sign in"}).Click(), "sign in")
	check(t, expect.Locator(page.Locator("#login-error")).ToContainText("Incorrect API key"), "wrong key refused")
	page2 := newPage(t, "status of 401")
	goTo(t, page2, a.URL()+"/explorer")
	check(t, page2.GetByLabel("API key").Fill("sk-e2e"), "type the key")
	check(t, page2.GetByLabel("API key").Press("Enter"), "submit")
	check(t, expect.Locator(page2.GetByTestId("explorer-body")).ToBeVisible(), "explorer after login")
	check(t, page2.GetByTestId("explorer-send-http").Click(), "send over HTTP")
	check(t, expect.Locator(page2.Locator(`[data-testid="event"][data-type="response.completed"]`)).ToHaveCount(1), "response over the cookie")
}

func startRace(t *testing.T, base, body string) string {
	t.Helper()
	res, err := http.Post(base+"/api/runs", "application/json", bytes.NewBufferString(body))
	check(t, err, "POST /api/runs")
	defer res.Body.Close()
	var out struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK || out.ID == "" {
		t.Fatalf("POST /api/runs: %d %v %q", res.StatusCode, err, out.ID)
	}
	return out.ID
}

// waitRun polls the run until it ends and returns its status.
func waitRun(t *testing.T, base, id string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/api/runs/" + id)
		check(t, err, "GET the run")
		var run struct {
			Status string `json:"status"`
		}
		err = json.NewDecoder(res.Body).Decode(&run)
		res.Body.Close()
		check(t, err, "decode the run")
		switch run.Status {
		case "passed", "failed", "interrupted":
			return run.Status
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("run %s did not end in %v", id, limit)
	return ""
}
