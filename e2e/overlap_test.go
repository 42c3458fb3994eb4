package e2e

import (
	"net/http"
	"strings"
	"testing"

	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

// TestOverlappingRaces: starting a race while another runs warns first;
// started anyway, its result names the race it overlapped.
func TestOverlappingRaces(t *testing.T) {
	needBrowser(t)
	a := apptest.Start(t)
	// A slow race (the classic profile) that is still running meanwhile.
	slow := startRace(t, a.URL(), `{"scenario":"config-migration","profile":"classic","lanes":["http"]}`)
	t.Cleanup(func() {
		res, err := http.Post(a.URL()+"/api/runs/"+slow+"/cancel", "application/json", strings.NewReader("{}"))
		if err == nil {
			res.Body.Close()
		}
	})

	page := newPage(t)
	goTo(t, page, a.URL()+"/race")
	check(t, expect.Locator(page.Locator(`html[data-ready="race"]`)).ToHaveCount(1), "race script ready")
	choose(t, page.GetByTestId("race-scenario"), "config-migration", "choose the scenario")
	choose(t, page.GetByTestId("race-profile"), "instant", "choose the profile")
	choose(t, page.GetByTestId("race-stack"), "lean", "choose the stack")
	for _, l := range []string{"http", "http-optimized", "http-chained"} {
		check(t, page.Locator(`input[name="lanes"][value="`+l+`"]`).Uncheck(), "leave out "+l)
	}
	check(t, page.GetByTestId("race-start").Click(), "start")

	busy := page.GetByTestId("race-busy")
	check(t, expect.Locator(busy).ToBeVisible(), "warned before starting")
	check(t, expect.Locator(busy).ToContainText(slow), "the warning names the running race")
	check(t, expect.Locator(busy).ToBeFocused(), "the warning has the focus")
	check(t, expect.Locator(page.Locator("#race-view")).ToBeHidden(), "nothing started yet")

	check(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Start anyway"}).Click(), "start anyway")
	check(t, expect.Locator(page.GetByTestId("race-summary")).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(120000)}), "result")
	check(t, expect.Locator(page.GetByTestId("race-overlap")).ToContainText("overlapped "+slow), "the result says it overlapped")
	screenshot(t, page, "race-overlap.png")
}
