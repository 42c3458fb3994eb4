package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/internal/wait"

	"github.com/coder/websocket"
)

// countRows counts a table's rows in the app's database file, read over a
// connection of its own while the app runs.
func countRows(t *testing.T, dbPath, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not an OpenAI-shaped error: %q", body)
	}
	return e.Error.Code
}

const storedCreate = `{"model":"instant","store":true,"input":"hello"}`

// TestNoCrossSiteWrites: on the default server (no key), a page on another
// site, or on another port of 127.0.0.1 (same-site), cannot create,
// delete or read through the API, while SDKs, curl and the pages work.
func TestNoCrossSiteWrites(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "app.db")
	a := apptest.Start(t, apptest.DB(dbPath))
	u := a.URL()
	if n := countRows(t, dbPath, "responses"); n != 0 {
		t.Fatalf("%d responses at start", n)
	}
	refused := []struct {
		name, method, path, ct, site string
		status                       int
		code                         string
	}{
		// A cross-site page may POST text/plain without a preflight.
		{"cross-site text/plain", "POST", "/v1/responses", "text/plain", "cross-site", 403, "cross_site_request"},
		{"cross-site text/plain, baseline", "POST", "/baseline/v1/responses", "text/plain;charset=UTF-8", "cross-site", 403, "cross_site_request"},
		// A browser without Sec-Fetch-* headers: the media type still stops it.
		{"text/plain without Sec-Fetch", "POST", "/v1/responses", "text/plain", "", 415, "unsupported_media_type"},
		{"form without Sec-Fetch", "POST", "/baseline/v1/responses", "application/x-www-form-urlencoded", "", 415, "unsupported_media_type"},
		{"multipart without Sec-Fetch", "POST", "/api/runs", "multipart/form-data; boundary=x", "", 415, "unsupported_media_type"},
		{"no content type", "POST", "/v1/responses", "", "", 415, "unsupported_media_type"},
		{"a longer media type", "POST", "/v1/responses", "application/jsonp", "", 415, "unsupported_media_type"},
		// Another port on 127.0.0.1 is the same site, not the same origin.
		{"same-site JSON", "POST", "/v1/responses", "application/json", "same-site", 403, "cross_site_request"},
		{"cross-site JSON", "POST", "/baseline/v1/responses", "application/json", "cross-site", 403, "cross_site_request"},
	}
	basic := map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site", "Authorization": "Basic dTpw"}
	// Browsers attach Basic credentials by themselves: no exemption.
	if resp, body := do(t, "POST", u+"/v1/responses", storedCreate, basic); resp.StatusCode != 403 {
		t.Errorf("same-site with Basic credentials: %d %.200s", resp.StatusCode, body)
	}
	for _, tc := range refused {
		h := map[string]string{"Content-Type": tc.ct}
		if tc.ct == "" {
			delete(h, "Content-Type")
		}
		if tc.site != "" {
			h["Sec-Fetch-Site"] = tc.site
		}
		resp, body := do(t, tc.method, u+tc.path, storedCreate, h)
		if resp.StatusCode != tc.status || errorCode(t, body) != tc.code {
			t.Errorf("%s: %d %.200s, want %d %s", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
	}
	if n := countRows(t, dbPath, "responses"); n != 0 {
		t.Fatalf("refused requests stored %d responses", n)
	}

	// What the SDKs, curl and Codex send; the media type is case-insensitive
	// and may carry parameters.
	var id string
	for _, h := range []map[string]string{
		{"Content-Type": "application/json"},
		{"Content-Type": "Application/JSON; charset=utf-8"},
		{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"},
		{"Content-Type": "application/json", "Sec-Fetch-Site": "none"},
		// No key is set, so any bearer passes, from any site: a browser
		// sends Authorization cross-origin only after a CORS preflight.
		{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site", "Authorization": "Bearer anything"},
	} {
		resp, body := do(t, "POST", u+"/v1/responses", storedCreate, h)
		if resp.StatusCode != 200 {
			t.Fatalf("%v: %d %s", h, resp.StatusCode, body)
		}
		var r struct{ ID string }
		json.Unmarshal([]byte(body), &r)
		id = r.ID
	}
	if n := countRows(t, dbPath, "responses"); n != 5 {
		t.Fatalf("%d responses stored, want 5", n)
	}

	// Reads and deletes through the API are refused cross-site too.
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/responses/" + id},
		{"GET", "/v1/models"},
		{"GET", "/api/traces/" + id},
		{"GET", "/metrics"},
		{"DELETE", "/v1/responses/" + id},
		{"DELETE", "/api/runs/run_x"},
	} {
		resp, body := do(t, tc.method, u+tc.path, "", map[string]string{"Sec-Fetch-Site": "same-site"})
		if resp.StatusCode != 403 || errorCode(t, body) != "cross_site_request" {
			t.Errorf("same-site %s %s: %d %s", tc.method, tc.path, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, "GET", u+"/v1/responses/"+id, "", nil); resp.StatusCode != 200 {
		t.Errorf("the response was deleted cross-site: %d", resp.StatusCode)
	}

	// The WebSocket upgrade: the Origin check (same host) is not enough
	// when the browser says the request is same-site.
	ws := "ws" + strings.TrimPrefix(u, "http") + "/v1/responses"
	origin := http.Header{"Origin": {u}}
	_, hresp, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {u}, "Sec-Fetch-Site": {"same-site"}}})
	if err == nil || hresp == nil || hresp.StatusCode != 403 {
		t.Errorf("same-site WebSocket upgrade: %v %v", err, hresp)
	}
	c, _, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: origin})
	if err != nil {
		t.Fatalf("same-origin WebSocket upgrade: %v", err)
	}
	c.CloseNow()
	_, hresp, err = websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
	if err == nil || hresp == nil || hresp.StatusCode != 403 {
		t.Errorf("foreign Origin: %v %v", err, hresp)
	}

	// Pages stay reachable by navigation, from anywhere.
	for _, site := range []string{"cross-site", "same-site", "none", ""} {
		for _, p := range []string{"/", "/docs", "/runs"} {
			resp, _ := do(t, "GET", u+p, "", map[string]string{"Sec-Fetch-Site": site})
			if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
				t.Errorf("page %s navigated to (%q): %d", p, site, resp.StatusCode)
			}
		}
	}
}

