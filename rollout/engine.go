package rollout

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// engineClients holds the one client per TLS config (nil for plain HTTP)
// that engineDo sends through. A process has one or two: its Runner's.
var engineClients sync.Map // *tls.Config (the Runner's TLS) → *http.Client

// engineDo sends one request straight to the engine (not through the
// latency proxy): the race's drill calls and trace lookups. They share one
// client, so with TLS each lookup reuses a kept-alive connection instead of
// paying a new handshake and leaving one more idle connection behind.
func (r *Runner) engineDo(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), method, r.engineURL+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.APIKey)
	}
	c, ok := engineClients.Load(r.TLS)
	if !ok {
		c, _ = engineClients.LoadOrStore(r.TLS, &http.Client{Transport: &http.Transport{TLSClientConfig: r.TLS,
			MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}})
	}
	return c.(*http.Client).Do(req)
}
