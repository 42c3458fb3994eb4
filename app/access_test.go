package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/app/apptest"

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
