package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/rollout"

	"github.com/mxschmitt/playwright-go"
)

// storyLanes are the lanes of apptest.ShortRace, the home page's race here.
var storyLanes = []string{"http", "http-optimized", "ws"}

// TestClassroom is the playground as a class, a keyboard and a phone meet
// it. The form's checks start nothing; one race, the home page's short
// preset (apptest.ShortRace) started with the keyboard alone, serves every
// check after it: the result first, presenter mode at 1920×1080, the
// side-by-side replay stepped by key, axe-core on every page in light and
// dark, and every page at phone width.
func TestClassroom(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t, apptest.ShortRace)
	page := newPage(t)
	var runID string

	t.Run("form", func(t *testing.T) {
		goTo(t, page, a.URL()+"/race")
		check(t, expect.Locator(page.Locator(`html[data-ready="race"]`)).ToHaveCount(1), "race script ready")
		kb := page.Keyboard()
		press := func(keys ...string) {
			t.Helper()
			for _, k := range keys {
				check(t, kb.Press(k), "press "+k)
			}
		}
		// A short scenario on the instant profile: the race takes moments.
		tabTo(t, page, "#race-scenario")
		check(t, kb.Type("quick"), "choose the scenario by typing")
		check(t, expect.Locator(page.GetByTestId("race-scenario")).ToHaveValue("quick-fix"), "short scenario chosen")
		tabTo(t, page, "#race-profile")
		check(t, kb.Type("instant"), "choose the profile by typing")
		check(t, expect.Locator(page.GetByTestId("race-profile")).ToHaveValue("instant"), "instant profile chosen")
		tabTo(t, page, "#race-stack")
		check(t, kb.Type("lean"), "choose the stack by typing")
		check(t, expect.Locator(page.GetByTestId("race-stack")).ToHaveValue("lean"), "lean stack chosen")

		// An empty round trip is refused, named as labelled, and tied to its field.
		tabTo(t, page, "#race-rtt")
		press("Control+a", "Backspace", "Enter")
		rtt := page.GetByTestId("race-rtt")
		check(t, expect.Locator(rtt).ToHaveAttribute("aria-invalid", "true"), "round trip marked invalid")
		check(t, expect.Locator(page.Locator("#race-rtt-error")).ToContainText("Round trip (ms)"), "error names the field")
		check(t, expect.Locator(rtt).ToHaveAttribute("aria-describedby", "race-rtt-error"), "error tied to the field")
		check(t, expect.Locator(rtt).ToBeFocused(), "focus back on the field")
		check(t, expect.Locator(page.Locator("#race-view")).ToBeHidden(), "no race started")
		check(t, kb.Type("0"), "type a round trip")
		tabTo(t, page, "#race-tool")
		press("Control+a")
		check(t, kb.Type("0"), "type a tool time")
		check(t, expect.Locator(rtt).Not().ToHaveAttribute("aria-invalid", "true"), "the fixed field is valid again")

		// The three lanes of presenter mode's story.
		tabTo(t, page, `input[name="lanes"][value="http-chained"]`)
		press("Space")
		check(t, expect.Locator(page.Locator(`input[name="lanes"][value="http-chained"]`)).Not().ToBeChecked(), "http-chained left out")

		// A negative seed and zero repeats are refused too, never changed.
		tabTo(t, page, "details.more > summary")
		press("Enter")
		for _, bad := range []struct{ id, value, label string }{{"race-seed", "-3", "Seed"}, {"race-repeats", "0", "Repeats"}} {
			tabTo(t, page, "#"+bad.id)
			press("Control+a")
			check(t, kb.Type(bad.value), "type "+bad.value)
			press("Enter")
			field := page.Locator("#" + bad.id)
			check(t, expect.Locator(field).ToHaveAttribute("aria-invalid", "true"), bad.label+" marked invalid")
			check(t, expect.Locator(page.Locator("#"+bad.id+"-error")).ToContainText(bad.label+" must be"), bad.label+" error names the field")
			check(t, expect.Locator(field).ToHaveValue(bad.value), bad.label+" kept as typed")
			check(t, expect.Locator(page.Locator("#race-view")).ToBeHidden(), "no race started")
			press("Control+a")
			check(t, kb.Type("1"), "fix "+bad.label)
		}

		// The first drill row is valid as it comes: a drill that can hit a
		// lane the race runs, and each drill names the transports it affects.
		tabTo(t, page, "#race-drill-add")
		press("Enter")
		check(t, expect.Locator(page.Locator("#race-drill-0-lane")).ToHaveValue("ws"), "the first row's lane")
		check(t, expect.Locator(page.Locator("#race-drill-0-drill")).ToHaveValue("evict-cache"), "the first row's drill")
		check(t, expect.Locator(page.Locator(`#race-drill-0-drill option[value="http-503"]`)).ToHaveText("http-503 (HTTP lanes only)"), "a drill names its transports")
	})

	t.Run("keyboard", func(t *testing.T) {
		goTo(t, page, a.URL()+"/")
		check(t, expect.Locator(page.GetByTestId("present-link")).ToHaveAttribute("href", "/race?present"), "the home page links presenter mode")
		tabTo(t, page, "#start-preset")
		check(t, page.Keyboard().Press("Enter"), "start the home page's race")
		summary := raceEnds(t, page)
		check(t, expect.Locator(summary).ToContainText("finished"), "headline")
		// Focus moves to the result, at the top, and the settings fold away.
		check(t, expect.Locator(page.Locator("#race-end-title")).ToBeFocused(), "focus on the result")
		check(t, expect.Locator(page.Locator("#race-settings")).Not().ToHaveAttribute("open", ""), "settings folded")
		check(t, expect.Locator(page.Locator("#race-state")).ToContainText("finished"), "the live region says the headline")
		for _, l := range storyLanes {
			check(t, expect.Locator(page.GetByTestId("lane-"+l).GetByTestId("lane-status")).ToHaveText("passed"), "lane "+l+" passed")
		}
		u := page.URL()
		i := strings.Index(u, "run=")
		if i < 0 {
			t.Fatalf("the URL %q does not name the run", u)
		}
		runID = u[i+4:]
		check(t, expect.Locator(page.Locator("#race-detail-link")).ToHaveAttribute("href", "/runs/"+runID), "the permalink")
		check(t, expect.Locator(page.Locator("#race-export-link")).ToHaveAttribute("href", "/api/runs/"+runID), "the JSON link")
		check(t, expect.Locator(page.GetByTestId("race-links")).ToBeVisible(), "links shown")
		// The result sits above the lanes.
		above, err := page.Evaluate(`() => document.getElementById("race-end").getBoundingClientRect().top < document.getElementById("lanes").getBoundingClientRect().top`)
		check(t, err, "compare positions")
		if above != true {
			t.Error("the result is not above the lanes")
		}
		// The race's clock reads the same live and reloaded.
		live, err := page.Locator("#race-elapsed").TextContent()
		check(t, err, "read the elapsed time")
		goTo(t, page, a.URL()+"/race?run="+runID)
		check(t, expect.Locator(summary).ToBeVisible(), "result reloaded")
		check(t, expect.Locator(page.Locator("#race-elapsed")).ToHaveText(live), "Elapsed agrees after a reload")
		check(t, expect.Locator(page.GetByTestId("race-replay")).ToBeVisible(), "the replay offered")
		// Every chart has its data as a table too.
		check(t, expect.Locator(page.Locator("#overhead-data table tbody tr").First()).ToBeAttached(), "overhead chart data")
		check(t, expect.Locator(page.GetByTestId("lane-ws").Locator(".chart-data table tbody tr").First()).ToBeAttached(), "waterfall data")
		check(t, expect.Locator(page.GetByTestId("lane-ws").Locator(".chart-data tbody th").First()).ToHaveText("warm-up (generate: false)"), "the warm-up row named")
		// Where the time goes: one stacked bar per lane, and its table.
		check(t, expect.Locator(page.Locator("#time-bars-data tbody tr")).ToHaveCount(len(storyLanes)), "one time bar per lane")
		check(t, expect.Locator(page.Locator("#time-bars rect.stage-overhead")).ToHaveCount(len(storyLanes)), "measured overhead in every bar")
		check(t, expect.Locator(page.Locator("#time-bars .bar-total")).ToHaveCount(len(storyLanes)), "lane totals on the bars")
		// The race track: one lane each, every one crossed, with its place.
		check(t, expect.Locator(page.Locator(`.track-rows > li[data-state="finished"]`)).ToHaveCount(len(storyLanes)), "every lane crossed on the track")
		// The overhead chart's x-axis switches to the context size.
		tabTo(t, page, "#overhead-x")
		check(t, page.Keyboard().Type("context"), "choose the context axis")
		check(t, expect.Locator(page.Locator("#overhead-chart .axis-label")).ToHaveText("context (input tokens)"), "context axis")
	})
	if runID == "" {
		t.Fatal("no race to look at")
	}

	t.Run("presenter", func(t *testing.T) {
		// The live race's result in presenter mode: step 3, on one screen.
		p := newPageWith(t, playwright.BrowserNewContextOptions{Viewport: &playwright.Size{Width: 1920, Height: 1080}})
		goTo(t, p, a.URL()+"/race?present&run="+runID+"#step-3")
		check(t, expect.Locator(p.Locator("html.present")).ToHaveCount(1), "presenter mode on")
		check(t, expect.Locator(p.Locator("header.top")).ToBeHidden(), "no site header")
		check(t, expect.Locator(p.GetByTestId("race-summary")).ToContainText("finished"), "the headline on step 3")
		check(t, expect.Locator(p.GetByTestId("race-saving")).ToBeVisible(), "the saving's bar on step 3")
		stepFits(t, p, 3, "the live race's result")
		screenshot(t, p, "present-live-result.png")
		check(t, p.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeDark}), "dark")
		screenshot(t, p, "present-live-result-dark.png")
		check(t, p.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeLight}), "light")
		// The live race on the track: every lane crossed, with its place.
		check(t, p.Keyboard().Press("ArrowLeft"), "press ←")
		onStep(t, p, 2)
		check(t, expect.Locator(p.Locator(".track-rows > li")).ToHaveCount(len(storyLanes)), "one track per lane")
		check(t, expect.Locator(p.Locator(`.track-rows > li[data-state="finished"]`)).ToHaveCount(len(storyLanes), playwright.LocatorAssertionsToHaveCountOptions{Timeout: playwright.Float(60000)}), "every lane crossed")
		check(t, expect.Locator(p.Locator(".track-rows .track-result").First()).ToContainText(" · "), "a place and a finish time")
		screenshot(t, p, "present-live-track.png")

		// r resets to a fresh race: the recording, on the race's step.
		check(t, p.Keyboard().Press("r"), "press r")
		check(t, p.WaitForURL(a.URL()+"/race?present#step-2"), "reset")
		check(t, expect.Locator(p.GetByTestId("race-recording-label")).ToBeVisible(), "the recording after reset")
		check(t, expect.Locator(p.GetByTestId("race-start")).ToBeFocused(), "start focused after reset")
	})

	keyed := apptest.Start(t, func(c *app.Config) { c.APIKey = "sk-e2e" })
	pages := []struct{ name, url string }{
		{"home", a.URL() + "/"},
		{"race", a.URL() + "/race"},
		{"race-result", a.URL() + "/race?run=" + runID},
		{"present", a.URL() + "/race?present&run=" + runID},
		{"present-recording", a.URL() + "/race?present"},
		{"explorer", a.URL() + "/explorer"},
		{"runs", a.URL() + "/runs"},
		{"runs-bad-date", a.URL() + "/runs?since=yesterday"},
		{"run", a.URL() + "/runs/" + runID},
		{"sweep", a.URL() + "/sweep"},
		{"docs", a.URL() + "/docs"},
		{"docs-stack", a.URL() + "/docs/stack"},
		{"not-found", a.URL() + "/no-such-page"},
		{"login", keyed.URL() + "/race"},
	}

	// The pages are read, not changed, from here on: the two colour
	// schemes' axe passes and the phone pass run side by side.
	for _, scheme := range []*playwright.ColorScheme{playwright.ColorSchemeLight, playwright.ColorSchemeDark} {
		t.Run("axe-"+string(*scheme), func(t *testing.T) {
			t.Parallel()
			// Browsers log the login page's 401, the bad filter's 400 and the
			// missing page's 404.
			p := newAxePage(t, playwright.BrowserNewContextOptions{}, "status of 401", "status of 400", "status of 404")
			check(t, p.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: scheme}), "colour scheme")
			for _, pg := range pages {
				goTo(t, p, pg.url)
				settle(t, p, pg.name)
				axeCheck(t, p, pg.name+" ("+string(*scheme)+")")
			}
		})
	}

	t.Run("runs-bad-date", func(t *testing.T) {
		p := newPage(t, "status of 400")
		goTo(t, p, a.URL()+"/runs?since=yesterday")
		check(t, expect.Locator(p.Locator("#filter-since-error")).ToContainText("From"), "the date error names the field")
		check(t, expect.Locator(p.Locator("#filter-since")).ToHaveAttribute("aria-invalid", "true"), "the field is marked")
		check(t, expect.Locator(p.GetByText("No runs yet")).ToHaveCount(0), "no claim that there are no runs")
	})

	t.Run("phone", func(t *testing.T) {
		t.Parallel()
		p := newPage(t, "status of 401", "status of 400", "status of 404")
		check(t, p.SetViewportSize(390, 844), "phone width")
		for _, pg := range pages {
			goTo(t, p, pg.url)
			settle(t, p, pg.name)
			v, err := p.Evaluate(`() => document.documentElement.scrollWidth - document.documentElement.clientWidth`)
			check(t, err, "measure "+pg.name)
			if n := toFloat(v); n > 0 {
				t.Errorf("%s scrolls sideways at 390 px: %.0f px too wide", pg.name, n)
			}
			// The result table, the runs list and the docs fit without a scroll
			// box (a chart's folded data table may scroll in its own region,
			// and so may the sweep's wide data table and docs/stack.md's wide
			// tables of figures).
			wide, err := p.Evaluate(`() => [...document.querySelectorAll("main .table-wrap")].filter((w) => !w.closest(".chart-data") && w.offsetParent && w.scrollWidth > w.clientWidth + 1).length`)
			check(t, err, "measure tables of "+pg.name)
			if n := toFloat(wide); n > 0 && pg.name != "sweep" && pg.name != "docs-stack" {
				t.Errorf("%s: %.0f tables scroll sideways at 390 px", pg.name, n)
			}
		}
		goTo(t, p, a.URL()+"/race?run="+runID)
		settle(t, p, "race-result")
		screenshot(t, p, "race-result-phone.png")
		screenshotOf(t, p.Locator("#race-end"), "race-result-table-phone.png")
		check(t, p.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeDark}), "dark")
		goTo(t, p, a.URL()+"/runs")
		screenshot(t, p, "runs-phone-dark.png")
		goTo(t, p, a.URL()+"/docs")
		screenshot(t, p, "docs-phone-dark.png")
	})
}

