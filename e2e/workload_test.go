package e2e

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentloop/app/apptest"
	"agentloop/workload"

	"github.com/coder/websocket"
)

// TestRaceThisSession: a client's session on /inspect exports as a
// workload, and "Race this session" races it, fairly by default (lanes one
// after another, three repeats), to a result that gives the workload's
// answer in one sentence with the range across the repeats.
func TestRaceThisSession(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(a.URL(), "http")+"/v1/responses",
		&websocket.DialOptions{HTTPHeader: map[string][]string{"User-Agent": {"e2e-agent/1.0"}}})
	check(t, err, "dial the engine")
	defer c.CloseNow()
	client := &wsClient{t: t, c: c}
	client.turn("hello")
	client.turn("and again")
	client.turn("once more")

	page := newPage(t)
	goTo(t, page, a.URL()+"/inspect")
	rows := page.GetByTestId("session-row")
	check(t, expect.Locator(rows.First().GetByTestId("session-turns")).ToHaveText("3"), "the session holds three turns")
	check(t, rows.First().GetByRole("link").Click(), "open the session")
	check(t, expect.Locator(page.Locator(`html[data-ready="session"]`)).ToHaveCount(1), "the session is drawn")

	dl, err := page.ExpectDownload(func() error { return page.GetByTestId("session-workload").Click() })
	check(t, err, "export the workload")
	path, err := dl.Path()
	check(t, err, "the download's file")
	b, err := os.ReadFile(path)
	check(t, err, "read the workload")
	w, err := workload.Parse(b)
	check(t, err, "the export is a workload")
	if len(w.Turns) != 3 || w.Source != "inspector" {
		t.Fatalf("exported %s", b)
	}

	check(t, page.GetByTestId("session-race").Click(), "race this session")
	check(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/race\?run=run_[0-9a-f]+$`)), "the race view follows the race")
	id := regexp.MustCompile(`run_[0-9a-f]+`).FindString(page.URL())
	if status := waitRun(t, a.URL(), id, 120*time.Second); status != "passed" {
		t.Fatalf("the race of the session %s", status)
	}
	if cfg := getRun(t, a.URL(), id).Config; string(cfg["sequential"]) != "true" || string(cfg["repeats"]) != "3" {
		t.Errorf("the session raced with sequential %s, repeats %s; want the fair defaults", cfg["sequential"], cfg["repeats"])
	}
	// The race page that followed the race shows the answer when it ends,
	// the same sentence as the permalink.
	live := page.GetByTestId("workload-answer")
	check(t, expect.Locator(live).ToContainText("Your workload: WebSocket mode would finish"), "the answer on the race page")
	liveAnswer, err := live.TextContent()
	check(t, err, "read the race page's answer")
	goTo(t, page, a.URL()+"/runs/"+id)
	answer := page.GetByTestId("workload-answer")
	check(t, expect.Locator(answer).ToHaveText(liveAnswer), "the permalink's answer is the race page's")
	check(t, expect.Locator(answer).ToContainText("Your workload: WebSocket mode would finish"), "the answer in one sentence")
	check(t, expect.Locator(answer).ToContainText(regexp.MustCompile(`than optimized HTTP at spark, under hosted-post-sprint \(the median of 3 repeats; from \d+% (sooner|later) to \d+% (sooner|later) across them\); −?\d+% under lean\.`)), "at this speed, under this stack, across the repeats, and under lean")
	check(t, expect.Locator(page.GetByTestId("workload-link")).ToHaveAttribute("href", regexp.MustCompile(`^/api/workloads/wl_`)), "the workload's permalink")
	screenshot(t, page, "workload-answer.png")

	// The race form takes the exported file too.
	goTo(t, page, a.URL()+"/race")
	check(t, page.GetByTestId("race-workload").SetInputFiles(path), "choose the workload file")
	check(t, page.GetByTestId("race-start").Click(), "start the race")
	check(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/race\?run=run_[0-9a-f]+$`)), "the race starts")
	uploaded := regexp.MustCompile(`run_[0-9a-f]+`).FindString(page.URL())
	if uploaded == id {
		t.Fatal("the form did not start a new race")
	}
	if status := waitRun(t, a.URL(), uploaded, 60*time.Second); status != "passed" {
		t.Fatalf("the uploaded workload's race %s", status)
	}
	goTo(t, page, a.URL()+"/runs/"+uploaded)
	check(t, expect.Locator(page.GetByTestId("workload-answer")).ToContainText("Your workload: WebSocket mode would finish"), "the uploaded workload's answer")
}
