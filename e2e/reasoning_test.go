package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

// TestRaceFormReasoning races with reasoning from the form's "More
// settings": the lane reasons every turn, and the permalink's settings and
// the run's config carry the option.
func TestRaceFormReasoning(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	page := newPage(t)
	shortWSRaceForm(t, page, a.URL())
	choose(t, page.GetByTestId("race-reasoning-effort"), "low", "reason at low effort")
	choose(t, page.GetByTestId("race-reasoning-summary"), "auto", "with a summary")
	check(t, page.GetByTestId("race-start").Click(), "start")
	raceEnds(t, page)
	check(t, expect.Locator(page.GetByTestId("lane-ws").GetByTestId("lane-status")).ToHaveText("passed"), "the ws lane passed")
	runID, err := page.Locator("#race-view").GetAttribute("data-run")
	check(t, err, "read the run id")
	goTo(t, page, a.URL()+"/runs/"+runID)
	check(t, expect.Locator(page.Locator(".fields")).ToContainText("effort low, summary auto"), "the permalink's settings name the reasoning")

	res, err := http.Get(a.URL() + "/api/runs/" + runID)
	check(t, err, "GET the run")
	defer res.Body.Close()
	var run struct {
		Config struct {
			Reasoning *struct{ Effort, Summary string } `json:"reasoning"`
		} `json:"config"`
		Turns []struct {
			Index           int `json:"index"`
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"turns"`
	}
	check(t, json.NewDecoder(res.Body).Decode(&run), "decode the run")
	if r := run.Config.Reasoning; r == nil || r.Effort != "low" || r.Summary != "auto" {
		t.Fatalf("the run's reasoning: %+v", r)
	}
	for _, tu := range run.Turns {
		if tu.Index >= 0 && tu.ReasoningTokens <= 0 {
			t.Fatalf("turn %d reasoned %d tokens", tu.Index, tu.ReasoningTokens)
		}
	}
}

// shortWSRaceForm opens the race form of the app at url and fills in a
// short race on the ws lane alone (the shortest scenario, instant, no
// round trip), with "More settings" open.
func shortWSRaceForm(t *testing.T, page playwright.Page, url string) {
	t.Helper()
	goTo(t, page, url+"/race")
	check(t, expect.Locator(page.Locator(`html[data-ready="race"]`)).ToHaveCount(1), "race script ready")
	choose(t, page.GetByTestId("race-scenario"), "quick-fix", "choose the scenario")
	choose(t, page.GetByTestId("race-profile"), "instant", "choose the profile")
	check(t, page.GetByTestId("race-rtt").Fill("0"), "set the round trip")
	for _, l := range []string{"http", "http-optimized", "http-chained"} {
		check(t, page.Locator(`input[name="lanes"][value="`+l+`"]`).Uncheck(), "leave out "+l)
	}
	check(t, page.Locator(`input[name="lanes"][value="ws"]`).Check(), "race ws")
	check(t, page.Locator("details.more > summary").Click(), "open more settings")
}