// smallestText is the smallest computed font size, in px, of text a
// person can see in <main>: rendered, not visually hidden, SVG included.
func smallestText(t *testing.T, p playwright.Page) float64 {
	t.Helper()
	v, err := p.Evaluate(`() => {
		let min = Infinity, where = "";
		const walk = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			const e = n.parentElement;
			if (!e || !n.textContent.trim() || e.closest("title, desc, script, style, template, option, .visually-hidden")) continue;
			if (!e.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
			const r = e.getBoundingClientRect();
			if (r.width < 2 || r.height < 2) continue;
			const px = parseFloat(getComputedStyle(e).fontSize);
			if (px < min) { min = px; where = e.tagName + "." + e.getAttribute("class") + ": " + n.textContent.trim().slice(0, 40); }
		}
		return [min, where];
	}`)
	check(t, err, "measure the text")
	pair := v.([]any)
	px := toFloat(pair[0])
	if px < 20 {
		t.Logf("smallest text: %v", pair[1])
	}
	return px
}

// settle waits until a page has drawn what its script draws.
func settle(t *testing.T, p playwright.Page, name string) {
	t.Helper()
	switch name {
	case "race-result":
		check(t, expect.Locator(p.GetByTestId("race-summary")).ToBeVisible(), name+": result shown")
	case "present", "present-recording":
		check(t, expect.Locator(p.GetByTestId("present-step-name")).ToHaveText("1 of 4: the lanes"), name+": first step shown")
	case "home":
		check(t, expect.Locator(p.Locator(`html[data-ready="home"]`)).ToHaveCount(1), name+": script ready")
	case "run":
		check(t, expect.Locator(p.Locator("#timeline-lanes svg").First()).ToBeAttached(), name+": timeline drawn")
	case "explorer", "race":
		check(t, expect.Locator(p.Locator(`html[data-ready="`+name+`"]`)).ToHaveCount(1), name+": script ready")
	}
}

