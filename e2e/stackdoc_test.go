package e2e

import (
	"path/filepath"
	"testing"

	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

// TestStackDocAndSweepReadOnAPhone: on a fresh install, /docs/stack
// renders docs/stack.md and /sweep shows the labelled reference sweep with
// a legend; both are axe-clean, fit a phone without scrolling sideways,
// and their chart labels stay at least 10 px tall there.
func TestStackDocAndSweepReadOnAPhone(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	axe := axeScript(t)
	p := newPageWith(t, playwright.BrowserNewContextOptions{BypassCSP: playwright.Bool(true)})
	check(t, p.SetViewportSize(390, 844), "phone width")

	goTo(t, p, a.URL()+"/docs/stack")
	check(t, expect.Locator(p.Locator("h1")).ToHaveText("The modelled API stack"), "the document's title")
	check(t, expect.Locator(p.Locator(".stack-doc table").First()).ToBeVisible(), "its tables")
	check(t, expect.Locator(p.Locator("#hosted")).ToHaveCount(1), "an anchor for the hosted preset")
	chart := p.GetByTestId("sensitivity-chart")
	check(t, expect.Locator(chart.GetByTestId("sensitivity-line").First()).ToBeAttached(), "the sensitivity chart, drawn from its table")
	check(t, expect.Locator(chart.Locator(".chart-legend li").First()).ToBeVisible(), "its legend")
	if _, err := chart.Screenshot(playwright.LocatorScreenshotOptions{Path: playwright.String(filepath.Join(shotDir, "sensitivity-phone.png"))}); err != nil {
		t.Errorf("screenshot of the sensitivity chart: %v", err)
	}
	noHorizontalScroll(t, p)
	labelsReadable(t, p, "docs/stack")
	axeCheck(t, p, axe, "docs/stack")
	screenshot(t, p, "docs-stack-phone.png")

	goTo(t, p, a.URL()+"/sweep")
	ref := p.GetByTestId("sweep-reference")
	check(t, expect.Locator(ref).ToContainText("Reference sweep, 20"), "the reference sweep, dated")
	check(t, expect.Locator(ref).ToContainText("agentloop bench sweep"), "the command that made it")
	check(t, expect.Locator(ref.GetByTestId("sweep-legend").First()).ToBeVisible(), "a legend")
	check(t, expect.Locator(ref.GetByTestId("sweep-line").First()).ToBeAttached(), "a series")
	noHorizontalScroll(t, p)
	labelsReadable(t, p, "sweep")
	axeCheck(t, p, axe, "sweep")
	screenshot(t, p, "sweep-phone.png")
}

// labelsReadable fails when any chart label on the page renders under
// 10 px tall (the sweep's were about 6 px on a phone).
func labelsReadable(t *testing.T, p playwright.Page, where string) {
	t.Helper()
	v, err := p.Evaluate(`() => Math.min(1000, ...[...document.querySelectorAll("main svg text")].map((e) => e.getBoundingClientRect().height).filter((h) => h > 0))`)
	check(t, err, where+": measure the labels")
	if h := toFloat(v); h < 10 {
		t.Errorf("%s: the smallest chart label is %.1f px tall at 390 px wide", where, h)
	}
}
