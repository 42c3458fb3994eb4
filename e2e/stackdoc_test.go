package e2e

import (
	"testing"

	"agentloop/app/apptest"

	"github.com/mxschmitt/playwright-go"
)

// TestStackDocAndSweepReadOnAPhone: on a fresh install, /docs/stack
// renders docs/stack.md and /sweep shows the labelled reference sweep
// before "your runs", with a legend, its lines named at their ends and
// explained; both are axe-clean, fit a phone without scrolling sideways,
// their chart labels stay at least 10 px tall there, their legends and
// labels compute to 14 px or more, and no two end labels overlap. Both
// pages are also read at desktop width, in the light and the dark theme.
func TestStackDocAndSweepReadOnAPhone(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	p := newAxePage(t, playwright.BrowserNewContextOptions{})
	check(t, p.SetViewportSize(390, 844), "phone width")

	goTo(t, p, a.URL()+"/docs/stack")
	check(t, expect.Locator(p.Locator("h1")).ToHaveText("The modelled API stack"), "the document's title")
	check(t, expect.Locator(p.Locator(".stack-doc table").First()).ToBeVisible(), "its tables")
	check(t, expect.Locator(p.Locator("#hosted")).ToHaveCount(1), "an anchor for the hosted preset")
	chart := p.GetByTestId("sensitivity-chart")
	check(t, expect.Locator(chart.GetByTestId("sensitivity-line").First()).ToBeAttached(), "the sensitivity chart, drawn from its table")
	check(t, expect.Locator(chart.Locator(".chart-legend li").First()).ToBeVisible(), "its legend")
	check(t, expect.Locator(chart.Locator("text.end-label").First()).ToBeVisible(), "its lines named at their ends")
	screenshotOf(t, chart, "sensitivity-phone.png")
	noHorizontalScroll(t, p)
	labelsReadable(t, p, "docs/stack")
	chartTextReadable(t, p, "docs/stack at 390 px", 0)
	axeCheck(t, p, "docs/stack")
	screenshot(t, p, "docs-stack-phone.png")

	goTo(t, p, a.URL()+"/sweep")
	ref := p.GetByTestId("sweep-reference")
	check(t, expect.Locator(ref).ToContainText("Reference sweep, 20"), "the reference sweep, dated")
	check(t, expect.Locator(ref).ToContainText("agentloop bench sweep"), "the command that made it")
	check(t, expect.Locator(ref.GetByTestId("sweep-legend").First()).ToBeVisible(), "a legend")
	check(t, expect.Locator(ref.GetByTestId("sweep-line").First()).ToBeAttached(), "a series")
	check(t, expect.Locator(ref.GetByTestId("sweep-series")).ToContainText("Prototype"), "the series in words")
	check(t, expect.Locator(ref.GetByTestId("sweep-settings")).ToContainText("One-click race"), "the settings beside the one-click race's")
	check(t, expect.Locator(p.GetByTestId("sweep-empty")).ToBeVisible(), "no runs of its own yet")
	referenceFirst(t, p)
	noHorizontalScroll(t, p)
	labelsReadable(t, p, "sweep")
	chartTextReadable(t, p, "sweep at 390 px", 0)
	axeCheck(t, p, "sweep")
	screenshot(t, p, "sweep-phone.png")

	// At desktop width the labels render at their full 14 px, in both
	// themes.
	check(t, p.SetViewportSize(1440, 900), "desktop width")
	for _, scheme := range []*playwright.ColorScheme{playwright.ColorSchemeLight, playwright.ColorSchemeDark} {
		check(t, p.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: scheme}), "colour scheme")
		suffix := ""
		if scheme == playwright.ColorSchemeDark {
			suffix = "-dark"
		}
		goTo(t, p, a.URL()+"/docs/stack")
		chartTextReadable(t, p, "docs/stack at 1440 px"+suffix, 14)
		screenshotOf(t, p.GetByTestId("sensitivity-chart"), "sensitivity-desktop"+suffix+".png")
		axeCheck(t, p, "docs/stack"+suffix)
		goTo(t, p, a.URL()+"/sweep")
		referenceFirst(t, p)
		chartTextReadable(t, p, "sweep at 1440 px"+suffix, 14)
		axeCheck(t, p, "sweep"+suffix)
		screenshot(t, p, "sweep-desktop"+suffix+".png")
	}
	focusedHeadingDrawsNoBox(t, p)
}