// tabTo presses Tab until the element matching sel has the focus.
func tabTo(t *testing.T, p playwright.Page, sel string) {
	t.Helper()
	for range 60 {
		on, err := p.Evaluate(`(sel) => document.activeElement !== null && document.activeElement.matches(sel)`, sel)
		check(t, err, "read the focus")
		if on == true {
			return
		}
		check(t, p.Keyboard().Press("Tab"), "press Tab")
	}
	t.Fatalf("Tab never reached %s", sel)
}

// axeSource is axe-core's source, installed by scripts/e2e-setup.sh.
var axeSource = sync.OnceValues(func() (string, error) {
	path := cmp.Or(os.Getenv("AXE_CORE_PATH"), filepath.Join(os.Getenv("PLAYWRIGHT_DRIVER_PATH"), "axe", "node_modules", "axe-core", "axe.min.js"))
	b, err := os.ReadFile(path)
	return string(b), err
})

// newAxePage is newPageWith on a browser context that loads axe-core into
// every document before the page's own scripts, for axeCheck. Loaded so,
// axe-core is sent to the browser once a context rather than once a check,
// and the browser compiles it as one script: seven pages checked cost 4.2
// to 4.4 CPU-seconds against 6.2 to 6.4 with a script tag injected into
// each. The pages' Content-Security-Policy stays in force: neither the
// context's script nor the checks are the page's own.
func newAxePage(t *testing.T, opts playwright.BrowserNewContextOptions, allowed ...string) playwright.Page {
	t.Helper()
	axe, err := axeSource()
	if err != nil {
		t.Fatalf("axe-core is missing (%v): run `make e2e-deps` (scripts/e2e-setup.sh installs it)", err)
	}
	p := newPageWith(t, opts, allowed...)
	check(t, p.Context().AddInitScript(playwright.Script{Content: playwright.String(axe)}), "load axe-core into the context's pages")
	return p
}

