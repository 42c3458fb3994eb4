package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

// TestExplorerRoundTrips sends the function-tool example over WebSocket and
// over HTTP, each followed by the automatically chained request.
func TestExplorerRoundTrips(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	page := newPage(t)
	goTo(t, page, a.URL()+"/explorer")
	completed := page.Locator(`[data-testid="event"][data-type="response.completed"]`)

	done := 0
	for _, transport := range []string{"ws", "http"} {
		choose(t, page.Locator("#explorer-example"), "tool", "choose the example")
		body := page.GetByTestId("explorer-body")
		check(t, expect.Locator(body).ToHaveValue(regexp.MustCompile("get_weather")), "tool example loaded")

		check(t, page.GetByTestId("explorer-send-"+transport).Click(), "send over "+transport)
		done++
		check(t, expect.Locator(completed).ToHaveCount(done), transport+": first response completed")
		first := lastResponseID(t, page)

		// The chain checkbox filled the next body from that response.
		text, err := body.InputValue()
		check(t, err, "read the body")
		var next struct {
			Previous string `json:"previous_response_id"`
			Input    []struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
			} `json:"input"`
		}
		if err := json.Unmarshal([]byte(text), &next); err != nil {
			t.Fatalf("%s: the chained body is not JSON: %v\n%s", transport, err, text)
		}
		if next.Previous != first || len(next.Input) == 0 || next.Input[0].Type != "function_call_output" || next.Input[0].CallID == "" {
			t.Fatalf("%s: chained body does not continue %s with the tool output:\n%s", transport, first, text)
		}

		check(t, page.GetByTestId("explorer-send-"+transport).Click(), "send the follow-up over "+transport)
		done++
		check(t, expect.Locator(completed).ToHaveCount(done), transport+": follow-up completed")
		second := lastResponseID(t, page)
		if second == first {
			t.Errorf("%s: the follow-up has the first response's id", transport)
		}
		header := page.Locator("tr.request-row").Last()
		check(t, expect.Locator(header).ToContainText("previous_response_id "+first), transport+": follow-up chained")
	}

	if n, _ := page.Locator(`[data-testid="event"][data-type="error"]`).Count(); n != 0 {
		t.Errorf("%d error events", n)
	}
	// Every response starts at sequence number 0.
	created := page.Locator(`[data-testid="event"][data-type="response.created"] td:nth-child(2)`)
	check(t, expect.Locator(created).ToHaveText([]string{"0", "0", "0", "0"}), "sequence numbers restart per response")
	// The engine's trace of the newest response is shown.
	check(t, expect.Locator(page.Locator(".response").First().Locator(".trace-table")).ToContainText("parse"), "trace shown")
	// Each span's bar is coloured by the group the server gave it.
	bars, err := page.Locator(".response").First().Locator(".trace-bar rect").EvaluateAll(`(rs) => rs.map((r) => r.getAttribute("class"))`)
	check(t, err, "read the trace bars")
	groups := map[string]bool{}
	for _, g := range api.WaterfallGroups {
		groups["stage-"+g.Name] = true
	}
	if list, _ := bars.([]any); len(list) == 0 {
		t.Error("the trace has no bars")
	} else {
		for _, c := range list {
			if s, _ := c.(string); !groups[s] {
				t.Errorf("a trace bar's class %q is no waterfall group", c)
			}
		}
	}
	// Copy as code reflects the body.
	check(t, page.GetByText("Copy as code").Click(), "open copy as code")
	choose(t, page.Locator("#copy-lang"), "go", "choose Go")
	check(t, expect.Locator(page.Locator("#copy-code")).ToContainText("NewStreaming"), "Go snippet")
	screenshot(t, page, "explorer.png")
}

func lastResponseID(t *testing.T, page playwright.Page) string {
	t.Helper()
	id, err := page.Locator(".response .response-id").First().TextContent()
	check(t, err, "read the response id")
	if !strings.HasPrefix(id, "resp_") {
		t.Fatalf("response id %q", id)
	}
	return id
}

// TestExplorerLanes sends the two-sub-agent example: two creates on two
// lanes of the one WebSocket, each event shown under its lane, then the
// chained follow-up continues each lane's own response on that lane.
func TestExplorerLanes(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	page := newPage(t)
	goTo(t, page, a.URL()+"/explorer")
	choose(t, page.Locator("#explorer-example"), "lanes", "choose the lanes example")
	body := page.GetByTestId("explorer-body")
	check(t, expect.Locator(body).ToHaveValue(regexp.MustCompile("agent_b")), "lanes example loaded")
	check(t, page.GetByTestId("explorer-send-ws").Click(), "send the lanes")
	for _, lane := range []string{"agent_a", "agent_b"} {
		done := page.Locator(`[data-testid="event"][data-type="response.completed"][data-lane="` + lane + `"]`)
		check(t, expect.Locator(done).ToHaveCount(1), lane+" completed")
	}
	// A lane's event names its lane and opens to its raw JSON.
	doneA := page.Locator(`[data-testid="event"][data-type="response.completed"][data-lane="agent_a"]`)
	check(t, expect.Locator(doneA.Locator("summary")).ToContainText("[agent_a]"), "the lane in the detail")
	check(t, doneA.Locator("summary").Click(), "open the lane's event")
	check(t, expect.Locator(doneA.Locator("pre.raw-json")).ToContainText(`"stream_id": "agent_a"`), "the lane's raw JSON")
	// The chained body is one follow-up per lane, each continuing its own.
	check(t, expect.Locator(body).ToHaveValue(regexp.MustCompile("previous_response_id")), "follow-ups filled in")
	// The batch is in the history; HTTP and the comparison refuse an array body.
	check(t, expect.Locator(page.Locator(`[data-testid="history-item"][data-transport="lanes"]`)).ToHaveCount(1), "the batch remembered")
	errBox := page.Locator("#explorer-error")
	check(t, page.GetByTestId("explorer-send-http").Click(), "send the lanes over HTTP")
	check(t, expect.Locator(errBox).ToContainText("send it over WebSocket"), "HTTP refuses lanes")
	check(t, page.GetByTestId("explorer-compare").Click(), "compare the lanes")
	check(t, expect.Locator(errBox).ToContainText("compare one of its bodies"), "the comparison refuses lanes")
	text, err := body.InputValue()
	check(t, err, "read the body")
	var next []struct {
		StreamID string `json:"stream_id"`
		Previous string `json:"previous_response_id"`
	}
	if err := json.Unmarshal([]byte(text), &next); err != nil || len(next) != 2 || next[0].StreamID != "agent_a" || next[1].StreamID != "agent_b" ||
		next[0].Previous == "" || next[0].Previous == next[1].Previous {
		t.Fatalf("the follow-ups do not continue each lane: %v\n%s", err, text)
	}
	check(t, page.GetByTestId("explorer-send-ws").Click(), "send the follow-ups")
	completed := page.Locator(`[data-testid="event"][data-type="response.completed"]`)
	check(t, expect.Locator(completed).ToHaveCount(4), "follow-ups completed")
	if n, _ := page.Locator(`[data-testid="event"][data-type="error"]`).Count(); n != 0 {
		t.Errorf("%d error events", n)
	}
	// Copy as code sends both bodies as lanes.
	check(t, page.GetByText("Copy as code").Click(), "open copy as code")
	choose(t, page.Locator("#copy-transport"), "ws", "choose WebSocket")
	choose(t, page.Locator("#copy-lang"), "go", "choose Go")
	check(t, expect.Locator(page.Locator("#copy-code")).ToContainText("ended < 2"), "Go lanes snippet")
}
