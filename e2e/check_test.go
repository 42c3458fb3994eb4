package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"testing"

	"agentloop/app/apptest"
	"agentloop/internal/testbin"

	"github.com/mxschmitt/playwright-go"
)

// TestCheckPageGradesAClientPointedByHand arms honours-retry-after on
// /check, points the reference client (built from check/internal/refclient)
// at the base URL the page shows, with its mistake of retrying a 429 at
// once, and watches the verdict turn to fail with its evidence. axe-core
// finds nothing serious on the page.
func TestCheckPageGradesAClientPointedByHand(t *testing.T) {
	startBrowserTest(t)
	client := testbin.Path(t, "agentloop/check/internal/refclient")
	a := apptest.Start(t)
	page := newAxePage(t, playwright.BrowserNewContextOptions{})
	_, err := page.Goto(a.URL() + "/check")
	check(t, err, "open /check")
	choose(t, page.GetByLabel("Check"), "honours-retry-after", "choose the check")
	check(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Arm this check"}).Click(), "arm it")
	env := page.GetByTestId("check-env")
	check(t, expect.Locator(env).ToContainText("OPENAI_BASE_URL="+a.URL()+"/scope/"), "the page shows the scope's base URL")
	text, err := env.TextContent()
	check(t, err, "read the base URL")
	base := regexp.MustCompile(`OPENAI_BASE_URL=(\S+)`).FindStringSubmatch(text)
	if base == nil {
		t.Fatalf("no base URL in %q", text)
	}
	verdict := page.GetByTestId("check-verdict")
	check(t, expect.Locator(verdict).ToHaveText("not_exercised"), "no request yet")
	axeCheck(t, page, "/check armed")

	cmd := exec.Command(client, "-transport", "http", "-mistakes", "no-backoff")
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+base[1], "OPENAI_API_KEY=sk-x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the client: %v\n%s", err, out)
	}
	check(t, expect.Locator(verdict).ToHaveText("fail"), "the verdict follows the requests")
	check(t, expect.Locator(page.Locator("#check-reason")).ToContainText("before the 1200 ms"), "it says why")
	check(t, expect.Locator(page.Locator("#check-evidence li").First()).ToContainText("retry-after-ms 1200"), "with its evidence")
	screenshot(t, page, "check-live.png")
}
