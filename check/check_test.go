package check_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"agentloop/app/apptest"
	"agentloop/check"
	"agentloop/internal/testbin"
)

// refclient is the reference client, built once for the package's tests.
func refclient(t *testing.T) string {
	t.Helper()
	return testbin.Path(t, "agentloop/check/internal/refclient")
}

// gauntlet grades the reference client, started with args, on the checks
// ids name, against an engine of its own.
func gauntlet(t *testing.T, ids string, args ...string) *check.Report {
	t.Helper()
	a := apptest.Start(t)
	checks, err := check.Select(ids)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := check.Run(context.Background(), check.Config{Server: a.URL(), Command: append([]string{refclient(t)}, args...),
		Checks: checks, TimeLimit: 30 * time.Second, ClientOutput: &out,
		Options: check.Options{FallbackDeadline: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	check.WriteText(&text, rep)
	t.Logf("%s\nclient output:\n%s", text.String(), out.String())
	return rep
}

// want asserts each check's verdict.
func want(t *testing.T, rep *check.Report, verdicts map[string]check.Verdict) {
	t.Helper()
	for _, r := range rep.Results {
		v, ok := verdicts[r.ID]
		if !ok {
			continue
		}
		if r.Verdict != v {
			t.Errorf("%s: %s (%s), want %s", r.ID, r.Verdict, r.Reason, v)
		}
		delete(verdicts, r.ID)
	}
	for id := range verdicts {
		t.Errorf("%s: not in the report", id)
	}
}

const wsChecks = check.ContinuationSendsNewItems + "," + check.RecoversPreviousResponseNotFound + "," + check.ReconnectsAtConnectionLimit + "," +
	check.HandlesConnectionLimitError + "," + check.FallsBackWhenUpgradeRefused + "," + check.SurvivesDropMidStream + "," +
	check.ReadsWrappedErrorFrames + "," + check.OneResponseInFlight + "," + check.HonoursRetryAfter + "," + check.ContinuesTheNewestResponse

const httpChecks = check.HonoursRetryAfter + "," + check.StoreFalseConsistency + "," + check.SurvivesDropMidStream + "," + check.OneResponseInFlight + "," +
	check.ContinuesTheNewestResponse

func TestReferenceClientOverWebSocket(t *testing.T) {
	t.Parallel()
	t.Run("right", func(t *testing.T) {
		t.Parallel()
		rep := gauntlet(t, wsChecks, "-transport", "ws", "-tool-time", "200ms")
		want(t, rep, map[string]check.Verdict{
			check.ContinuationSendsNewItems:        check.Pass,
			check.RecoversPreviousResponseNotFound: check.Pass,
			check.ReconnectsAtConnectionLimit:      check.Pass,
			check.HandlesConnectionLimitError:      check.Pass,
			check.FallsBackWhenUpgradeRefused:      check.Pass,
			check.SurvivesDropMidStream:            check.Pass,
			check.ReadsWrappedErrorFrames:          check.Pass,
			check.OneResponseInFlight:              check.Pass,
			check.ContinuesTheNewestResponse:       check.Pass,
			// A WebSocket client never meets the HTTP 429.
			check.HonoursRetryAfter: check.NotExercised,
		})
		if !rep.OK() {
			t.Error("the report is not OK")
		}
	})
	t.Run("resend", func(t *testing.T) {
		t.Parallel()
		rep := gauntlet(t, check.ContinuationSendsNewItems, "-transport", "ws", "-mistakes", "resend")
		want(t, rep, map[string]check.Verdict{check.ContinuationSendsNewItems: check.Fail})
	})
	t.Run("stale-parent", func(t *testing.T) {
		t.Parallel()
		rep := gauntlet(t, check.ContinuesTheNewestResponse, "-transport", "ws", "-mistakes", "stale-parent")
		want(t, rep, map[string]check.Verdict{check.ContinuesTheNewestResponse: check.Fail})
	})
	t.Run("mistakes", func(t *testing.T) {
		t.Parallel()
		rep := gauntlet(t, strings.TrimPrefix(wsChecks, check.ContinuationSendsNewItems+","), "-transport", "ws", "-tool-time", "200ms",
			"-mistakes", "flat-errors,replay,no-fallback")
		want(t, rep, map[string]check.Verdict{
			check.RecoversPreviousResponseNotFound: check.Fail,
			check.ReconnectsAtConnectionLimit:      check.Fail,
			check.HandlesConnectionLimitError:      check.Fail,
			check.FallsBackWhenUpgradeRefused:      check.Fail,
			check.SurvivesDropMidStream:            check.Fail,
			check.ReadsWrappedErrorFrames:          check.Fail,
			check.OneResponseInFlight:              check.Pass,
		})
		if rep.OK() {
			t.Error("the report of a client with mistakes is OK")
		}
	})
}

func TestReferenceClientOverHTTP(t *testing.T) {
	t.Parallel()
	t.Run("right", func(t *testing.T) {
		t.Parallel()
		rep := gauntlet(t, httpChecks, "-transport", "http")
		want(t, rep, map[string]check.Verdict{
			check.HonoursRetryAfter:          check.Pass,
			check.StoreFalseConsistency:      check.Pass,
			check.SurvivesDropMidStream:      check.Pass,
			check.OneResponseInFlight:        check.Pass,
			check.ContinuesTheNewestResponse: check.Pass,
		})
	})
	t.Run("stale-parent", func(t *testing.T) {
		t.Parallel()
		rep := gauntlet(t, check.ContinuesTheNewestResponse, "-transport", "http", "-mistakes", "stale-parent")
		want(t, rep, map[string]check.Verdict{check.ContinuesTheNewestResponse: check.Fail})
	})
	t.Run("mistakes", func(t *testing.T) {
		t.Parallel()
		rep := gauntlet(t, httpChecks, "-transport", "http", "-mistakes", "all")
		want(t, rep, map[string]check.Verdict{
			check.HonoursRetryAfter:     check.Fail,
			check.StoreFalseConsistency: check.Fail,
		})
	})
}

// TestSelectNamesTheChecks: an unknown id is an error that lists them.
func TestSelectNamesTheChecks(t *testing.T) {
	if _, err := check.Select("continuation-sends-new-items,nope"); err == nil || !strings.Contains(err.Error(), check.StoreFalseConsistency) {
		t.Fatalf("err %v", err)
	}
	all, err := check.Select("")
	if err != nil || len(all) != len(check.All) {
		t.Fatalf("all: %d %v", len(all), err)
	}
}

// TestReportIsStoredWithAPermalink: a report posted to /api/checks (as
// agentloop check --server does) is stored, served back as JSON, listed,
// and shown on its permalink page with each check's verdict; what is not a
// report gets a 400, an unknown id a 404.
func TestReportIsStoredWithAPermalink(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t)
	checks, _ := check.Select(check.HonoursRetryAfter + "," + check.StoreFalseConsistency)
	cfg := check.Config{Server: a.URL(), Command: []string{refclient(t), "-transport", "http", "-mistakes", "no-backoff"}, Checks: checks, TimeLimit: 30 * time.Second}
	rep, err := check.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ ID, URL string }
	if err := cfg.Call(context.Background(), http.MethodPost, "/api/checks", rep, &info); err != nil {
		t.Fatal(err)
	}
	if info.URL != "/check/"+info.ID || !strings.HasPrefix(info.ID, "card_") {
		t.Fatalf("stored as %+v", info)
	}
	var back check.Report
	if err := cfg.Call(context.Background(), http.MethodGet, "/api/checks/"+info.ID, nil, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != info.ID || len(back.Results) != 2 || back.Failed != 1 || back.Passed != 1 {
		t.Fatalf("read back %+v", back)
	}
	page := get(t, a.URL()+info.URL, http.StatusOK)
	for _, want := range []string{`data-check="honours-retry-after" data-verdict="fail"`, `data-check="store-false-consistency" data-verdict="pass"`,
		"1 passed, 1 failed, 0 not exercised", "retried after"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if list := get(t, a.URL()+"/api/checks", http.StatusOK); !strings.Contains(list, info.ID) {
		t.Errorf("the list lacks the report: %s", list)
	}
	if err := cfg.Call(context.Background(), http.MethodPost, "/api/checks", map[string]any{"object": "check.report"}, nil); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a bad report: %v", err)
	}
	get(t, a.URL()+"/check/card_nope", http.StatusNotFound)
}

func get(t *testing.T, url string, status int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d, want %d: %s", url, resp.StatusCode, status, b)
	}
	return string(b)
}

// TestLiveCheckGradesAClientPointedByHand: /check arms one check at a
// time in a scope of the caller's own (arming the next disarms the
// previous drill), and grades the scope's requests as they arrive.
func TestLiveCheckGradesAClientPointedByHand(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t)
	cfg := check.Config{Server: a.URL()}
	ctx := context.Background()
	if page := get(t, a.URL()+"/check", http.StatusOK); !strings.Contains(page, `value="honours-retry-after"`) {
		t.Fatal("/check offers no check")
	}
	type live struct {
		Check, Scope, Drill string
		BaseURL             string `json:"base_url"`
		DrillID             string `json:"drill_id"`
		ToolTurns           int    `json:"tool_turns"`
	}
	var first, second live
	if err := cfg.Call(ctx, http.MethodPost, "/api/checks/live", map[string]string{"check": check.SurvivesDropMidStream}, &first); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Call(ctx, http.MethodPost, "/api/checks/live", map[string]string{"check": check.HonoursRetryAfter}, &second); err != nil {
		t.Fatal(err)
	}
	if second.BaseURL != a.URL()+"/scope/"+second.Scope+"/v1" || second.Drill != "http-429" || second.ToolTurns < 3 {
		t.Fatalf("armed %+v", second)
	}
	if err := cfg.Call(ctx, http.MethodGet, "/api/drills/"+first.DrillID, nil, nil); err == nil {
		t.Fatal("the first check's drill is still armed")
	}
	grade := func() check.Result {
		var g struct{ Result check.Result }
		if err := cfg.Call(ctx, http.MethodGet, "/api/checks/live/"+second.Scope+"?check="+second.Check+"&drill="+second.DrillID, nil, &g); err != nil {
			t.Fatal(err)
		}
		return g.Result
	}
	if r := grade(); r.Verdict != check.NotExercised {
		t.Fatalf("before any request: %s", r.Verdict)
	}
	cmd := exec.Command(refclient(t), "-transport", "http", "-mistakes", "no-backoff")
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+second.BaseURL, "OPENAI_API_KEY=sk-x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the client: %v\n%s", err, out)
	}
	if r := grade(); r.Verdict != check.Fail || !strings.Contains(r.Reason, "before the 1200 ms") {
		t.Fatalf("after the client: %s (%s)", r.Verdict, r.Reason)
	}
	if err := cfg.Call(ctx, http.MethodPost, "/api/checks/live", map[string]string{"check": "nope"}, nil); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("an unknown check: %v", err)
	}
}

