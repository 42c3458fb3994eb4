package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"testing"

	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

// drilledTurn is the part of a run's turn that names the drills that hit it.
type drilledTurn struct {
	Drills []string `json:"drills"`
}

// TestRaceFormDrillSchedule gives a race a drill from the form's "More
// settings": a drill on a lane the race does not run is refused on that
// field; on the ws lane it fires, the lane recovers and the run's config
// and turns carry it. axe-core finds nothing serious in the schedule.
func TestRaceFormDrillSchedule(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	// The refused start logs its 400.
	page := newAxePage(t, playwright.BrowserNewContextOptions{}, "status of 400")
	shortWSRaceForm(t, page, a.URL())
	add := page.GetByTestId("race-drill-add")
	check(t, add.Click(), "add a drill")
	check(t, add.Click(), "add another")
	rows := page.GetByTestId("race-drill")
	check(t, expect.Locator(rows).ToHaveCount(2), "two rows")
	check(t, rows.Nth(1).GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Remove drill 2"}).Click(), "remove the second")
	check(t, expect.Locator(rows).ToHaveCount(1), "one row")

	lane := page.Locator("#race-drill-0-lane")
	// The first row comes valid: a ws drill on the ws lane, the one lane run.
	check(t, expect.Locator(lane).ToHaveValue("ws"), "the first row's lane is one the race runs")
	check(t, expect.Locator(page.Locator("#race-drill-0-drill")).ToHaveValue("evict-cache"), "and a drill that can hit it")
	choose(t, lane, "http", "a lane the race does not run")
	choose(t, page.GetByLabel("Drill", playwright.PageGetByLabelOptions{Exact: playwright.Bool(true)}), "evict-cache", "choose evict-cache")
	after := page.GetByLabel("After turns")
	check(t, after.Fill(""), "empty after turns")
	check(t, page.GetByTestId("race-start").Click(), "start")
	check(t, expect.Locator(page.Locator("#race-drill-0-after_turns-error")).ToContainText("Drill 1, After turns is empty"), "an empty count is refused on its field")
	check(t, expect.Locator(after).ToBeFocused(), "focus on the field")
	check(t, after.Fill("2"), "after two turns")
	check(t, expect.Locator(after).Not().ToHaveAttribute("aria-invalid", "true"), "the fixed field is valid again")
	check(t, page.GetByTestId("race-start").Click(), "start")
	check(t, expect.Locator(lane).ToHaveAttribute("aria-invalid", "true"), "the lane is marked")
	check(t, expect.Locator(lane).ToHaveAttribute("aria-describedby", "race-drill-0-lane-error"), "the error is tied to it")
	check(t, expect.Locator(page.Locator("#race-drill-0-lane-error")).ToContainText("Drill 1, Lane: Lane 'http' is not in the race's lanes"), "the error names the field")
	check(t, expect.Locator(page.Locator("#race-view")).ToBeHidden(), "no race started")
	axeCheck(t, page, "race form with a refused drill")

	choose(t, lane, "ws", "the ws lane")
	check(t, page.GetByTestId("race-start").Click(), "start")
	raceEnds(t, page)
	check(t, expect.Locator(page.GetByTestId("lane-ws").GetByTestId("lane-status")).ToHaveText("passed"), "the ws lane recovered and passed")

	runID, err := page.Locator("#race-view").GetAttribute("data-run")
	check(t, err, "read the run id")

	// The drill's firing, in words: in the lane's turn table, and on a
	// labelled marker of the waterfall that the keyboard reaches.
	ws := page.GetByTestId("lane-ws")
	check(t, expect.Locator(ws.Locator(".chart-data table")).ToContainText("drill evict-cache"), "the lane's table names the drill")
	check(t, expect.Locator(ws.Locator(".chart-data thead")).ToContainText("Drill and recovery"), "a drill column")
	mark := ws.GetByTestId("drill-mark").First()
	check(t, expect.Locator(mark).ToBeVisible(), "a marker on the waterfall")
	check(t, expect.Locator(mark).ToHaveAttribute("aria-label", regexp.MustCompile(`^Turn \d+: drill evict-cache`)), "the marker is labelled")
	check(t, expect.Locator(mark.Locator("text")).ToContainText("evict-cache"), "the marker says its drill")
	check(t, expect.Locator(page.GetByTestId("race-links")).ToBeVisible(), "the permalink is there")
	check(t, page.Locator("#race-detail-link").Focus(), "focus the permalink")
	tabTo(t, page, `[data-testid="lane-ws"] [data-testid="drill-mark"]`)
	screenshot(t, page, "drilled-race.png")
	axeCheck(t, page, "a drilled race's result")
	goTo(t, page, a.URL()+"/runs/"+runID)
	check(t, expect.Locator(page.Locator(".fields")).ToContainText("evict-cache on WebSocket after 2 turns"), "the permalink's settings list the drill")
	check(t, expect.Locator(page.Locator(`#timeline-lanes [data-lane="ws"] .chart-data table`)).ToContainText("drill evict-cache"), "the permalink's turn table names the drill")
	check(t, expect.Locator(page.Locator(`#timeline-lanes [data-lane="ws"] [data-testid="drill-mark"]`).First()).ToBeVisible(), "the permalink's waterfall marks it")
	screenshot(t, page, "drilled-run.png")
	res, err := http.Get(a.URL() + "/api/runs/" + runID)
	check(t, err, "GET the run")
	defer res.Body.Close()
	var run struct {
		Config struct {
			Drills []struct {
				Drill, Lane string
				AfterTurns  int `json:"after_turns"`
			} `json:"drills"`
		} `json:"config"`
		Turns []drilledTurn `json:"turns"`
	}
	check(t, json.NewDecoder(res.Body).Decode(&run), "decode the run")
	if d := run.Config.Drills; len(d) != 1 || d[0].Drill != "evict-cache" || d[0].Lane != "ws" || d[0].AfterTurns != 2 {
		t.Fatalf("the run's drills: %+v", d)
	}
	if !slices.ContainsFunc(run.Turns, func(tu drilledTurn) bool { return slices.Contains(tu.Drills, "evict-cache") }) {
		t.Error("no turn names the drill that hit it")
	}
}
