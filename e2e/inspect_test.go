package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app/apptest"

	"github.com/coder/websocket"
	"github.com/mxschmitt/playwright-go"
)

// wsClient is a client of the engine over a raw WebSocket, as an SDK
// would be: each turn continues the previous response.
type wsClient struct {
	t    *testing.T
	c    *websocket.Conn
	last string
}

func (w *wsClient) turn(input string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prev := ""
	if w.last != "" {
		prev = `"previous_response_id":"` + w.last + `",`
	}
	if err := w.c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"instant","store":false,`+prev+`"input":"`+input+`"}`)); err != nil {
		w.t.Fatal(err)
	}
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			w.t.Fatal(err)
		}
		ev, _ := api.DecodeEvent(b)
		if ev == nil {
			continue
		}
		switch ev.Type {
		case api.EventCompleted:
			w.last = ev.Response.ID
			return
		case api.EventFailed, api.EventError:
			w.t.Fatalf("turn failed: %s", b)
		}
	}
}

// TestInspectWatchesAClientLive opens /inspect, then runs a client over a
// WebSocket: its session appears and its turn count follows each turn,
// on the list and on the session's own page.
func TestInspectWatchesAClientLive(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	page := newPage(t)
	goTo(t, page, a.URL()+"/inspect")
	check(t, expect.Locator(page.Locator(`html[data-ready="inspect"]`)).ToHaveCount(1), "the list is loaded and live")
	rows := page.GetByTestId("session-row")
	check(t, expect.Locator(rows).ToHaveCount(0), "no session before the client")

	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(a.URL(), "http")+"/v1/responses",
		&websocket.DialOptions{HTTPHeader: map[string][]string{"User-Agent": {"e2e-client/1.0"}}})
	check(t, err, "dial the engine")
	defer c.CloseNow()
	client := &wsClient{t: t, c: c}

	client.turn("hello")
	check(t, expect.Locator(rows).ToHaveCount(1), "the session appears")
	turns := rows.First().GetByTestId("session-turns")
	check(t, expect.Locator(turns).ToHaveText("1"), "one turn")
	check(t, expect.Locator(rows.First()).ToContainText("e2e-client/1.0"), "the client is named")
	check(t, expect.Locator(rows.First()).ToContainText("WebSocket"), "the transport is named")
	client.turn("and again")
	client.turn("once more")
	check(t, expect.Locator(turns).ToHaveText("3"), "the turn count follows the client")
	// The row's cells are the server's, as /api/sessions phrases them.
	var list struct {
		Data []struct {
			Summary struct {
				Turns int `json:"turns"`
			} `json:"summary"`
			Row struct{ Client, Transport, Cache, Tokens, Overhead string } `json:"row"`
		} `json:"data"`
	}
	res, err := http.Get(a.URL() + "/api/sessions")
	check(t, err, "list the sessions")
	check(t, json.NewDecoder(res.Body).Decode(&list), "decode the sessions")
	res.Body.Close()
	if len(list.Data) != 1 || list.Data[0].Summary.Turns != 3 || list.Data[0].Row.Transport != "WebSocket" {
		t.Fatalf("the sessions the API lists: %+v", list.Data)
	}
	row := list.Data[0].Row
	cells := rows.First().Locator("td")
	for i, want := range map[int]string{1: row.Client, 2: row.Transport, 5: row.Cache, 6: row.Tokens, 7: row.Overhead} {
		check(t, expect.Locator(cells.Nth(i)).ToHaveText(want), "the list's cell "+strconv.Itoa(i)+" is the server's")
	}
	screenshot(t, page, "inspect-list.png")

	check(t, rows.First().GetByRole("link").Click(), "open the session")
	check(t, expect.Locator(page.Locator(`html[data-ready="session"]`)).ToHaveCount(1), "the session is drawn")
	check(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/inspect/sess_[0-9a-f]+$`)), "the permalink")
	turnRows := page.GetByTestId("turn-row")
	check(t, expect.Locator(turnRows).ToHaveCount(3), "three turns")
	check(t, expect.Locator(page.GetByTestId("summary-turns")).ToHaveText("3"), "the summary counts three")
	// The legend is api's groups, and every bar is coloured by a group the
	// server gave its span.
	var legend, swatches []string
	for _, g := range api.WaterfallGroups {
		switch g.Name {
		case api.GroupOverhead, api.GroupAPIStack, api.GroupQueuePrefill, api.GroupDecode:
			legend = append(legend, g.Legend)
			swatches = append(swatches, "stage-"+g.Name)
		}
	}
	check(t, expect.Locator(page.GetByTestId("session-legend").Locator("li")).ToHaveText(append(legend, "error", "hatched: modelled")), "the legend is api's groups")
	bars, err := page.Locator("#session-waterfall rect").EvaluateAll(`rs => rs.map(r => r.getAttribute("class"))`)
	check(t, err, "the waterfall's bars")
	if list, _ := bars.([]any); len(list) == 0 {
		t.Error("the session's waterfall draws no bar")
	} else {
		for _, c := range list {
			// A modelled bar carries a hatched overlay ("modelled", drawn
			// with the pattern's "hatch-line"): not a bar of its own.
			if s, _ := c.(string); !slices.Contains(swatches, s) && !slices.Contains([]string{"stage-error", "modelled", "hatch-line"}, s) {
				t.Errorf("a bar of class %q, not a group the legend names (%v)", s, swatches)
			}
		}
	}
	check(t, expect.Locator(turnRows.Nth(1)).ToContainText("tokens hit"), "a continuation hits the connection's tokens")
	client.turn("and the last")
	check(t, expect.Locator(turnRows).ToHaveCount(4), "the fourth turn arrives live")
	check(t, expect.Locator(page.GetByTestId("summary-turns")).ToHaveText("4"), "the summary follows")
	screenshot(t, page, "inspect-session.png")
	copiesItsLink(t, page, "#session-copy-link", "#session-state")

	// Live means the connection is open: closing it makes the session idle.
	live := page.Locator("#session-live")
	check(t, expect.Locator(live).ToHaveText("live"), "the open connection is live")
	check(t, c.Close(websocket.StatusNormalClosure, ""), "close the connection")
	check(t, expect.Locator(live).ToHaveText("idle"), "the closed connection is idle")
}

