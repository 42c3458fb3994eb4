package app_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/store/sqlite"

	"github.com/coder/websocket"
)

func do(t *testing.T, method, url string, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestAPIKeyProtectsEveryRoute(t *testing.T) {
	a := apptest.Start(t, func(c *app.Config) { c.APIKey = "sk-secret" })
	for _, p := range []string{"/v1/responses/resp_x", "/baseline/v1/responses/resp_x", "/api/traces/x", "/metrics"} {
		resp, body := do(t, "GET", a.URL()+p, "", nil)
		if resp.StatusCode != 401 || !strings.Contains(body, "invalid_api_key") {
			t.Errorf("%s without key: %d %s", p, resp.StatusCode, body)
		}
		resp, _ = do(t, "GET", a.URL()+p, "", map[string]string{"Authorization": "Bearer wrong"})
		if resp.StatusCode != 401 {
			t.Errorf("%s with a wrong key: %d", p, resp.StatusCode)
		}
	}
	resp, _ := do(t, "GET", a.URL()+"/metrics", "", map[string]string{"Authorization": "Bearer sk-secret"})
	if resp.StatusCode != 200 {
		t.Fatalf("metrics with the key: %d", resp.StatusCode)
	}
	// The WebSocket handshake needs the key too.
	ws := "ws" + strings.TrimPrefix(a.URL(), "http") + "/v1/responses"
	_, hresp, err := websocket.Dial(context.Background(), ws, nil)
	if err == nil || hresp == nil || hresp.StatusCode != 401 {
		t.Fatalf("ws handshake without key: %v %v", err, hresp)
	}
	c, _, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-secret"}}})
	if err != nil {
		t.Fatalf("ws handshake with key: %v", err)
	}
	c.CloseNow()
	// Browsers log in once; the session cookie counts only for same-origin requests.
	resp, _ = login(t, a.URL(), "sk-secret", nil)
	cookie := sessionCookie(t, resp, "agentloop_session_"+port(a.URL()))
	if resp.StatusCode != 204 || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login: %d %+v", resp.StatusCode, cookie)
	}
	ck := cookie.Name + "=" + cookie.Value
	if resp, _ := do(t, "GET", a.URL()+"/metrics", "", map[string]string{"Cookie": ck, "Sec-Fetch-Site": "same-origin"}); resp.StatusCode != 200 {
		t.Fatalf("same-origin cookie: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "GET", a.URL()+"/metrics", "", map[string]string{"Cookie": ck, "Sec-Fetch-Site": "cross-site"}); resp.StatusCode != 403 {
		t.Fatalf("cross-site cookie: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "POST", a.URL()+"/login", `{"key":"sk-secret"}`, map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": "same-origin"}); resp.StatusCode != 415 {
		t.Fatalf("form login: %d", resp.StatusCode)
	}
}

func TestHostAllowlistAndHeaders(t *testing.T) {
	a := apptest.Start(t)
	resp, body := do(t, "GET", a.URL()+"/healthz", "", map[string]string{"Host": "attacker.example:8080"})
	if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(body, "host_not_allowed") {
		t.Fatalf("rebinding host: %d %s", resp.StatusCode, body)
	}
	resp, _ = do(t, "GET", a.URL()+"/healthz", "", map[string]string{"Host": "localhost:1234"})
	if resp.StatusCode != 200 {
		t.Fatalf("localhost on another port (the proxy's): %d", resp.StatusCode)
	}
	h := resp.Header
	if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || strings.Contains(h.Get("Content-Security-Policy"), "unsafe-inline") ||
		h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("security headers: %v", h)
	}
	b := apptest.Start(t, func(c *app.Config) { c.AllowedHosts = []string{"agentloop.internal"} })
	if resp, _ := do(t, "GET", b.URL()+"/healthz", "", map[string]string{"Host": "agentloop.internal"}); resp.StatusCode != 200 {
		t.Fatalf("allowed host: %d", resp.StatusCode)
	}
}

