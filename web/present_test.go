package web

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
	"agentloop/views"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{fmtNS(0), "0 ms"},
		{fmtNS(1500), "1.50 µs"},
		{fmtNS(3_570_000), "3.57 ms"},
		{fmtNS(96_040_000), "96.0 ms"},
		{fmtNS(425_600_000), "426 ms"},
		{fmtNS(6_601_000_000), "6.60 s"},
		{fmtInt(0), "0"},
		{fmtInt(999), "999"},
		{fmtInt(1_123_689), "1,123,689"},
		{fmtInt(-12_345), "-12,345"},
		{fmtBytes(512), "512 B"},
		{fmtBytes(381 << 10), "381 KiB"},
		{fmtBytes(4_110_000), "3.92 MiB"},
		{sooner(0.404), "40% sooner"},
		{sooner(-0.126), "13% later"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestProfileOptionsAreTheBuiltinModels(t *testing.T) {
	want := []views.Option{
		{Value: "classic", Label: "classic (65 tok/s)"},
		{Value: "spark", Label: "spark (1,000 tok/s)", Selected: true},
		{Value: "burst", Label: "burst (4,000 tok/s)"},
		{Value: "instant", Label: "instant (no modelled time)"},
	}
	if got := profileOptions("spark"); !slices.Equal(got, want) {
		t.Fatalf("profileOptions = %+v\nwant %+v", got, want)
	}
	if got := groupThousands(100000); got != "100,000" {
		t.Fatalf("groupThousands(100000) = %q", got)
	}
}

func TestConfigFieldsShowTheStack(t *testing.T) {
	f := configFields(rollout.Config{Profile: "spark", DecodeTPS: 250, Stack: apistack.Hosted})
	for _, want := range []views.Field{{Label: "API stack", Value: "hosted (modelled)"}, {Label: "Stack hop (ms)", Value: "2.65"},
		{Label: "Stack classifier tok/s (/v1)", Value: "130000"}, {Label: "Decode rate", Value: "250 tok/s (model custom-250)"}} {
		if !slices.Contains(f, want) {
			t.Errorf("fields lack %+v: %+v", want, f)
		}
	}
}

func TestTotalWithSpread(t *testing.T) {
	if got := rollout.TotalWithSpread(rollout.LaneSummary{TotalNS: 1.2e9}); got != "1.20 s" {
		t.Errorf("single run: %q", got)
	}
	if got := rollout.TotalWithSpread(rollout.LaneSummary{TotalNS: 1.2e9, MinTotalNS: 1.1e9, MaxTotalNS: 1.31e9}); got != "1.20 s (1.10 s – 1.31 s)" {
		t.Errorf("repeats: %q", got)
	}
}

func TestRunRowShowsTheSpread(t *testing.T) {
	r := *fixtureRun("run_x")
	r.Config.Repeats, r.Summary.Repeats = 3, 3
	r.Summary.Lanes[0].MinTotalNS, r.Summary.Lanes[0].MaxTotalNS = 0.9e9, 1.1e9
	r.Summary.Lanes[1].MinTotalNS, r.Summary.Lanes[1].MaxTotalNS = 0.5e9, 0.7e9
	row := runRow(r)
	if want := "40% sooner than HTTP (medians of 3 repeats: HTTP 1.00 s (900 ms – 1.10 s), WebSocket 600 ms (500 ms – 700 ms))"; row.Saving != want {
		t.Errorf("saving %q, want %q", row.Saving, want)
	}
	// With optimized HTTP in the race, the list compares with it, as the
	// headline does.
	r.Config.Lanes = append(r.Config.Lanes, rollout.LaneHTTPOptimized)
	r.Summary.Lanes = append(r.Summary.Lanes, rollout.LaneSummary{Lane: rollout.LaneHTTPOptimized, TotalNS: 0.8e9, MinTotalNS: 0.75e9, MaxTotalNS: 0.85e9})
	r.Summary.SavedVsOptimized = map[string]float64{rollout.LaneWS: 0.25}
	if want := "25% sooner than optimized HTTP (medians of 3 repeats: WebSocket 600 ms (500 ms – 700 ms), HTTP optimized 800 ms (750 ms – 850 ms))"; runRow(r).Saving != want {
		t.Errorf("saving %q, want %q", runRow(r).Saving, want)
	}
	if !strings.Contains(row.Settings, "3 repeats") {
		t.Errorf("settings %q", row.Settings)
	}
}

// TestRaceFormIsTheTables: the race form's stack inputs are apistack.Params,
// one each with its label and range, and its other limits are the ones
// rollout.Normalize checks; the page writes none of them by hand.
func TestRaceFormIsTheTables(t *testing.T) {
	tp := newTestPlayground(t)
	body := tp.do(http.MethodGet, "/race", "", nil).Body.String()
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	want := []string{}
	for _, p := range apistack.Params {
		want = append(want, `<label for="race-stack-`+p.Key+`">`+p.Label+`</label>`,
			`data-stack-param="`+p.Key+`" type="number" min="`+num(p.FormMin())+`" max="`+num(p.Max)+`"`)
	}
	if got := strings.Count(body, "data-stack-param="); got != len(apistack.Params) {
		t.Errorf("%d stack inputs, want one per parameter (%d)", got, len(apistack.Params))
	}
	want = append(want,
		`id="race-rtt" name="rtt_ms" type="number" min="0" max="`+strconv.Itoa(rollout.MaxRTTms)+`"`,
		`id="race-tool" name="tool_time_ms" type="number" min="0" max="`+strconv.Itoa(rollout.MaxToolTimeMs)+`"`,
		`id="race-repeats" name="repeats" type="number" min="1" max="`+strconv.Itoa(rollout.MaxRepeats)+`"`,
		`name="decode_tps" type="number" min="`+strconv.Itoa(api.MinCustomTPS)+`" max="`+strconv.Itoa(api.MaxCustomTPS)+`"`,
		`data-key="times" type="number" min="1" max="`+strconv.Itoa(rollout.MaxDrillTimes)+`"`)
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("the race form lacks %q", w)
		}
	}
}
