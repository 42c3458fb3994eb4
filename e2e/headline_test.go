package e2e

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

// runJSON reads a run from the run API: its config, as raw fields, and
// its summary's sentences.
type runJSON struct {
	Status  string                     `json:"status"`
	Config  map[string]json.RawMessage `json:"config"`
	Summary struct {
		Headline string `json:"headline"`
		Split    string `json:"split"`
		Range    string `json:"range"`
		Parts    []struct {
			NS int64 `json:"ns"`
		} `json:"split_parts"`
		Lanes []struct {
			Lane  string            `json:"lane"`
			Label string            `json:"label"`
			Shown map[string]string `json:"shown"`
		} `json:"lanes"`
	} `json:"summary"`
}

func getRun(t *testing.T, base, id string) runJSON {
	t.Helper()
	res, err := http.Get(base + "/api/runs/" + id)
	check(t, err, "GET the run")
	defer res.Body.Close()
	var r runJSON
	check(t, json.NewDecoder(res.Body).Decode(&r), "decode the run")
	return r
}

// TestHeadlineIsOneSentenceEverywhere: the run API's summary carries the
// headline and the split, and the race page, presenter mode and the
// permalink show that same text; "the same race, lean" starts a race whose
// config is the first's but for the stack. One short race serves it all.
func TestHeadlineIsOneSentenceEverywhere(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	id := startRace(t, a.URL(), `{"scenario":"quick-fix","profile":"instant","rtt_ms":0,"tool_time_ms":0,"lanes":["http-optimized","ws"],"seed":1,"repeats":1,"sequential":true,"stack":"hosted-post-sprint"}`)
	if st := waitRun(t, a.URL(), id, 3*time.Minute); st != "passed" {
		t.Fatalf("the race %s", st)
	}
	run := getRun(t, a.URL(), id)
	head, split := run.Summary.Headline, run.Summary.Split
	if !strings.HasPrefix(head, "WebSocket finished in ") || !strings.Contains(head, " and optimized HTTP in ") || !strings.Contains(head, "(preset hosted-post-sprint, post-sprint reading)") || !strings.HasPrefix(split, "Of the ") || len(run.Summary.Parts) == 0 {
		t.Fatalf("the run API's summary: headline %q, split %q", head, split)
	}
	t.Logf("headline: %s", head)
	t.Logf("split: %s", split)

	page := newPage(t)
	// The fairness sentence and the same-race buttons are phrased once, in
	// Go: the permalink renders them and the race page's feed carries them.
	goTo(t, page, a.URL()+"/runs/"+id)
	fair, err := page.Locator(`[data-testid="run-fairness"]`).TextContent()
	check(t, err, "the permalink's fairness sentence")
	same, err := page.Locator(`[data-testid="same-race"] button`).AllTextContents()
	check(t, err, "the permalink's same-race buttons")
	if !strings.Contains(fair, "one after another") || len(same) == 0 {
		t.Fatalf("the permalink's fairness %q and same-race buttons %q", fair, same)
	}
	for _, v := range []struct{ name, url, headline, split, fairness, same string }{
		{"race page", "/race?run=" + id, `[data-testid="race-summary"]`, `[data-testid="race-split"]`, "#race-fairness", "#race-same button"},
		{"presenter mode", "/race?present&run=" + id, `[data-testid="race-summary"]`, `[data-testid="race-split"]`, "#race-fairness", "#race-same button"},
		{"permalink", "/runs/" + id, `[data-testid="run-headline"]`, `[data-testid="run-split"]`, `[data-testid="run-fairness"]`, `[data-testid="same-race"] button`},
	} {
		goTo(t, page, a.URL()+v.url)
		check(t, expect.Locator(page.Locator(v.headline)).ToHaveText(head), v.name+": the headline")
		check(t, expect.Locator(page.Locator(v.split)).ToHaveText(split), v.name+": the split")
		check(t, expect.Locator(page.Locator(v.fairness)).ToHaveText(fair), v.name+": the fairness sentence")
		check(t, expect.Locator(page.Locator(v.same)).ToHaveText(same), v.name+": the same-race buttons")
		pageShowsWhatTheServerComputed(t, page, v.name, run)
	}
	formatsAgree(t, page)
	copiesItsLink(t, page, "#run-copy-link", "#run-state") // the permalink is the last page visited

	// The same race, lean: one click from the permalink.
	check(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "The same race, lean", Exact: playwright.Bool(true)}).Click(), "the same race, lean")
	check(t, page.WaitForURL("**/race?run=*"), "the new race opens")
	u := page.URL()
	lean := u[strings.Index(u, "run=")+4:]
	if lean == id {
		t.Fatal("no new race")
	}
	waitRun(t, a.URL(), lean, 3*time.Minute)
	again := getRun(t, a.URL(), lean)
	var stack struct {
		Preset string `json:"preset"`
	}
	check(t, json.Unmarshal(again.Config["stack"], &stack), "the new race's stack")
	if stack.Preset != "lean" {
		t.Errorf("the same race, lean, ran under %q", stack.Preset)
	}
	first, second := maps.Clone(run.Config), maps.Clone(again.Config)
	delete(first, "stack")
	delete(second, "stack")
	if !maps.EqualFunc(first, second, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
		t.Errorf("the same race, lean, changed more than the stack:\n%v\n%v", jsonText(first), jsonText(second))
	}
	if h, r := again.Summary.Headline, again.Summary.Range; !strings.Contains(h, "(preset lean, which models no hosted API stack)") || !strings.Contains(r, "no range across the readings") {
		t.Errorf("the lean race's headline %q, range %q", h, r)
	}
	t.Logf("lean headline: %s", again.Summary.Headline)
}

func jsonText(m map[string]json.RawMessage) string {
	b, _ := json.Marshal(m)
	return string(b)
}
