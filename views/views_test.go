package views

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a-h/templ"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func renderString(t *testing.T, c templ.Component) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestGolden renders components that hold no asset URLs (those change with
// every stylesheet edit) and compares them with testdata. Regenerate with
// go test ./views -update.
func TestGolden(t *testing.T) {
	transcript := []LaneTranscript{{Name: "ws", Label: "WebSocket", Status: "passed", Turns: []TurnView{
		{Title: "Warm-up (generate: false)", ResponseID: "resp_w", Timing: "sent at +0 ms · took 1.20 ms", Tokens: "in 900 · out 0"},
		{Title: "Turn 1", ResponseID: "resp_1", Timing: "sent at +1.30 ms · took 45.0 ms · tools 3.00 ms", Tokens: "in 1,024 (cached 896) · out 20",
			Text: "Running the tests first.", Calls: []CallView{{Name: "run_tests", Arguments: `{"path":"./..."}`, CallID: "call_1",
				Output: "--- FAIL: TestQuote <script>alert(1)</script>"}}},
	}}, {Name: "http", Label: "HTTP", Status: "failed", Error: "success check: tests still fail"}}
	cases := []struct {
		name string
		c    templ.Component
	}{
		{"conversation", Conversation(transcript, 1)},
		{"summary", SummaryView(Summary{Headline: "WebSocket finished in 16.2 s and optimized HTTP in 24.9 s: 35% sooner. Of the 8.7 s saved, 0.9 s was measured on this machine and 7.8 s is a model of a hosted API's work (preset hosted-post-sprint, post-sprint reading).", Split: "Of the 8.7 s saved against optimized HTTP, 0.8 s is measured engine work, 7.8 s the modelled hosted-post-sprint stack, and 0.1 s noise (the parts under 249 ms each, 1% of optimized HTTP's time).",
			Detail: "Across the readings, WebSocket finished from 11% sooner (plain) to 41% sooner (derived) than optimized HTTP.", StackDoc: "/docs/stack#hosted-post-sprint", SameRace: []SameRace{{Label: "The same race, lean", Config: `{"stack":{"preset":"lean"}}`}},
			Note:     "The lanes ran together and shared the 2 cores of this machine.",
			TimeWent: "Where the time went: HTTP: queue+prefill 52%, tools 22%.",
			WhatItWouldTake: "What it would take: for WebSocket to save 40% against optimized HTTP, each optimized HTTP turn would need 96.0 ms more API overhead on average " +
				"(optimized HTTP measured a median API overhead of 96.0 ms per turn and a modelled API stack of 1.50 ms per turn on average, over 30 turns).",
			Rows: []SummaryRow{{Lane: "http", Label: "HTTP", Status: "passed", Total: "6.60 s", Turns: "30", Input: "1,123,689", Cached: "1,038,848 (92%)",
				Output: "1,468", BytesSent: "3.92 MiB", MedianOverhead: "96.0 ms", StackPerTurn: "1.50 ms", APICPU: "2.90 s", RolloutsPerCore: "2", SavedVsHTTP: "–"}}})},
		{"lane-card", LaneCardView(LaneCard{Name: "http-chained", Label: "HTTP chained", How: "previous_response_id, store: true · /v1", Status: "running"})},
		{"legend", StageLegend([]Stage{{Name: "overhead", Label: "API overhead (measured)"}, {Name: "api_stack", Label: "API stack (modelled)", Kind: "modelled"}, {Name: "decode", Label: "decode"}}, `[{"name":"decode","label":"Decode"}]`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := renderString(t, tc.c)
			path := filepath.Join("testdata", tc.name+".golden.html")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s (run with -update if the change is intended):\n%s", tc.name, path, got)
			}
		})
	}
}

// TestTestIDs: the hooks issue 5 names, which tests and other tools use.
func TestTestIDs(t *testing.T) {
	race := renderString(t, RacePage(Page{Title: "Race"}, Race{RunID: "run_1", Cores: 2,
		RunLanes: []LaneCard{{Name: "http", Status: "queued"}, {Name: "http-optimized", Status: "running"}, {Name: "http-chained", Status: "passed"}, {Name: "ws", Status: "interrupted"}}}))
	explorer := renderString(t, ExplorerPage(Page{Title: "Explorer"}, Explorer{Examples: []Example{{Key: "text", Label: "Plain text", Body: "{}"}}}))
	runs := renderString(t, RunsPage(Page{Title: "Runs"}, RunsList{Rows: []RunRow{{ID: "run_1", Href: "/runs/run_1"}}}))
	for _, tc := range []struct {
		page string
		html string
		ids  []string
	}{
		{"race", race, []string{"race-scenario", "race-profile", "race-stack", "race-decode-tps", "race-rtt", "race-start", "lane-http", "lane-http-optimized", "lane-http-chained", "lane-ws", "lane-status", "race-summary"}},
		{"explorer", explorer, []string{"explorer-body", "explorer-send-ws", "explorer-send-http", "explorer-events"}},
		{"runs", runs, []string{"run-row"}},
	} {
		for _, id := range tc.ids {
			if !strings.Contains(tc.html, `data-testid="`+id+`"`) {
				t.Errorf("%s page lacks data-testid=%q", tc.page, id)
			}
		}
	}
	// Each lane card holds its own status, reading the lane's state.
	for _, s := range []string{`data-status="queued">queued<`, `data-status="running">running<`, `data-status="passed">passed<`, `data-status="interrupted">interrupted<`} {
		if !strings.Contains(race, s) {
			t.Errorf("race page lacks lane status %s", s)
		}
	}
}
