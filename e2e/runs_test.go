package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/internal/wait"

	"github.com/mxschmitt/playwright-go"
)

// TestRaceStartedByAPI: a race posted to the run API (as `agentloop race
// --server URL` does) shows live in the browser, joined mid-race.
func TestRaceStartedByAPI(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	id := startRace(t, a.URL(), `{"scenario":"quick-fix","profile":"burst","rtt_ms":0,"tool_time_ms":0,"lanes":["ws"]}`)
	page := newPage(t)
	goTo(t, page, a.URL()+"/race?run="+id)
	lane := page.GetByTestId("lane-ws")
	check(t, expect.Locator(lane).ToBeVisible(), "lane shown")
	check(t, expect.Locator(page.GetByTestId("lane-http")).ToHaveCount(0), "only the lanes of the run")
	check(t, expect.Locator(page.GetByTestId("race-summary")).ToContainText("WebSocket finished first",
		playwright.LocatorAssertionsToContainTextOptions{Timeout: playwright.Float(180000)}), "summary")
	check(t, expect.Locator(lane.GetByTestId("lane-status")).ToHaveText("passed"), "lane passed")
	if status := waitRun(t, a.URL(), id, 10*time.Second); status != "passed" {
		t.Errorf("stored status %s", status)
	}
}

// TestTakeTurnsRaceMovesLive: a race whose lanes take turns, joined
// live, moves every runner on the track at once (both lanes are running
// on it together before either finishes, drawn at the race clock), then
// gives each lane its place.
func TestTakeTurnsRaceMovesLive(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	id := startRace(t, a.URL(), `{"scenario":"quick-fix","profile":"burst","rtt_ms":0,"tool_time_ms":0,"lanes":["http-optimized","ws"],"take_turns":true,"stack":"hosted-post-sprint"}`)
	page := newPage(t)
	goTo(t, page, a.URL()+"/race?run="+id)
	track := page.GetByTestId("race-track")
	both := track.Locator(`.track-row[data-state="running"]`)
	check(t, expect.Locator(both).ToHaveCount(2, playwright.LocatorAssertionsToHaveCountOptions{Timeout: playwright.Float(raceDeadline)}), "both lanes running on the track at once")
	raceEnds(t, page)
	check(t, expect.Locator(track.Locator(`.track-row[data-lane="ws"] .track-result`)).ToContainText("1st"), "WebSocket's place")
	check(t, expect.Locator(track.Locator(`.track-row[data-state="finished"]`)).ToHaveCount(2), "both lanes crossed")
}

// TestLoginWithKey: with --api-key, a page asks for the key once; the
// session cookie then opens the pages and the engine over HTTP, until Sign
// out.
func TestLoginWithKey(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t, func(c *app.Config) { c.APIKey = "sk-e2e" })
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
	check(t, expect.Locator(page2.Locator(`html[data-ready="explorer"]`)).ToHaveCount(1), "explorer script ready")
	check(t, page2.GetByTestId("explorer-send-http").Click(), "send over HTTP")
	check(t, expect.Locator(page2.Locator(`[data-testid="event"][data-type="response.completed"]`)).ToHaveCount(1), "response over the cookie")
	// Sign out ends the session: the next page asks for the key again.
	check(t, page2.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Sign out"}).Click(), "sign out")
	check(t, expect.Locator(page2.Locator("#login-form")).ToBeVisible(), "login page after signing out")
}

// startRace posts a race to the run API, as `agentloop race --server` does.
func startRace(t *testing.T, base, body string) string {
	t.Helper()
	id, _ := startRaceWith(t, http.DefaultClient, base, body)
	return id
}

// startRaceWith posts a race with client and returns its id and cancel
// token.
func startRaceWith(t *testing.T, client *http.Client, base, body string) (id, token string) {
	t.Helper()
	res, err := client.Post(base+"/api/runs", "application/json", bytes.NewBufferString(body))
	check(t, err, "POST /api/runs")
	defer res.Body.Close()
	var out struct {
		ID          string `json:"id"`
		CancelToken string `json:"cancel_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK || out.ID == "" {
		t.Fatalf("POST /api/runs: %d %v %q", res.StatusCode, err, out.ID)
	}
	return out.ID, out.CancelToken
}

// waitRun polls the run until it ends, for at most limit (a race of
// modelled minutes outlasts wait.Deadline), and returns its status.
func waitRun(t *testing.T, base, id string, limit time.Duration) string {
	t.Helper()
	var status string
	err := wait.Poll(limit, func() error {
		res, err := http.Get(base + "/api/runs/" + id)
		check(t, err, "GET the run")
		var run struct {
			Status string `json:"status"`
		}
		err = json.NewDecoder(res.Body).Decode(&run)
		res.Body.Close()
		check(t, err, "decode the run")
		switch status = run.Status; status {
		case "passed", "failed", "interrupted", "cancelled":
			return nil
		}
		return fmt.Errorf("status %s", status)
	})
	if err != nil {
		t.Fatalf("run %s did not end in %v: %v", id, limit, err)
	}
	return status
}
