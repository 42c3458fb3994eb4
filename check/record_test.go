package check

import (
	"encoding/json"
	"strings"
	"testing"
)

func sampleReport() *Report {
	r := &Report{Object: "check.report", Client: []string{"./client", "--x"}, StartedUnixNS: 1, EndedUnixNS: 2,
		Results: []Result{{ID: HonoursRetryAfter, Verdict: Pass, Reason: "waited"}, {ID: StoreFalseConsistency, Verdict: Fail, Reason: "chained",
			Evidence: []Evidence{{Turn: 2, Event: "http"}}}, {ID: OneResponseInFlight, Verdict: NotExercised}}}
	r.count()
	return r
}

// TestDecodeReportCountsAgainAndRefusesWhatIsNotACard: a report decodes
// with its totals counted from its results (not as sent); an unknown
// check, verdict or field, a repeated check and a missing client are
// refused, naming what is wrong.
func TestDecodeReportCountsAgainAndRefusesWhatIsNotACard(t *testing.T) {
	r := sampleReport()
	r.Passed = 3 // a lie the decoder must not keep
	b, _ := json.Marshal(r)
	got, err := DecodeReport(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Passed != 1 || got.Failed != 1 || got.NotExercised != 1 || got.OK() {
		t.Fatalf("totals %d/%d/%d", got.Passed, got.Failed, got.NotExercised)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"honours-retry-after"`, `"nope"`, "unknown check"},
		{`"verdict":"pass"`, `"verdict":"ok"`, "verdict"},
		{`"object":"check.report"`, `"object":"check.report","extra":1`, "unknown field"},
		{`"one-response-in-flight"`, `"honours-retry-after"`, "twice"},
		{`"client":["./client","--x"]`, `"client":[]`, "client"},
	} {
		bad := strings.Replace(string(b), c.from, c.to, 1)
		if _, err := DecodeReport([]byte(bad)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: %v, want an error saying %q", c.from, c.to, err, c.want)
		}
	}
	rec, err := Record(got)
	if err != nil || rec.ID == "" || rec.ID != got.ID || rec.Client != "./client --x" || rec.Failed != 1 {
		t.Fatalf("record %+v %v", rec, err)
	}
}

func FuzzDecodeReport(f *testing.F) {
	b, _ := json.Marshal(sampleReport())
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"object":"check.report","client":["x"],"results":[{"id":"honours-retry-after","verdict":"fail"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeReport(b)
		if err != nil {
			return
		}
		if r.Passed+r.Failed+r.NotExercised != len(r.Results) {
			t.Fatalf("totals %d+%d+%d of %d results", r.Passed, r.Failed, r.NotExercised, len(r.Results))
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
