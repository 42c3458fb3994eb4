package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

// TestExplorerRoundTrips sends the function-tool example over WebSocket and
// over HTTP, each followed by the automatically chained request.
func TestExplorerRoundTrips(t *testing.T) {
	needBrowser(t)
	a := apptest.Start(t)
	page := newPage(t)
	goTo(t, page, a.URL()+"/explorer")
	completed := page.Locator(`[data-testid="event"][data-type="response.completed"]`)

	done := 0
	for _, transport := range []string{"ws", "http"} {
		_, err := page.Locator("#explorer-example").SelectOption(playwright.SelectOptionValues{Values: &[]string{"tool"}})
		check(t, err, "choose the example")
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
	// Copy as code reflects the body.
	check(t, page.GetByText("Copy as code").Click(), "open copy as code")
	_, err := page.Locator("#copy-lang").SelectOption(playwright.SelectOptionValues{Values: &[]string{"go"}})
	check(t, err, "choose Go")
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