func login(t *testing.T, base, key string, header map[string]string) (*http.Response, string) {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"}
	for k, v := range header {
		h[k] = v
	}
	return do(t, "POST", base+"/login", fmt.Sprintf(`{"key":%q}`, key), h)
}

func port(u string) string { return u[strings.LastIndex(u, ":")+1:] }

func sessionCookie(t *testing.T, resp *http.Response, name string) *http.Cookie {
	t.Helper()
	for _, ck := range resp.Cookies() {
		if ck.Name == name {
			return ck
		}
	}
	t.Fatalf("no %s cookie in %d %v", name, resp.StatusCode, resp.Header.Values("Set-Cookie"))
	return nil
}

// TestLoginSessions: the login cookie holds a random session id named
// after the port, never the key; the session lives in the shared store,
// survives requests, dies at logout, and dies when the key changes.
func TestLoginSessions(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "app.db")
	a := apptest.Start(t, apptest.DB(dbPath), func(c *app.Config) { c.APIKey = "sk-secret" })
	name := "agentloop_session_" + port(a.URL())
	if got := app.LoginCookieName(strings.TrimPrefix(a.URL(), "http://"), false); got != name {
		t.Fatalf("cookie name %q, want %q", got, name)
	}
	resp, _ := login(t, a.URL(), "sk-secret", nil)
	ck := sessionCookie(t, resp, name)
	if resp.StatusCode != 204 || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.MaxAge <= 0 {
		t.Fatalf("login: %d %+v", resp.StatusCode, ck)
	}
	if strings.Contains(ck.Value, "sk-secret") || len(ck.Value) < 22 {
		t.Fatalf("the cookie is not a random session id: %q", ck.Value)
	}
	for _, raw := range resp.Header.Values("Set-Cookie") {
		if strings.Contains(raw, "sk-secret") {
			t.Fatalf("the key is in a cookie: %s", raw)
		}
	}
	if n := countRows(t, dbPath, "login_sessions"); n != 1 {
		t.Fatalf("%d sessions stored", n)
	}
	same := func(cookie string) map[string]string {
		return map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin"}
	}
	session := name + "=" + ck.Value
	for i := range 2 {
		if resp, _ := do(t, "GET", a.URL()+"/metrics", "", same(session)); resp.StatusCode != 200 {
			t.Fatalf("request %d with the session: %d", i, resp.StatusCode)
		}
	}
	if resp, body := do(t, "GET", a.URL()+"/", "", same(session)); resp.StatusCode != 200 || !strings.Contains(body, "data-logout") {
		t.Fatalf("page with the session: %d, Sign out shown: %v", resp.StatusCode, strings.Contains(body, "data-logout"))
	}
	if resp, body := do(t, "GET", a.URL()+"/", "", nil); resp.StatusCode != 401 || strings.Contains(body, "data-logout") || !strings.Contains(body, "login-form") {
		t.Fatalf("login page: %d, Sign out shown: %v", resp.StatusCode, strings.Contains(body, "data-logout"))
	}
	// The key itself is no cookie, under either name.
	for _, cookie := range []string{name + "=sk-secret", "agentloop_key=sk-secret"} {
		if resp, _ := do(t, "GET", a.URL()+"/metrics", "", same(cookie)); resp.StatusCode != 401 {
			t.Errorf("%s: %d", cookie, resp.StatusCode)
		}
	}
	// The cookie of another port is not ours.
	if resp, _ := do(t, "GET", a.URL()+"/metrics", "", same("agentloop_session_1="+ck.Value)); resp.StatusCode != 401 {
		t.Errorf("another port's cookie: %d", resp.StatusCode)
	}
	// Cross-site, the session does not count.
	if resp, _ := do(t, "GET", a.URL()+"/metrics", "", map[string]string{"Cookie": session, "Sec-Fetch-Site": "same-site"}); resp.StatusCode == 200 {
		t.Errorf("same-site request with the session: %d", resp.StatusCode)
	}

	// A replica on the same store with the same key, behind the port the
	// browser sees (the Host header), accepts the session.
	b := apptest.Start(t, apptest.DB(dbPath), func(c *app.Config) { c.APIKey = "sk-secret" })
	viaLB := same(session)
	viaLB["Host"] = strings.TrimPrefix(a.URL(), "http://")
	if resp, _ := do(t, "GET", b.URL()+"/metrics", "", viaLB); resp.StatusCode != 200 {
		t.Errorf("replica with the shared session: %d", resp.StatusCode)
	}
	// A server started with another key refuses it: changing the key logs
	// every browser out.
	other := apptest.Start(t, apptest.DB(dbPath), func(c *app.Config) { c.APIKey = "sk-other" })
	viaLB["Host"] = strings.TrimPrefix(a.URL(), "http://")
	if resp, _ := do(t, "GET", other.URL()+"/metrics", "", viaLB); resp.StatusCode != 401 {
		t.Errorf("a session of the old key after a key change: %d", resp.StatusCode)
	}

	// Logout needs JSON, same-origin, like login.
	if resp, _ := do(t, "POST", a.URL()+"/logout", "", map[string]string{"Cookie": session, "Content-Type": "text/plain"}); resp.StatusCode != 415 {
		t.Errorf("form logout: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "POST", a.URL()+"/logout", "{}", map[string]string{"Cookie": session, "Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}); resp.StatusCode != 403 {
		t.Errorf("cross-site logout: %d", resp.StatusCode)
	}
	resp, _ = do(t, "POST", a.URL()+"/logout", "{}", map[string]string{"Cookie": session, "Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"})
	if cleared := sessionCookie(t, resp, name); resp.StatusCode != 204 || cleared.MaxAge >= 0 || cleared.Value != "" {
		t.Fatalf("logout: %d %+v", resp.StatusCode, cleared)
	}
	if resp, _ := do(t, "GET", a.URL()+"/metrics", "", same(session)); resp.StatusCode != 401 {
		t.Errorf("the session after logout: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "GET", b.URL()+"/metrics", "", viaLB); resp.StatusCode != 401 {
		t.Errorf("the session after logout, on the replica: %d", resp.StatusCode)
	}
	if n := countRows(t, dbPath, "login_sessions"); n != 0 {
		t.Errorf("%d sessions left after logout", n)
	}
}