// axeCheck runs axe-core on a page of newAxePage and fails on every
// serious or critical violation, naming the rule and the elements.
func axeCheck(t *testing.T, p playwright.Page, where string) {
	t.Helper()
	v, err := p.Evaluate(`async () => {
		if (typeof axe === "undefined") return "not loaded";
		const r = await axe.run(document, { resultTypes: ["violations"] });
		return JSON.stringify(r.violations
			.filter((v) => v.impact === "serious" || v.impact === "critical")
			.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ") + ": " + n.failureSummary) })));
	}`)
	if err != nil {
		t.Fatalf("%s: run axe-core: %v", where, err)
	}
	if v == "not loaded" {
		t.Fatalf("%s: axe-core is not in the page: open it with newAxePage", where)
	}
	var found []struct {
		ID, Impact, Help string
		Nodes            []string
	}
	if err := json.Unmarshal([]byte(fmt.Sprint(v)), &found); err != nil {
		t.Fatalf("%s: axe-core result: %v", where, err)
	}
	for _, f := range found {
		t.Errorf("%s: %s violation %s (%s):\n  %s", where, f.Impact, f.ID, f.Help, strings.Join(f.Nodes, "\n  "))
	}
}

// recordedLanes are the lanes of the recording the binary carries:
// presenter mode's classroom race's.
var recordedLanes = rollout.Classroom.Lanes