// focusedHeadingDrawsNoBox: a heading a script focuses (tabindex="-1",
// as the race focuses its Result) draws no box after a click, and is
// underlined, still without a box, after a key press.
func focusedHeadingDrawsNoBox(t *testing.T, p playwright.Page) {
	t.Helper()
	focusStyle := `() => {
		const h = document.getElementById("sweep-yours-title");
		h.setAttribute("tabindex", "-1");
		h.focus();
		const s = getComputedStyle(h);
		return [document.activeElement === h, s.outlineStyle, s.textDecorationLine];
	}`
	check(t, p.Locator("main summary").First().Click(), "click a control")
	v, err := p.Evaluate(focusStyle)
	check(t, err, "focus the heading after a click")
	if got := v.([]any); got[0] != true || got[1] != "none" || got[2] != "none" {
		t.Errorf("after a click, a focused heading (focused, outline, underline) = %v, want [true none none]", got)
	}
	check(t, p.Keyboard().Press("Shift"), "press a key")
	v, err = p.Evaluate(focusStyle)
	check(t, err, "focus the heading after a key")
	if got := v.([]any); got[0] != true || got[1] != "none" || got[2] != "underline" {
		t.Errorf("after a key, a focused heading (focused, outline, underline) = %v, want [true none underline]", got)
	}
}

// referenceFirst fails unless the reference sweep stands above "your
// runs".
func referenceFirst(t *testing.T, p playwright.Page) {
	t.Helper()
	v, err := p.Evaluate(`() => document.querySelector("[data-testid=sweep-reference]").getBoundingClientRect().top - document.querySelector("[data-testid=sweep-yours]").getBoundingClientRect().top`)
	check(t, err, "measure the sweep's sections")
	if d := toFloat(v); d >= 0 {
		t.Errorf("the reference sweep stands %.0f px below your runs", d)
	}
}

// chartTextReadable fails when a chart legend's text or a chart label
// (ticks, axis titles, end labels) computes under 14 px, when two end
// labels of a chart overlap, and, with rendered > 0, when a label renders
// smaller than that once its chart is scaled to the page.
func chartTextReadable(t *testing.T, p playwright.Page, where string, rendered float64) {
	t.Helper()
	v, err := p.Evaluate(`() => {
		let computed = Infinity, shown = Infinity, overlaps = 0, what = "";
		for (const e of document.querySelectorAll("main .chart-legend li, main .sweep-chart text, main .sensitivity-chart text")) {
			const px = parseFloat(getComputedStyle(e).fontSize);
			if (px < computed) { computed = px; what = e.tagName + ": " + e.textContent.trim().slice(0, 30); }
			const svg = e.closest("svg");
			if (svg) shown = Math.min(shown, px * svg.getBoundingClientRect().width / svg.viewBox.baseVal.width);
		}
		for (const svg of document.querySelectorAll("main .sweep-chart, main .sensitivity-chart")) {
			const r = [...svg.querySelectorAll("text.end-label")].map((e) => e.getBoundingClientRect());
			for (let i = 0; i < r.length; i++) for (let j = i + 1; j < r.length; j++)
				if (r[i].left < r[j].right && r[j].left < r[i].right && r[i].top < r[j].bottom - 1 && r[j].top < r[i].bottom - 1) overlaps++;
		}
		return [computed, shown, overlaps, what];
	}`)
	check(t, err, where+": measure the chart text")
	got := v.([]any)
	computed, shown, overlaps := toFloat(got[0]), toFloat(got[1]), toFloat(got[2])
	t.Logf("%s: chart text computes to %.1f px at least (%v), renders at %.1f px at least", where, computed, got[3], shown)
	if computed < 14 {
		t.Errorf("%s: chart text computes to %.1f px (%v), under 14 px", where, computed, got[3])
	}
	if overlaps > 0 {
		t.Errorf("%s: %.0f pairs of end labels overlap", where, overlaps)
	}
	if rendered > 0 && shown < rendered {
		t.Errorf("%s: chart labels render at %.1f px, under %.0f px", where, shown, rendered)
	}
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
