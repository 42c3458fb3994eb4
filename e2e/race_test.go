package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

var lanes = []string{"http", "http-optimized", "http-chained", "ws"}

// TestRaceThenRestart starts a fast race from the form and watches it to
// the end (every lane passes its success check), then restarts the server on
// the same database and finds the run with its transcript. One race serves
// both: under -race on two shared cores a race takes most of a minute.
func TestRaceThenRestart(t *testing.T) {
	startBrowserTest(t)
	db := filepath.Join(t.TempDir(), "agentloop.db")
	first := apptest.Start(t, apptest.DB(db))
	page := newPage(t)
	var runID string

	t.Run("race", func(t *testing.T) {
		goTo(t, page, first.URL()+"/race")
		choose(t, page.GetByTestId("race-scenario"), "quick-fix", "choose the scenario (the shortest)")
		choose(t, page.GetByTestId("race-profile"), "instant", "choose the profile (no modelled decode: the figure is not the point here)")
		check(t, page.GetByTestId("race-rtt").Fill("0"), "set the round trip")
		check(t, page.GetByLabel("Tool time (ms)").Fill("0"), "set the tool time")
		// The form defaults to the fair order and the hosted stack; this race
		// runs its lanes side by side, so the headline must say so.
		check(t, expect.Locator(page.GetByTestId("race-stack")).ToHaveValue("hosted-post-sprint"), "the post-sprint fitted stack by default")
		check(t, page.Locator("details.more > summary").Click(), "open more settings")
		check(t, expect.Locator(page.Locator("#race-stack-hop_ms")).ToHaveValue("2.65"), "stack parameters filled from the preset")
		check(t, page.Locator(`input[name="sequential"]`).Uncheck(), "run the lanes side by side")
		for _, l := range lanes {
			box := page.Locator(`input[name="lanes"][value="` + l + `"]`)
			check(t, expect.Locator(box).ToBeChecked(), "lane "+l+" checked")
		}
		check(t, page.GetByTestId("race-start").Click(), "start")

		// Live: the lanes appear and the page says they share the cores.
		check(t, expect.Locator(page.GetByTestId("lane-ws")).ToBeVisible(), "ws lane shown")
		check(t, expect.Locator(page.Locator("#race-fairness")).ToContainText("share the"), "fairness note")

		summary := raceEnds(t, page)
		check(t, expect.Locator(summary).ToContainText("WebSocket finished"), "summary text")
		check(t, expect.Locator(summary).ToContainText(" and optimized HTTP in "), "summary text")
		check(t, expect.Locator(summary).ToContainText(" was measured on this machine"), "summary says what was measured")
		check(t, expect.Locator(summary).ToContainText("(preset hosted-post-sprint, post-sprint reading)"), "summary names the preset and its reading")
		check(t, expect.Locator(summary).ToContainText("shared the CPU"), "summary says the lanes shared the CPU")
		check(t, expect.Locator(page.GetByTestId("race-time-went")).ToContainText("; HTTP optimized: "), "where the time went, by lane label")
		check(t, expect.Locator(page.GetByTestId("race-time-went")).Not().ToContainText("http-optimized"), "no lane ids in where the time went")
		for _, l := range lanes {
			st := page.GetByTestId("lane-" + l).GetByTestId("lane-status")
			check(t, expect.Locator(st).ToHaveText("passed"), "lane "+l+" passed")
			bars := page.GetByTestId("lane-" + l).Locator("svg.waterfall rect.stage-overhead")
			if n, err := bars.Count(); err != nil || n == 0 {
				t.Errorf("lane %s: %d overhead bars in its waterfall (%v)", l, n, err)
			}
		}
		check(t, expect.Locator(page.Locator("#overhead-chart path.line")).ToHaveCount(len(lanes)), "one overhead line per lane")
		u := page.URL()
		if i := strings.Index(u, "run="); i < 0 || !strings.HasPrefix(u[i+4:], "run_") {
			t.Fatalf("the URL %q does not name the run", u)
		} else {
			runID = u[i+4:]
		}
		screenshot(t, page, "race.png")

		// The same run reloaded renders from the store.
		_, err := page.Reload()
		check(t, err, "reload")
		check(t, expect.Locator(page.GetByTestId("race-summary")).ToContainText("WebSocket finished"), "summary after reload")
		check(t, expect.Locator(page.GetByTestId("lane-http").GetByTestId("lane-status")).ToHaveText("passed"), "stored lane status")

		check(t, page.SetViewportSize(390, 844), "phone width")
		check(t, expect.Locator(page.GetByTestId("race-summary")).ToBeVisible(), "summary at phone width")
		noHorizontalScroll(t, page)
		screenshot(t, page, "race-phone.png")
		check(t, page.SetViewportSize(1280, 900), "desktop width")
	})
	if runID == "" {
		t.Fatal("no run to find after the restart")
	}

	t.Run("restart", func(t *testing.T) {
		if err := first.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		// On the same address: the page keeps the run's cancel token for
		// this origin, and the token outlives the restart.
		addr := strings.TrimPrefix(first.URL(), "http://")
		second := apptest.Start(t, apptest.DB(db), func(c *app.Config) { c.Addr = addr })
		goTo(t, page, second.URL()+"/runs")
		row := page.Locator(`[data-testid="run-row"][data-run="` + runID + `"]`)
		check(t, expect.Locator(row).ToBeVisible(), "run listed after the restart")
		check(t, expect.Locator(row).ToContainText("passed"), "run status listed")
		check(t, row.GetByRole("link").First().Click(), "open the run")

		check(t, expect.Locator(page.Locator("h1")).ToContainText(runID), "run page")
		check(t, expect.Locator(page.Locator(".summary .headline")).ToContainText("WebSocket finished"), "summary")
		// The transcript: every lane's responses, tool calls and real outputs.
		// The page is long and the browser shows it as it arrives, so wait
		// for it to have loaded before counting.
		check(t, page.WaitForLoadState(), "the run page loaded")
		check(t, expect.Locator(page.Locator(".lane-transcript")).ToHaveCount(len(lanes)), "one transcript per lane")
		if n, err := page.Locator(".turn").Count(); err != nil || n < 4*len(lanes) {
			t.Fatalf("%d turns in the transcript (%v)", n, err)
		}
		if n, err := page.Locator(".call pre.output").Count(); err != nil || n == 0 {
			t.Fatalf("%d tool outputs in the transcript (%v)", n, err)
		}
		// The timeline draws from GET /api/runs/{id} and replays.
		check(t, expect.Locator(page.Locator("#timeline-lanes svg")).ToHaveCount(len(lanes)), "one timeline per lane")
		check(t, expect.Locator(page.Locator("#timeline-lanes rect.stage-decode").First()).ToBeAttached(), "timeline bars")
		check(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "16×"}).Click(), "replay at 16x")
		check(t, expect.Locator(page.Locator("#replay-clock")).ToContainText(" of "), "replay clock")
		check(t, page.Locator("#replay-stop").Click(), "show all")
		check(t, expect.Locator(page.Locator("#replay-clock")).ToContainText("Total"), "replay stopped")
		check(t, page.Locator(".lane-transcript summary").Last().Click(), "open the WebSocket transcript")
		screenshot(t, page, "run-detail.png")

		page.OnDialog(func(d playwright.Dialog) { d.Accept() })
		check(t, page.Locator("#run-delete").Click(), "delete")
		check(t, page.WaitForURL(second.URL()+"/runs"), "back to the list")
		check(t, expect.Locator(page.Locator(`[data-testid="run-row"][data-run="`+runID+`"]`)).ToHaveCount(0), "run deleted")
		res, err := http.Get(second.URL() + "/api/runs/" + runID)
		check(t, err, "get the deleted run")
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET a deleted run: %d", res.StatusCode)
		}
	})
}