// TestExpiredSessionIsRefused: past its TTL a session is refused and
// deleted from the store.
func TestExpiredSessionIsRefused(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "app.db")
	a := apptest.Start(t, apptest.DB(dbPath), func(c *app.Config) { c.APIKey = "sk-secret"; c.SessionTTL = time.Millisecond })
	name := "agentloop_session_" + port(a.URL())
	resp, _ := login(t, a.URL(), "sk-secret", nil)
	loggedIn := time.Now() // the session was made before the answer
	ck := sessionCookie(t, resp, name)
	if n := countRows(t, dbPath, "login_sessions"); n != 1 {
		t.Fatalf("%d sessions stored", n)
	}
	wait.Until(t, "the session's TTL to pass", func() bool { return time.Since(loggedIn) > time.Millisecond })
	resp, _ = do(t, "GET", a.URL()+"/metrics", "", map[string]string{"Cookie": name + "=" + ck.Value, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != 401 {
		t.Fatalf("expired session: %d", resp.StatusCode)
	}
	if n := countRows(t, dbPath, "login_sessions"); n != 0 {
		t.Errorf("the expired session is still stored (%d)", n)
	}
}

// TestLoginIsThrottled: wrong keys from one address, at the login form or
// as a bearer token, get 429 with Retry-After past the burst, and then
// even the right key waits, so a right guess cannot slip through.
func TestLoginIsThrottled(t *testing.T) {
	slow := func(c *app.Config) { c.APIKey = "sk-secret"; c.LoginRate = 0.05; c.LoginBurst = 3 }
	a := apptest.Start(t, slow)
	codes := map[int]int{}
	for i := range 10 {
		resp, body := login(t, a.URL(), fmt.Sprintf("guess-%d", i), nil)
		codes[resp.StatusCode]++
		if resp.StatusCode == 429 && (resp.Header.Get("Retry-After") == "" || errorCode(t, body) != "rate_limit_exceeded") {
			t.Fatalf("429 without Retry-After or code: %v %s", resp.Header, body)
		}
	}
	if codes[401] != 3 || codes[429] != 7 {
		t.Fatalf("wrong keys at the login form: %v, want 3×401 then 429", codes)
	}
	if resp, _ := login(t, a.URL(), "sk-secret", nil); resp.StatusCode != 429 {
		t.Errorf("the right key while throttled: %d", resp.StatusCode)
	}
	// Requests without a key are no guesses.
	if resp, _ := do(t, "GET", a.URL()+"/healthz", "", nil); resp.StatusCode != 401 {
		t.Errorf("no key while throttled: %d", resp.StatusCode)
	}

	b := apptest.Start(t, slow)
	codes = map[int]int{}
	for i := range 10 {
		resp, _ := do(t, "GET", b.URL()+"/v1/models", "", map[string]string{"Authorization": fmt.Sprintf("Bearer guess-%d", i)})
		codes[resp.StatusCode]++
	}
	if codes[401] != 3 || codes[429] != 7 {
		t.Fatalf("wrong bearer keys: %v, want 3×401 then 429", codes)
	}
	if resp, _ := do(t, "GET", b.URL()+"/v1/models", "", map[string]string{"Authorization": "Bearer sk-secret"}); resp.StatusCode != 429 {
		t.Errorf("the right bearer key while throttled: %d", resp.StatusCode)
	}
}
