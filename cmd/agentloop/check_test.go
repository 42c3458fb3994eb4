package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/app/apptest"
	"agentloop/check"
	"agentloop/internal/testbin"
)

// TestCheckRefusesWithoutAClientOrWithAnUnknownCheck: the command says
// what is missing before it starts an engine.
func TestCheckRefusesWithoutAClientOrWithAnUnknownCheck(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check"}, "no client command"},
		{[]string{"check", "--checks", "nope", "--", "true"}, "unknown check"},
		{[]string{"check", "--upgrade-status", "500", "--", "true"}, "426, 405 or 404"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), c.args, func(string) string { return "" }, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

// TestCheckAgainstAServerStoresItsCardAndExitsOnAFail runs agentloop
// check --server against a running app with the reference client: the
// JSON report and the JUnit file say the same, the report is stored on
// the server, and a failed check makes the exit status 1.
func TestCheckAgainstAServerStoresItsCardAndExitsOnAFail(t *testing.T) {
	client := testbin.Path(t, "agentloop/check/internal/refclient")
	a := apptest.Start(t)
	for _, c := range []struct {
		mistakes string
		verdict  check.Verdict
		exit     int
	}{{"", check.Pass, 0}, {"no-backoff", check.Fail, 1}} {
		junit := filepath.Join(t.TempDir(), "card.xml")
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"check", "--server", a.URL(), "--checks", check.HonoursRetryAfter, "--json", "--junit", junit,
			"--", client, "-transport", "http", "-mistakes", c.mistakes}, func(string) string { return "" }, &out, &errOut)
		exit := 0
		if err != nil {
			exit = exitCode(err)
		}
		if exit != c.exit {
			t.Fatalf("mistakes %q: exit %d (%v), want %d\n%s", c.mistakes, exit, err, c.exit, errOut.String())
		}
		var rep check.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("--json: %v\n%s", err, out.String())
		}
		if len(rep.Results) != 1 || rep.Results[0].Verdict != c.verdict || rep.ID == "" {
			t.Fatalf("mistakes %q: %+v", c.mistakes, rep)
		}
		if !strings.Contains(errOut.String(), "report card: "+a.URL()+"/check/"+rep.ID) {
			t.Errorf("no permalink: %s", errOut.String())
		}
		x, err := os.ReadFile(junit)
		if err != nil {
			t.Fatal(err)
		}
		if failed := strings.Contains(string(x), "<failure"); failed != (c.verdict == check.Fail) {
			t.Errorf("mistakes %q: the JUnit file says failed=%t:\n%s", c.mistakes, failed, x)
		}
		resp, err := http.Get(a.URL() + "/api/checks/" + rep.ID)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("the stored report: %d", resp.StatusCode)
		}
	}
}