// TestInspectArmsAndDisarmsADrill arms a drill from /inspect: a refusal
// is shown on the field it names; an armed drill is listed, its firing
// shows once a client's turn meets it, and Disarm removes it. The session
// list stays live meanwhile, and axe-core finds nothing serious.
func TestInspectArmsAndDisarmsADrill(t *testing.T) {
	startBrowserTest(t)
	a := apptest.Start(t)
	// The refused arming logs its 400.
	page := newAxePage(t, playwright.BrowserNewContextOptions{}, "status of 400")
	goTo(t, page, a.URL()+"/inspect")
	check(t, expect.Locator(page.Locator(`#drills[data-loaded="true"]`)).ToHaveCount(1), "the armed drills are read")
	check(t, expect.Locator(page.GetByTestId("drills-empty")).ToBeVisible(), "none armed")
	drillRows := page.GetByTestId("drill-row")

	// evict-cache takes no duration: the server says so, on that field.
	name := page.GetByLabel("Drill", playwright.PageGetByLabelOptions{Exact: playwright.Bool(true)})
	choose(t, name, "evict-cache", "choose evict-cache")
	duration := page.GetByTestId("drill-duration")
	check(t, duration.Fill("500"), "type a duration")
	check(t, page.GetByTestId("drill-arm").Click(), "arm")
	check(t, expect.Locator(duration).ToHaveAttribute("aria-invalid", "true"), "duration marked invalid")
	check(t, expect.Locator(duration).ToHaveAttribute("aria-describedby", "drill-duration-error"), "error tied to the field")
	check(t, expect.Locator(page.Locator("#drill-duration-error")).ToContainText("Duration (ms, optional): duration_ms applies to"), "error names the field")
	check(t, expect.Locator(duration).ToBeFocused(), "focus on the field")
	check(t, expect.Locator(drillRows).ToHaveCount(0), "nothing armed")
	axeCheck(t, page, "inspect with a refused drill")

	// slow-first-token for 5 ms on the first response: the turn completes.
	choose(t, name, "slow-first-token", "choose slow-first-token")
	check(t, duration.Fill("5"), "type a duration")
	check(t, expect.Locator(duration).Not().ToHaveAttribute("aria-invalid", "true"), "the edited field is valid again")
	check(t, page.GetByTestId("drill-arm").Click(), "arm")
	check(t, expect.Locator(drillRows).ToHaveCount(1), "the drill is listed")
	check(t, expect.Locator(drillRows.First()).ToContainText("slow-first-token"), "by name")
	check(t, expect.Locator(drillRows.First().GetByTestId("drill-fired")).ToHaveText("0 / 1"), "not fired yet")
	check(t, expect.Locator(page.GetByTestId("drills-empty")).ToBeHidden(), "the empty note goes")

	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(a.URL(), "http")+"/v1/responses", nil)
	check(t, err, "dial the engine")
	defer c.CloseNow()
	client := &wsClient{t: t, c: c}
	client.turn("hello")
	check(t, expect.Locator(page.GetByTestId("session-row")).ToHaveCount(1), "the session list stays live")
	check(t, expect.Locator(drillRows.First().GetByTestId("drill-fired")).ToHaveText("1 / 1"), "the firing shows")
	check(t, expect.Locator(drillRows.First()).ToContainText(client.last), "on the response it hit")
	axeCheck(t, page, "inspect with an armed drill")
	screenshot(t, page, "inspect-drills.png")

	check(t, drillRows.First().GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Disarm slow-first-token"}).Click(), "disarm")
	check(t, expect.Locator(drillRows).ToHaveCount(0), "the drill is gone")
	check(t, expect.Locator(page.GetByTestId("drill-state")).ToContainText("Disarmed slow-first-token"), "the disarming is said")
	check(t, expect.Locator(page.GetByTestId("drills-empty")).ToBeVisible(), "none armed again")

	// connection-limit's time form, for one scope: after_ms from the form.
	choose(t, name, "connection-limit", "choose connection-limit")
	check(t, duration.Fill(""), "clear the duration")
	check(t, page.GetByTestId("drill-after-ms").Fill("60000"), "type after_ms")
	check(t, page.GetByTestId("drill-scope").Fill("card-1"), "type a scope")
	check(t, page.GetByTestId("drill-arm").Click(), "arm")
	check(t, expect.Locator(drillRows).ToHaveCount(1), "the timed drill is listed")
	check(t, expect.Locator(drillRows.First()).ToContainText("from the connection's start"), "with its time")
}
