package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

var (
	browser    playwright.Browser
	skipReason string
	// shotDir holds the screenshots, taken only when E2E_SCREENSHOTS is
	// set (`make e2e` sets it; `make test` does not, and keeps none): a
	// full-page screenshot rasterizes and encodes the whole page, which
	// cost about 40 s of the browser tests' CPU. Empty, the tests take none.
	shotDir string
	expect  = playwright.NewPlaywrightAssertions(20000)
)

// TestMain starts the driver and Chromium once for every test.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	driver := os.Getenv("PLAYWRIGHT_DRIVER_PATH")
	if driver == "" {
		skipReason = "browser tests skipped: PLAYWRIGHT_DRIVER_PATH is not set; `make test` or `make e2e` installs the driver (scripts/e2e-setup.sh) and sets it"
		fmt.Println(skipReason)
		return m.Run()
	}
	if os.Getenv("PLAYWRIGHT_NODEJS_PATH") == "" {
		fmt.Fprintln(os.Stderr, "e2e: PLAYWRIGHT_DRIVER_PATH is set but PLAYWRIGHT_NODEJS_PATH is not; set it to the node binary (make test does)")
		return 1
	}
	chromium := os.Getenv("CHROMIUM_PATH")
	if chromium == "" {
		fmt.Fprintln(os.Stderr, "e2e: PLAYWRIGHT_DRIVER_PATH is set but CHROMIUM_PATH is not; set it to the browser (make test does)")
		return 1
	}
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: driver, SkipInstallBrowsers: true, Verbose: false, Stdout: io.Discard})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start the playwright driver:", err)
		return 1
	}
	defer pw.Stop()
	browser, err = pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(chromium),
		Headless:       playwright.Bool(true),
		Args:           []string{"--disable-gpu", "--disable-quic"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: launch chromium:", err)
		return 1
	}
	defer browser.Close()
	if os.Getenv("E2E_SCREENSHOTS") == "" {
		return m.Run()
	}
	wd, _ := os.Getwd()
	shotDir = filepath.Join(wd, "screenshots")
	if err := os.MkdirAll(shotDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	code := m.Run()
	fmt.Println("e2e screenshots:", shotDir)
	return code
}

// startBrowserTest begins a browser test: it skips t without the browser
// set-up; with it, t runs in parallel with the other browser tests. Each
// starts its own app and opens its own browser contexts on the one shared
// browser, and much of a browser test's time is spent waiting (for a
// race's modelled time, for the page), so they overlap.
func startBrowserTest(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	t.Parallel()
}

// newPage opens a page in its own browser context at desktop width. The
// test fails if the page throws or logs a console error, except errors
// containing one of allowed.
func newPage(t *testing.T, allowed ...string) playwright.Page {
	t.Helper()
	return newPageWith(t, playwright.BrowserNewContextOptions{}, allowed...)
}

// newPageWith is newPage with more context options (the viewport stays
// desktop-wide unless opts sets one).
func newPageWith(t *testing.T, opts playwright.BrowserNewContextOptions, allowed ...string) playwright.Page {
	t.Helper()
	if opts.Viewport == nil {
		opts.Viewport = &playwright.Size{Width: 1280, Height: 900}
	}
	bc, err := browser.NewContext(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bc.Close() })
	page, err := bc.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	page.SetDefaultTimeout(30000)
	var mu sync.Mutex
	var problems []string
	page.OnConsole(func(m playwright.ConsoleMessage) {
		if m.Type() == "error" {
			for _, a := range allowed {
				if strings.Contains(m.Text(), a) {
					return
				}
			}
			mu.Lock()
			problems = append(problems, "console error: "+m.Text())
			mu.Unlock()
		}
	})
	page.OnPageError(func(err error) {
		mu.Lock()
		problems = append(problems, "page error: "+err.Error())
		mu.Unlock()
	})
	// Cleanups run last-in first-out: this check runs before the context closes.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Error(p)
		}
	})
	return page
}

func goTo(t *testing.T, page playwright.Page, url string) {
	t.Helper()
	if _, err := page.Goto(url); err != nil {
		t.Fatalf("go to %s: %v", url, err)
	}
}

// screenshot saves the whole page as shotDir/name, when screenshots are on.
func screenshot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	save(t, name, func(path string) error {
		_, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(path), FullPage: playwright.Bool(true)})
		return err
	})
}

// screenshotOf saves one element as shotDir/name, when screenshots are on.
func screenshotOf(t *testing.T, loc playwright.Locator, name string) {
	t.Helper()
	save(t, name, func(path string) error {
		_, err := loc.Screenshot(playwright.LocatorScreenshotOptions{Path: playwright.String(path)})
		return err
	})
}

// save runs shoot on shotDir/name when screenshots are on.
func save(t *testing.T, name string, shoot func(path string) error) {
	t.Helper()
	if shotDir == "" {
		return
	}
	path := filepath.Join(shotDir, name)
	if err := shoot(path); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// noHorizontalScroll checks the page fits its viewport's width.
func noHorizontalScroll(t *testing.T, page playwright.Page) {
	t.Helper()
	v, err := page.Evaluate(`() => document.documentElement.scrollWidth - document.documentElement.clientWidth`)
	if err != nil {
		t.Fatal(err)
	}
	if n := toFloat(v); n > 1 {
		t.Errorf("the page is %.0f px wider than the viewport", n)
	}
}

func check(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// choose selects value in the <select> sel.
func choose(t *testing.T, sel playwright.Locator, value, what string) {
	t.Helper()
	_, err := sel.SelectOption(playwright.SelectOptionValues{Values: &[]string{value}})
	check(t, err, what)
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

// copiesItsLink clicks a permalink's copy button (common.js's copyLink)
// and expects its status to say the link was copied or, where the
// browser refuses the clipboard, to show the link itself.
func copiesItsLink(t *testing.T, page playwright.Page, button, status string) {
	t.Helper()
	link, err := page.Locator(button).GetAttribute("data-link")
	check(t, err, button+"'s link")
	check(t, page.Locator(button).Click(), "click "+button)
	check(t, expect.Locator(page.Locator(status)).ToHaveText(regexp.MustCompile(`^(Link copied\.|`+regexp.QuoteMeta(link)+`)$`)), button+" copies its link")
}

// raceDeadline bounds a wait for a race's result: generous, for a race
// under -race on a loaded machine; it only turns a hang into a failure.
const raceDeadline = 300000.0 // ms

// raceEnds waits for the race page's result to show.
func raceEnds(t *testing.T, page playwright.Page) playwright.Locator {
	t.Helper()
	summary := page.GetByTestId("race-summary")
	check(t, expect.Locator(summary).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(raceDeadline)}), "the race's result")
	return summary
}
