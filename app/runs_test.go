package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/internal/wait"
	"agentloop/web"
)

// slowRace runs for about a minute unless it is cancelled (classic decodes
// at about 65 tokens/s).
const slowRace = `{"profile":"classic","lanes":["ws","http"]}`

// clientAt is an HTTP client whose connections come from the loopback
// address addr: on this server without a key, another client.
func clientAt(addr string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

type runAPI struct {
	t      *testing.T
	base   string
	client *http.Client
	header map[string]string
}

func (r runAPI) send(method, path, body string, header map[string]string) (int, string) {
	r.t.Helper()
	req, _ := http.NewRequest(method, r.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := r.client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// start starts a slow race and returns its id and cancel token.
func (r runAPI) start() (id, token string) {
	r.t.Helper()
	code, body := r.send("POST", "/api/runs", slowRace, nil)
	var out struct {
		ID          string `json:"id"`
		CancelToken string `json:"cancel_token"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || code != 200 {
		r.t.Fatalf("start: %d %s", code, body)
	}
	r.t.Cleanup(func() { // the race may have ended, and its server too
		req, _ := http.NewRequest("POST", r.base+"/api/runs/"+out.ID+"/cancel", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(web.HeaderCancelToken, out.CancelToken)
		for k, v := range r.header {
			req.Header.Set(k, v)
		}
		if res, err := r.client.Do(req); err == nil {
			res.Body.Close()
		}
	})
	return out.ID, out.CancelToken
}

// waitStatus waits until the stored run id has status.
func (r runAPI) waitStatus(id, status string) {
	r.t.Helper()
	wait.UntilErr(r.t, id+" "+status, func() error {
		_, body := r.send("GET", "/api/runs/"+id, "", nil)
		var run struct{ Status string }
		if err := json.Unmarshal([]byte(body), &run); err != nil || run.Status != status {
			return fmt.Errorf("%s is %q (%v)", id, run.Status, err)
		}
		return nil
	})
}

// On a server without a key a client is its address: one address holding
// its share of race slots leaves another's race to start at once, and a
// run is cancelled only with the token its start answered.
func TestRunAPISharesSlotsAndCancelsByToken(t *testing.T) {
	a := apptest.Start(t)
	hog := runAPI{t: t, base: a.URL(), client: clientAt("127.0.0.1")}
	other := runAPI{t: t, base: a.URL(), client: clientAt("127.0.0.2")}
	first, token := hog.start()
	hog.waitStatus(first, "running")
	second, _ := hog.start()
	newcomer, _ := other.start()
	other.waitStatus(newcomer, "running")
	hog.waitStatus(second, "queued")

	if code, body := other.send("POST", "/api/runs/"+first+"/cancel", "{}", nil); code != 403 || !strings.Contains(body, "invalid_cancel_token") {
		t.Fatalf("another client cancels: %d %s", code, body)
	}
	if code, body := hog.send("POST", "/api/runs/"+first+"/cancel", "{}", nil); code != 403 {
		t.Fatalf("the same address without the token: %d %s", code, body)
	}
	if code, body := hog.send("POST", "/api/runs/"+first+"/cancel", "{}", map[string]string{web.HeaderCancelToken: token}); code != 202 {
		t.Fatalf("cancel with the token: %d %s", code, body)
	}
	hog.waitStatus(first, "cancelled")
	if code, _ := other.send("DELETE", "/api/runs/"+first, "", nil); code != 403 {
		t.Fatalf("another client deletes: %d", code)
	}
	if code, body := hog.send("DELETE", "/api/runs/"+first, "", map[string]string{web.HeaderCancelToken: token}); code != 200 {
		t.Fatalf("delete with the token: %d %s", code, body)
	}
}

// On a server with a key, the key's holder gets no cancel token and
// needs none.
func TestTheKeyCancelsWithoutAToken(t *testing.T) {
	a := apptest.Start(t, func(c *app.Config) { c.APIKey = "sk-runs" })
	keyed := runAPI{t: t, base: a.URL(), client: http.DefaultClient, header: map[string]string{"Authorization": "Bearer sk-runs"}}
	id, token := keyed.start()
	if token != "" {
		t.Errorf("a keyed start answered a cancel token")
	}
	if code, body := keyed.send("POST", "/api/runs/"+id+"/cancel", "{}", nil); code != 202 {
		t.Fatalf("cancel with the key: %d %s", code, body)
	}
}

// A run's cancel token outlives a restart on the same SQLite file: whoever
// started the run can still delete it.
func TestCancelTokenOutlivesARestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agentloop.db")
	first := apptest.Start(t, apptest.DB(db))
	api := runAPI{t: t, base: first.URL(), client: http.DefaultClient}
	id, token := api.start()
	if code, body := api.send("POST", "/api/runs/"+id+"/cancel", "{}", map[string]string{web.HeaderCancelToken: token}); code != 202 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	api.waitStatus(id, "cancelled")
	if err := first.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	second := apptest.Start(t, apptest.DB(db))
	api.base = second.URL()
	if code, _ := api.send("DELETE", "/api/runs/"+id, "", nil); code != 403 {
		t.Fatalf("delete without the token after a restart: %d", code)
	}
	if code, body := api.send("DELETE", "/api/runs/"+id, "", map[string]string{web.HeaderCancelToken: token}); code != 200 {
		t.Fatalf("delete with the token after a restart: %d %s", code, body)
	}
}