func TestPerAddressLimits(t *testing.T) {
	a := apptest.Start(t, func(c *app.Config) { c.RateLimit, c.RateBurst = 1, 3 })
	codes := map[int]int{}
	for range 6 {
		resp, _ := do(t, "GET", a.URL()+"/healthz", "", nil)
		codes[resp.StatusCode]++
		if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	if codes[200] < 3 || codes[429] < 1 {
		t.Fatalf("rate limit: %v", codes)
	}
	b := apptest.Start(t, func(c *app.Config) { c.ConnLimit = 1 })
	ws := "ws" + strings.TrimPrefix(b.URL(), "http") + "/v1/responses"
	c1, _, err := websocket.Dial(context.Background(), ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.CloseNow()
	_, hresp, err := websocket.Dial(context.Background(), ws, nil)
	if err == nil || hresp == nil || hresp.StatusCode != 429 {
		t.Fatalf("second connection from the same address: %v", err)
	}
}

func TestGracefulShutdownEndsStreamsAndFlushesTheLedger(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "app.db")
	a := apptest.Start(t, apptest.DB(dbPath), func(c *app.Config) { c.Grace = 300 * time.Millisecond })
	long := `"model":"classic","store":false,"input":"write a lot","max_output_tokens":5000,"ignore_eos":true`
	resp, err := http.Post(a.URL()+"/v1/responses", "application/json", strings.NewReader(`{`+long+`,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sse := bufio.NewScanner(resp.Body)
	var sseID string
	for sse.Scan() {
		if ev, err := api.DecodeEvent([]byte(strings.TrimPrefix(sse.Text(), "data: "))); err == nil && strings.HasPrefix(sse.Text(), "data: ") {
			if ev.Type == api.EventCreated {
				sseID = ev.Response.ID
			}
			if ev.Type == api.EventOutputTextDelta {
				break
			}
		}
	}
	ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(a.URL(), "http")+"/v1/responses", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"response.create",`+long+`}`))
	var wsID string
	for {
		_, b, err := ws.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := api.DecodeEvent(b)
		if ev.Type == api.EventCreated {
			wsID = ev.Response.ID
		}
		if ev.Type == api.EventOutputTextDelta {
			break
		}
	}
	done := make(chan error, 1)
	go func() { done <- a.Shutdown(context.Background()) }()
	// The SSE stream ends with a terminal event, not a cut.
	last := ""
	for sse.Scan() {
		if strings.HasPrefix(sse.Text(), "event: ") {
			last = strings.TrimPrefix(sse.Text(), "event: ")
		}
	}
	if last != api.EventFailed {
		t.Fatalf("SSE stream ended with %q", last)
	}
	// The WebSocket gets its terminal event, then 1001.
	lastWS := ""
	for {
		_, b, err := ws.Read(context.Background())
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Fatalf("close: %v", err)
			}
			break
		}
		if ev, _ := api.DecodeEvent(b); ev != nil {
			lastWS = ev.Type
		}
	}
	if lastWS != api.EventFailed {
		t.Fatalf("WebSocket's last event %q", lastWS)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(a.URL() + "/healthz"); err == nil {
		t.Fatal("still accepting after shutdown")
	}
	// store:false usage was flushed before the database closed.
	db, err := sqlite.Open(context.Background(), dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range []string{sseID, wsID} {
		rows, err := db.LedgerRows(context.Background(), id)
		if err != nil || len(rows) != 1 {
			t.Fatalf("ledger for %s: %v %v", id, rows, err)
		}
	}
}

func TestCookieWebSocketNeedsOurOrigin(t *testing.T) {
	a := apptest.Start(t, func(c *app.Config) { c.APIKey = "sk-secret" })
	ws := "ws" + strings.TrimPrefix(a.URL(), "http") + "/v1/responses"
	host := strings.TrimPrefix(a.URL(), "http://")
	resp, _ := login(t, a.URL(), "sk-secret", nil)
	ck := sessionCookie(t, resp, "agentloop_session_"+port(a.URL()))
	cookie := ck.Name + "=" + ck.Value
	c, _, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {cookie}, "Origin": {"http://" + host}}})
	if err != nil {
		t.Fatalf("same-origin cookie handshake: %v", err)
	}
	c.CloseNow()
	_, hresp, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {cookie}, "Origin": {"http://evil.example"}}})
	if err == nil || hresp == nil || hresp.StatusCode != 401 {
		t.Fatalf("cross-site cookie handshake: %v", err)
	}
}

func TestUnknownPageIsHTML(t *testing.T) {
	a := apptest.Start(t)
	resp, body := do(t, "GET", a.URL()+"/no/such/page", "", nil)
	if resp.StatusCode != 404 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "no/such/page") {
		t.Fatalf("%d %s %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, body = do(t, "GET", a.URL()+"/v1/nothing", "", nil)
	if resp.StatusCode != 404 || !strings.Contains(body, `"error"`) {
		t.Fatalf("API 404: %d %s", resp.StatusCode, body)
	}
}
