package e2e

import (
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/rollout"

	"github.com/mxschmitt/playwright-go"
)

// pageShowsWhatTheServerComputed checks a page of a finished run (the race
// page, presenter mode, the permalink) against the run API: each lane's
// label and its row of the result table are the summary's own strings, and
// the waterfall's legend names api's groups. A page that phrased any of
// them itself, and phrased it otherwise, fails here.
func pageShowsWhatTheServerComputed(t *testing.T, page playwright.Page, name string, run runJSON) {
	t.Helper()
	rows := page.Locator("table.summary-table tbody tr")
	check(t, expect.Locator(rows).ToHaveCount(len(run.Summary.Lanes)), name+": one result row per lane")
	cells := map[string]string{"Total": "total", "Cached": "cached", "Median overhead": "median_overhead", "Mean API stack / turn": "stack_per_turn",
		"API CPU / rollout": "api_cpu", "Rollouts per core": "rollouts_per_core", "vs HTTP": "vs_http"}
	for i, l := range run.Summary.Lanes {
		if l.Label == "" || l.Shown == nil {
			t.Fatalf("the run API's summary lane %s has no label or row: %+v", l.Lane, l)
		}
		row := rows.Nth(i)
		check(t, expect.Locator(row.Locator("th")).ToHaveText(l.Label), name+": "+l.Lane+"'s label in the result")
		for label, key := range cells {
			check(t, expect.Locator(row.Locator(`td[data-label="`+label+`"]`)).ToHaveText(l.Shown[key]), name+": "+l.Lane+"'s "+label)
		}
		card := page.Locator(`[data-testid="lane-` + l.Lane + `"] .lane-label, .timeline-lane[data-lane="` + l.Lane + `"] h3`)
		check(t, expect.Locator(card).ToHaveText(l.Label), name+": "+l.Lane+"'s card")
	}
	var legend []string
	for _, g := range api.WaterfallGroups {
		// Only the live race draws a turn still waiting for its trace.
		if g.Legend != "" && (g.Name != api.GroupPending || strings.Contains(name, "race") || strings.Contains(name, "presenter")) {
			legend = append(legend, g.Legend)
		}
	}
	legend = append(legend, "hatched: modelled")
	check(t, expect.Locator(page.Locator(`ul.legend[aria-label="Waterfall stages"] li`)).ToHaveText(legend), name+": the legend is api's groups")
}

// formatsAgree: the browser's duration format, kept for what it draws and
// ticks itself (chart axes, live clocks), writes what Go's does.
func formatsAgree(t *testing.T, page playwright.Page) {
	t.Helper()
	values := []int64{0, -5, 999, 1_000, 12_345, 999_499, 1_000_000, 1_234_567, 9_995_000, 42_000_000, 123_456_789, 1e9, 2_049_000_000, 61e9, 1234e9}
	got, err := page.Evaluate(`(vs) => vs.map((v) => window.agentloop.fmtNS(v))`, values)
	check(t, err, "format in the browser")
	list, _ := got.([]any)
	if len(list) != len(values) {
		t.Fatalf("the browser formatted %v", got)
	}
	for i, v := range values {
		if want := rollout.FormatNS(v); list[i] != want {
			t.Errorf("%d ns: the browser writes %q, Go %q", v, list[i], want)
		}
	}
}