// A client quick enough to finish its 12 tool turns before the idle limit
// runs again with a longer session, until one outlasts the limit: with a
// 40 ms tool, 12 turns take about half a second, and 48 at least 1.9 s,
// past the 1.5 s limit whatever the machine's speed.
func TestAFastClientOutrunningTheIdleLimitRunsAgainLonger(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t)
	var out, progress bytes.Buffer
	rep, err := check.Run(context.Background(), check.Config{Server: a.URL(),
		Command: []string{refclient(t), "-transport", "ws", "-tool-time", "40ms"},
		Checks:  []*check.Check{check.Lookup(check.ReconnectsAtConnectionLimit)}, TimeLimit: 30 * time.Second,
		ClientOutput: &out, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress:\n%s", progress.String())
	want(t, rep, map[string]check.Verdict{check.ReconnectsAtConnectionLimit: check.Pass})
	// Whether the first run already outlasted the limit depends on the
	// machine; when it did not, the verdict says which run passed.
	if again := strings.Contains(progress.String(), "again with K="); again != strings.Contains(rep.Results[0].Reason, "with fewer turns") {
		t.Errorf("the client ran again: %v; the reason %q says so: %v", again, rep.Results[0].Reason, !again)
	}
}

// TestAClientWithoutToolsIsNotExercised: a client that offers no
// function tool finishes at once, before any drill fires, and every check
// says so instead of passing.
func TestAClientWithoutToolsIsNotExercised(t *testing.T) {
	t.Parallel()
	rep := gauntlet(t, check.RecoversPreviousResponseNotFound+","+check.SurvivesDropMidStream+","+check.ContinuationSendsNewItems, "-no-tools")
	for _, r := range rep.Results {
		if r.Verdict != check.NotExercised || !strings.Contains(r.Reason, "no function tool") {
			t.Errorf("%s: %s (%s)", r.ID, r.Verdict, r.Reason)
		}
	}
}

// TestJUnitHasOneCasePerCheck: a fail is a <failure> with its evidence, a
// not_exercised a <skipped>, a pass neither.
func TestJUnitHasOneCasePerCheck(t *testing.T) {
	rep := &check.Report{Object: "check.report", Client: []string{"c"}, Failed: 1, Passed: 1, NotExercised: 1, Results: []check.Result{
		{ID: check.HonoursRetryAfter, Verdict: check.Fail, Reason: "too soon", Evidence: []check.Evidence{{Turn: 2, Event: "429"}}},
		{ID: check.StoreFalseConsistency, Verdict: check.Pass, Reason: "fine"},
		{ID: check.OneResponseInFlight, Verdict: check.NotExercised, Reason: "no continuation"}}}
	var b bytes.Buffer
	if err := check.WriteJUnit(&b, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	s := doc.Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Skipped != 1 || len(s.Cases) != 3 {
		t.Fatalf("suite %+v", s)
	}
	if c := s.Cases[0]; c.Name != check.HonoursRetryAfter || c.Failure == nil || c.Failure.Message != "too soon" || !strings.Contains(c.Failure.Text, "turn 2: 429") {
		t.Errorf("the failed case: %+v", c)
	}
	if c := s.Cases[1]; c.Failure != nil || c.Skipped != nil {
		t.Errorf("the passed case: %+v", c)
	}
	if c := s.Cases[2]; c.Skipped == nil || c.Failure != nil {
		t.Errorf("the not exercised case: %+v", c)
	}
}
