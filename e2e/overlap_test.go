package e2e

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentloop/app/apptest"
	"agentloop/web"

	"github.com/mxschmitt/playwright-go"
)

// TestOverlappingRaces: starting a race while another client's race runs
// warns first; started anyway, its result names the race it overlapped.
// The other client's race is not this page's to cancel; the page's own
// race it cancels (it keeps the run's cancel token).
func TestOverlappingRaces(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	// A slow race (the classic profile; its one WebSocket lane costs the
	// machine little while it paces) that is still running meanwhile,
	// started by another client (another address: on the same address it
	// would be the page's own, and the page's race would wait for it).
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	slow, token := startRaceWith(t, other, a.URL(), `{"scenario":"config-migration","profile":"classic","lanes":["ws"]}`)
	cancelSlow := func() {
		req, _ := http.NewRequest("POST", a.URL()+"/api/runs/"+slow+"/cancel", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(web.HeaderCancelToken, token)
		if res, err := other.Do(req); err == nil {
			res.Body.Close()
		}
	}
	t.Cleanup(cancelSlow)

	page := newPage(t, "status of 403") // the refused cancel
	goTo(t, page, a.URL()+"/race")
	check(t, expect.Locator(page.Locator(`html[data-ready="race"]`)).ToHaveCount(1), "race script ready")
	choose(t, page.GetByTestId("race-scenario"), "quick-fix", "choose the scenario")
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
	raceEnds(t, page)
	check(t, expect.Locator(page.GetByTestId("race-overlap")).ToContainText("overlapped "+slow), "the result says it overlapped")
	screenshot(t, page, "race-overlap.png")

	// The other client's race: its Cancel is refused, and says why.
	goTo(t, page, a.URL()+"/race?run="+slow)
	check(t, page.GetByTestId("race-cancel").Click(), "cancel another client's race")
	check(t, expect.Locator(page.Locator("#race-error")).ToContainText("Only whoever started"), "refused: not the page's race")

	// The page's own slow race, alone (its owner cancels the other): its
	// Cancel stops it.
	cancelSlow()
	waitRun(t, a.URL(), slow, 30*time.Second)
	goTo(t, page, a.URL()+"/race")
	check(t, expect.Locator(page.Locator(`html[data-ready="race"]`)).ToHaveCount(1), "race script ready")
	choose(t, page.GetByTestId("race-profile"), "classic", "choose a slow profile")
	check(t, page.GetByTestId("race-start").Click(), "start")
	check(t, page.GetByTestId("race-cancel").Click(), "cancel the page's race")
	check(t, expect.Locator(page.Locator("#race-state")).ToContainText("Finished: cancelled"), "the page's race cancelled")
}