// presentSteps are presenter mode's steps, each by what it shows.
var presentSteps = []struct{ name, shows string }{
	{"1 of 4: the lanes", `[data-testid="present-story"]`},
	{"2 of 4: the race", `[data-testid="race-track"]`},
	{"3 of 4: the result", "#race-end"},
	{"4 of 4: what is modelled", `[data-testid="present-modelled"]`},
}

// TestPresenterSteps is presenter mode on a fresh install, as a class sees
// it: it opens on the recorded race the binary carries, four steps of one
// screen each at 1920×1080 and 1280×720, type the back of the room reads,
// and every key changes the step on screen as it should. The recording
// serves the layout; S starts one short race, which R cancels. The home
// page plays the recording on the track, at 390 px too.
func TestPresenterSteps(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t, apptest.ShortRace)
	p := newPageWith(t, playwright.BrowserNewContextOptions{Viewport: &playwright.Size{Width: 1920, Height: 1080}})
	goTo(t, p, a.URL()+"/race?present")
	check(t, expect.Locator(p.Locator("header.top")).ToBeHidden(), "no site header")
	onStep(t, p, 1)
	check(t, expect.Locator(p.GetByTestId("present-story").Locator("li")).ToContainText([]string{"HTTP", "HTTP optimized", "WebSocket"}), "the ready-made race's lanes, one line each")
	kb := p.Keyboard()
	press := func(k string) {
		t.Helper()
		check(t, kb.Press(k), "press "+k)
	}

	t.Run("steps", func(t *testing.T) {
		for n := 1; n <= len(presentSteps); n++ {
			if n > 1 {
				press("ArrowRight")
			}
			onStep(t, p, n)
			if n == 2 {
				check(t, expect.Locator(p.GetByTestId("race-recording-label")).ToContainText("A recording (2"), "labelled a recording, dated")
				check(t, expect.Locator(p.GetByTestId("race-start")).ToHaveText("Race it live"), "race it live, beside it")
				// It plays as a race on showing (the home page's plays to the
				// finish below); "Show all" ends it here, for the layout.
				check(t, expect.Locator(p.GetByTestId("race-replay-clock")).ToContainText("Replay of the measured run"), "the recording plays")
				check(t, p.Locator("#race-replay-stop").Click(), "show all")
				check(t, expect.Locator(p.Locator(`.track-rows > li[data-state="finished"]`)).ToHaveCount(len(recordedLanes)), "every lane crossed")
				check(t, expect.Locator(p.GetByTestId("track-caption")).ToContainText(" finished — "), "the first finish marked")
			}
			if n == 3 {
				check(t, expect.Locator(p.GetByTestId("race-summary")).ToContainText("finished in"), "the result in plain words")
				check(t, expect.Locator(p.GetByTestId("race-saving")).ToBeVisible(), "the saving, measured and modelled")
			}
			if n == 4 {
				check(t, expect.Locator(p.GetByTestId("present-stack-link")).ToHaveAttribute("href", "/docs/stack"), "the stack explained")
			}
			stepFits(t, p, n, "1920×1080")
			screenshot(t, p, fmt.Sprintf("present-step-%d.png", n))
		}
		press("ArrowRight")
		onStep(t, p, 4) // the last step stays
		check(t, p.SetViewportSize(1280, 720), "1280×720")
		for n := len(presentSteps); n >= 1; n-- {
			if n < len(presentSteps) {
				press("ArrowLeft")
			}
			onStep(t, p, n)
			stepFits(t, p, n, "1280×720")
		}
		press("ArrowLeft")
		onStep(t, p, 1) // the first step stays
		check(t, p.SetViewportSize(1920, 1080), "1920×1080")
	})

	t.Run("replay keys", func(t *testing.T) {
		// P replays the race from the result's step: the track shows.
		press("ArrowRight")
		press("ArrowRight")
		onStep(t, p, 3)
		press("p")
		onStep(t, p, 2)
		// "Show all" above cleared the replay's clock: P started it again.
		check(t, expect.Locator(p.GetByTestId("race-replay-clock")).ToContainText("Replay of the measured run"), "P replays")
		// N steps the replay a turn, from any step: every lane shows its
		// first turn before any lane shows its last.
		press("ArrowRight")
		onStep(t, p, 3)
		rows := p.Locator(".track-rows > li")
		step := func() []int {
			t.Helper()
			press("n")
			onStep(t, p, 2)
			check(t, expect.Locator(p.GetByTestId("race-replay-clock")).ToContainText("Replay of the measured run"), "the replay labelled")
			v, err := rows.EvaluateAll(`(rs) => rs.map((r) => [Number(r.dataset.turnsDone), Number(r.dataset.turnsOf)])`)
			check(t, err, "read the track")
			var got []int
			for _, c := range v.([]any) {
				pair := c.([]any)
				got = append(got, int(toFloat(pair[0])), int(toFloat(pair[1])))
			}
			return got
		}
		moved := false
		prev := step()
		for range 400 {
			st := step()
			anyLast, allFirst, allLast := false, true, true
			for i := 0; i < len(st); i += 2 {
				anyLast = anyLast || st[i] >= st[i+1]
				allFirst = allFirst && st[i] >= 1
				allLast = allLast && st[i] >= st[i+1]
				moved = moved || st[i] > prev[i]
			}
			if anyLast && !allFirst {
				t.Fatalf("a lane finished before every lane had done its first turn: %v", st)
			}
			prev = st
			if allLast {
				break
			}
		}
		if !moved {
			t.Errorf("N never moved a runner: %v", prev)
		}
	})

	t.Run("start and reset", func(t *testing.T) {
		// S starts the ready-made race from the last step: the race's step
		// shows it live. R cancels it and resets to the recording.
		press("ArrowRight")
		press("ArrowRight")
		onStep(t, p, 4)
		press("s")
		onStep(t, p, 2)
		check(t, p.WaitForURL(regexp.MustCompile(`/race\?present&run=run_\w+#step-2$`)), "the live race's address")
		check(t, expect.Locator(p.GetByTestId("race-recording-label")).ToBeHidden(), "no longer the recording")
		check(t, expect.Locator(p.Locator(".track-rows > li")).ToHaveCount(3), "the live race's lanes on the track")
		press("r")
		check(t, p.WaitForURL(a.URL()+"/race?present#step-2"), "reset")
		onStep(t, p, 2)
		check(t, expect.Locator(p.GetByTestId("race-recording-label")).ToBeVisible(), "the recording again")
		check(t, expect.Locator(p.GetByTestId("race-start")).ToBeFocused(), "start focused after reset")
	})

	t.Run("home", func(t *testing.T) {
		h := newPage(t)
		goTo(t, h, a.URL()+"/")
		track := h.GetByTestId("race-track")
		check(t, expect.Locator(track.GetByTestId("race-recording-label")).ToContainText("A recording ("), "the home page labels the recording")
		check(t, expect.Locator(h.Locator("#start-preset")).ToHaveText("Race it live"), "race it live, beside it")
		check(t, expect.Locator(track.Locator(`.track-rows > li[data-state="finished"]`)).ToHaveCount(len(recordedLanes), playwright.LocatorAssertionsToHaveCountOptions{Timeout: playwright.Float(90000)}), "the recording plays to the finish")
		// Each lane crossed with its own place.
		results, err := track.Locator(".track-rows .track-result").AllTextContents()
		check(t, err, "read the places")
		places := map[string]bool{}
		for _, r := range results {
			place, _, _ := strings.Cut(r, " · ")
			places[place] = true
		}
		if len(places) != len(recordedLanes) || !places["1st"] {
			t.Errorf("the lanes' places: %q", results)
		}
		check(t, h.SetViewportSize(390, 844), "phone width")
		noHorizontalScroll(t, h)
		screenshotOf(t, track, "track-390.png")
	})
}

