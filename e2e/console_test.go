package e2e

import (
	"regexp"
	"testing"

	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

// TestExplorerConsole: the explorer as a developer's console. A header
// and its query alias, one body compared over HTTP and WebSocket trace by
// trace, an event's raw JSON, a frame sent as typed, and a history that
// survives a reload.
func TestExplorerConsole(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	page := newAxePage(t, playwright.BrowserNewContextOptions{})
	goTo(t, page, a.URL()+"/explorer")
	check(t, expect.Locator(page.Locator(`html[data-ready="explorer"]`)).ToHaveCount(1), "explorer ready")
	body := page.GetByTestId("explorer-body")
	check(t, body.Fill(`{"model": "instant", "input": "Hello"}`), "type a body")

	// A header for HTTP, and its query alias for the upgrade.
	check(t, page.GetByText("Headers and the WebSocket query").Click(), "open the headers")
	check(t, page.GetByTestId("explorer-headers").Fill("X-Agentloop-Stack: hosted\nX-Agentloop-Scope: explorer"), "type the headers")
	check(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Use the headers' query aliases"}).Click(), "use the aliases")
	check(t, expect.Locator(page.GetByTestId("explorer-ws-query")).ToHaveValue("agentloop_stack=hosted&agentloop_scope=explorer"), "the aliases in the query")

	// The same body over both transports, the traces side by side; the
	// hosted stack (header, then alias) shows in both.
	check(t, page.GetByTestId("explorer-compare").Click(), "compare")
	diff := page.GetByTestId("explorer-diff")
	check(t, expect.Locator(diff).ToBeVisible(), "comparison shown")
	check(t, expect.Locator(diff.Locator("thead")).ToContainText("WebSocket − HTTP"), "comparison columns")
	check(t, expect.Locator(diff.Locator(`tr[data-stage="parse"]`)).ToHaveCount(1), "a measured stage compared")
	// A modelled stack stage in each column (the WebSocket skips some of them).
	stack := diff.Locator(`tr[data-stage^="stack_"]`)
	check(t, expect.Locator(stack.Locator("td:nth-child(3)").Filter(playwright.LocatorFilterOptions{HasText: regexp.MustCompile(`\d`)}).First()).ToBeAttached(), "the header reached HTTP")
	check(t, expect.Locator(stack.Locator("td:nth-child(4)").Filter(playwright.LocatorFilterOptions{HasText: regexp.MustCompile(`\d`)}).First()).ToBeAttached(), "the alias reached the WebSocket")
	check(t, expect.Locator(page.Locator("#explorer-conn")).ToContainText("?agentloop_stack=hosted"), "the upgrade carried the alias")
	check(t, expect.Locator(diff.GetByTestId("explorer-diff-why")).ToContainText("One request cannot show WebSocket mode's saving"), "why one request cannot show the saving")

	// A 10-turn chain both ways: the engine's time per turn side by side.
	check(t, page.GetByTestId("explorer-compare-chain").Click(), "compare a 10-turn chain")
	chainDiff := page.GetByTestId("explorer-chain-diff")
	check(t, expect.Locator(chainDiff.Locator("tr[data-turn]")).ToHaveCount(10, playwright.LocatorAssertionsToHaveCountOptions{Timeout: playwright.Float(60000)}), "ten turns compared")
	check(t, expect.Locator(chainDiff.Locator("tr.diff-total")).ToContainText("all turns"), "the chain's total")
	check(t, expect.Locator(page.GetByTestId("explorer-diff")).ToBeHidden(), "one comparison at a time")
	screenshot(t, page, "explorer-chain.png")

	// Each event opens to its raw JSON.
	first := page.Locator(`[data-testid="event"][data-type="response.created"]`).First()
	check(t, first.Locator("summary").Click(), "open an event")
	check(t, expect.Locator(first.Locator("pre.raw-json")).ToContainText(`"sequence_number": 0`), "raw JSON")

	// Any frame, as typed: the server answers a frame it cannot use with an error event.
	check(t, body.Fill(`{"type": "response.nonsense"}`), "type a frame")
	check(t, page.GetByTestId("explorer-send-raw").Click(), "send the frame")
	check(t, expect.Locator(page.Locator(`[data-testid="event"][data-type="error"]`)).ToHaveCount(1), "the server's answer")
	axeCheck(t, page, "explorer with events")
	screenshot(t, page, "explorer-console.png")

	// The history survives a reload and loads a request back.
	_, err := page.Reload()
	check(t, err, "reload")
	items := page.GetByTestId("history-item")
	check(t, expect.Locator(items).ToHaveCount(5), "five requests in the history (a chain is remembered once a transport)")
	check(t, expect.Locator(items.First()).ToHaveAttribute("data-transport", "frame"), "newest first")
	check(t, items.Nth(1).GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Load"}).Click(), "load the WebSocket request")
	check(t, expect.Locator(body).ToHaveValue(regexp.MustCompile(`"model": "instant"`)), "body loaded")
	check(t, expect.Locator(page.GetByTestId("explorer-headers")).ToHaveValue("X-Agentloop-Stack: hosted\nX-Agentloop-Scope: explorer"), "headers loaded")
}
