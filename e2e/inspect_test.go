package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app/apptest"

	"github.com/coder/websocket"
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
	needBrowser(t)
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
	screenshot(t, page, "inspect-list.png")

	check(t, rows.First().GetByRole("link").Click(), "open the session")
	check(t, expect.Locator(page.Locator(`html[data-ready="session"]`)).ToHaveCount(1), "the session is drawn")
	check(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/inspect/sess_[0-9a-f]+$`)), "the permalink")
	turnRows := page.GetByTestId("turn-row")
	check(t, expect.Locator(turnRows).ToHaveCount(3), "three turns")
	check(t, expect.Locator(page.GetByTestId("summary-turns")).ToHaveText("3"), "the summary counts three")
	check(t, expect.Locator(turnRows.Nth(1)).ToContainText("tokens hit"), "a continuation hits the connection's tokens")
	client.turn("and the last")
	check(t, expect.Locator(turnRows).ToHaveCount(4), "the fourth turn arrives live")
	check(t, expect.Locator(page.GetByTestId("summary-turns")).ToHaveText("4"), "the summary follows")
	screenshot(t, page, "inspect-session.png")
}