// onStep waits until presenter mode shows step n, and only it.
func onStep(t *testing.T, p playwright.Page, n int) {
	t.Helper()
	s := presentSteps[n-1]
	check(t, expect.Locator(p.GetByTestId("present-step-name")).ToHaveText(s.name), "on step "+s.name)
	check(t, expect.Locator(p.Locator(s.shows)).ToBeVisible(), s.name+" shown")
	for i, o := range presentSteps {
		if i != n-1 {
			check(t, expect.Locator(p.Locator(o.shows)).ToBeHidden(), o.name+" hidden on step "+s.name)
		}
	}
}

// stepFits checks the step on screen: no vertical scroll and, from
// 1280 px wide, the font floors: 20 px for any text in <main>, 28 px for
// what the class must read (data-class-reads) and 32 px for lane names.
func stepFits(t *testing.T, p playwright.Page, n int, where string) {
	t.Helper()
	v, err := p.Evaluate(`() => document.documentElement.scrollHeight - document.documentElement.clientHeight`)
	check(t, err, "measure the height")
	if px := toFloat(v); px > 0 {
		t.Errorf("step %d at %s scrolls: %.0f px too tall", n, where, px)
	}
	if px := smallestText(t, p); px < 20 {
		t.Errorf("step %d at %s shows text of %.1f px; the floor is 20 px", n, where, px)
	}
	v, err = p.Evaluate(`() => {
		const seen = (e) => e.checkVisibility({ visibilityProperty: true }) && e.getBoundingClientRect().width > 1 && e.textContent.trim() !== "";
		const small = (sel, floor) => [...document.querySelectorAll(sel)].filter(seen)
			.map((e) => [parseFloat(getComputedStyle(e).fontSize), e.textContent.trim().slice(0, 30)]).filter(([px]) => px < floor);
		const reads = [...document.querySelectorAll("main [data-class-reads]")].filter(seen).length;
		return JSON.stringify({ reads, small: small("main [data-class-reads]", 28), names: small("main .track-rows .track-name, main .story-name", 32) });
	}`)
	check(t, err, "measure the class's text")
	var got struct {
		Reads        int
		Small, Names [][]any
	}
	check(t, json.Unmarshal([]byte(fmt.Sprint(v)), &got), "read the measure")
	if got.Reads == 0 {
		t.Errorf("step %d at %s marks no text for the class", n, where)
	}
	if len(got.Small) > 0 {
		t.Errorf("step %d at %s: text for the class under 28 px: %v", n, where, got.Small)
	}
	if len(got.Names) > 0 {
		t.Errorf("step %d at %s: lane names under 32 px: %v", n, where, got.Names)
	}
}
