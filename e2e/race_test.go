package e2e

import (
	"path/filepath"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

var lanes = []string{"http", "http-optimized", "http-chained", "ws"}

// TestRaceInBrowser starts a fast race from the form and watches it to the
// end: every lane passes its success check, the summary and the overhead
// chart appear, and the view fits a phone's width.
func TestRaceInBrowser(t *testing.T) {
	needBrowser(t)
	a := startApp(t, filepath.Join(t.TempDir(), "agentloop.db"), nil)
	page := newPage(t)
	goTo(t, page, a.URL()+"/race")

	_, err := page.GetByTestId("race-scenario").SelectOption(playwright.SelectOptionValues{Values: &[]string{"fix-failing-test"}})
	check(t, err, "choose the scenario")
	_, err = page.GetByTestId("race-profile").SelectOption(playwright.SelectOptionValues{Values: &[]string{"burst"}})
	check(t, err, "choose the profile")
	check(t, page.GetByTestId("race-rtt").Fill("0"), "set the round trip")
	check(t, page.GetByLabel("Tool time (ms)").Fill("0"), "set the tool time")
	for _, l := range lanes {
		box := page.Locator(`input[name="lanes"][value="` + l + `"]`)
		check(t, expect.Locator(box).ToBeChecked(), "lane "+l+" checked")
	}
	check(t, page.GetByTestId("race-start").Click(), "start")

	// Live: the lanes appear and say they run together on shared cores.
	check(t, expect.Locator(page.GetByTestId("lane-ws")).ToBeVisible(), "ws lane shown")
	check(t, expect.Locator(page.Locator("#race-fairness")).ToContainText("share the"), "fairness note")

	summary := page.GetByTestId("race-summary")
	check(t, expect.Locator(summary).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(120000)}), "race summary")
	check(t, expect.Locator(summary).ToContainText("WebSocket finished"), "summary text")
	check(t, expect.Locator(summary).ToContainText("than HTTP"), "summary text")
	for _, l := range lanes {
		st := page.GetByTestId("lane-" + l).GetByTestId("lane-status")
		check(t, expect.Locator(st).ToHaveText("passed"), "lane "+l+" passed")
		bars := page.GetByTestId("lane-" + l).Locator("svg.waterfall rect.stage-overhead")
		if n, err := bars.Count(); err != nil || n == 0 {
			t.Errorf("lane %s: %d overhead bars in its waterfall (%v)", l, n, err)
		}
	}
	lines := page.Locator("#overhead-chart path.line")
	check(t, expect.Locator(lines).ToHaveCount(len(lanes)), "one overhead line per lane")
	if u := page.URL(); !containsRun(u) {
		t.Errorf("the URL %q does not name the run", u)
	}
	screenshot(t, page, "race.png")

	// The same run reloaded renders from the store.
	_, err = page.Reload()
	check(t, err, "reload")
	check(t, expect.Locator(page.GetByTestId("race-summary")).ToContainText("WebSocket finished"), "summary after reload")
	check(t, expect.Locator(page.GetByTestId("lane-http").GetByTestId("lane-status")).ToHaveText("passed"), "stored lane status")

	check(t, page.SetViewportSize(390, 844), "phone width")
	check(t, expect.Locator(page.GetByTestId("race-summary")).ToBeVisible(), "summary at phone width")
	noHorizontalScroll(t, page)
	screenshot(t, page, "race-phone.png")
}

func containsRun(u string) bool {
	for i := 0; i+8 < len(u); i++ {
		if u[i:i+8] == "run=run_" {
			return true
		}
	}
	return false
}
