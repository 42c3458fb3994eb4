package clients

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"agentloop/api"
)

// TestCodexRequestsPassStrictValidation runs Codex over both transports
// through a recording proxy and holds every create it sent to
// api.ValidateCreate: strictness never refuses a real client
// (docs/protocol.md, "Strict validation"). With AGENTLOOP_RECORD_CODEX set
// to a directory, it also writes the bodies there (api/testdata/codex
// holds such a recording, checked without Codex by api's tests).
func TestCodexRequestsPassStrictValidation(t *testing.T) {
	t.Parallel()
	codex := findCodex(t)
	for _, transport := range []codexTransport{webSocketMode, httpOnly} {
		eng := startEngine(t)
		rec := newRecordingProxy(t, eng.app.URL())
		run := codex.exec(t, rec.URL(), transport)
		run.requireCompleted(t)
		bodies := rec.bodies()
		if len(bodies) < 2 {
			t.Fatalf("transport websocket=%v: recorded %d creates, want at least 2", bool(transport), len(bodies))
		}
		name := "http"
		if transport == webSocketMode {
			name = "websocket"
		}
		for i, b := range bodies {
			if err := api.ValidateCreate(b); err != nil {
				t.Errorf("%s create %d refused: %v\n%s", name, i, err, b)
			}
			if dir := os.Getenv("AGENTLOOP_RECORD_CODEX"); dir != "" {
				path := filepath.Join(dir, name+"-"+strconv.Itoa(i)+".json")
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// recordingProxy stands between Codex and the engine: it forwards HTTP
// requests and WebSocket messages unchanged and keeps every create body
// (POST /v1/responses, and each response.create message).
type recordingProxy struct {
	srv     *httptest.Server
	mu      sync.Mutex
	creates [][]byte
}

func newRecordingProxy(t *testing.T, target string) *recordingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			p.relayWebSocket(t, w, r, u)
			return
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			p.keep(body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *recordingProxy) URL() string { return p.srv.URL }

func (p *recordingProxy) keep(b []byte) {
	p.mu.Lock()
	p.creates = append(p.creates, append([]byte(nil), b...))
	p.mu.Unlock()
}

func (p *recordingProxy) bodies() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.creates...)
}

// relayWebSocket dials the engine with the upgrade's headers and relays
// messages both ways until either side closes, keeping Codex's creates.
func (p *recordingProxy) relayWebSocket(t *testing.T, w http.ResponseWriter, r *http.Request, target *url.URL) {
	hdr := http.Header{}
	for k, v := range r.Header {
		switch strings.ToLower(k) {
		case "upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "host":
		default:
			hdr[k] = v
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	up := *target
	up.Scheme = "ws"
	up.Path, up.RawQuery = r.URL.Path, r.URL.RawQuery
	server, resp, err := websocket.Dial(ctx, up.String(), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		status := http.StatusBadGateway
		if resp != nil {
			status = resp.StatusCode
		}
		http.Error(w, err.Error(), status)
		return
	}
	server.SetReadLimit(-1)
	client, err := websocket.Accept(w, r, nil)
	if err != nil {
		server.CloseNow()
		return
	}
	client.SetReadLimit(-1)
	relay := func(from, to *websocket.Conn, record bool) {
		defer cancel()
		for {
			typ, msg, err := from.Read(ctx)
			if err != nil {
				return
			}
			if record && bytes.Contains(msg, []byte(`"response.create"`)) {
				p.keep(msg)
			}
			if err := to.Write(ctx, typ, msg); err != nil {
				return
			}
		}
	}
	go relay(server, client, false)
	relay(client, server, true)
	client.Close(websocket.StatusNormalClosure, "")
	server.Close(websocket.StatusNormalClosure, "")
}
