package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"agentloop/app/apptest"
	"agentloop/corpus"

	"github.com/mxschmitt/playwright-go"
)

// TestCorpusPageRacesASession: /corpus reads on a phone (its headline, the
// distribution under each reading, the scatter, every session, the
// attribution; axe-clean, no sideways scroll, labels 10 px or more), and a
// session's button races its workload and opens the race.
func TestCorpusPageRacesASession(t *testing.T) {
	startBrowserTest(t)
	ref, err := corpus.Reference()
	check(t, err, "the reference run")
	short := ref.Sessions[0] // the fewest turns, so that its race is short
	for _, s := range ref.Sessions {
		if s.Turns < short.Turns {
			short = s
		}
	}
	a := apptest.Start(t)
	p := newAxePage(t, playwright.BrowserNewContextOptions{})
	check(t, p.SetViewportSize(390, 844), "phone width")

	goTo(t, p, a.URL()+"/corpus")
	check(t, expect.Locator(p.GetByTestId("corpus-headline")).ToContainText(regexp.MustCompile(`^On \d+ recorded sessions of .+, WebSocket mode would finish median −?\d+% sooner than optimized HTTP \(p10 −?\d+%, p90 −?\d+%\) under the post-sprint reading, at 1000 tokens/s\.$`)), "the headline")
	check(t, expect.Locator(p.GetByTestId("corpus-cdf")).ToHaveCount(3), "a distribution per reading")
	check(t, expect.Locator(p.GetByTestId("corpus-dot")).ToHaveCount(len(ref.Sessions)), "a dot per session")
	check(t, expect.Locator(p.GetByTestId("corpus-session")).ToHaveCount(len(ref.Sessions)), "a row per session")
	check(t, expect.Locator(p.GetByTestId("corpus-sources")).ToContainText(corpus.NoLicence), "the attribution of a source without a licence")
	noHorizontalScroll(t, p)
	labelsReadable(t, p, "corpus")
	axeCheck(t, p, "corpus")
	screenshot(t, p, "corpus-phone.png")

	// Your own session, from a file: stored, then placed among them.
	mine := filepath.Join(t.TempDir(), "mine.json")
	check(t, os.WriteFile(mine, []byte(`{"version":1,"source":"hand","instructions_tokens":10,"tools_tokens":5,"tools":1,"turns":[{"input":[{"kind":"user_message","tokens":3}],"output_tokens":4}]}`), 0o644), "write a workload file")
	check(t, p.Locator("#corpus-file").SetInputFiles(mine), "choose the workload file")
	check(t, expect.Page(p).ToHaveURL(regexp.MustCompile(`/corpus\?workload=`)), "the page reopens with the file's workload")
	check(t, expect.Locator(p.GetByTestId("corpus-yours")).ToContainText("percentile of turns"), "your session placed among them")

	check(t, p.Locator(`button[data-corpus-race][data-workload="/api/corpus/`+short.File+`"]`).Click(), "race the shortest session")
	check(t, expect.Page(p).ToHaveURL(regexp.MustCompile(`/race\?run=run_[0-9a-f]+$`)), "the race view follows the race")
	id := regexp.MustCompile(`run_[0-9a-f]+`).FindString(p.URL())
	if status := waitRun(t, a.URL(), id, 120*time.Second); status != "passed" {
		t.Fatalf("the race of %s %s", short.File, status)
	}
	if sum := string(getRun(t, a.URL(), id).Config["workload_id"]); sum == "" || sum == `""` {
		t.Errorf("the race replayed no workload")
	}
}
