package rollout

import (
	"context"
	"io"
	"net/http"
	"time"
)

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
	return r.engineClient().Do(req)
}

// engineClient is the Runner's one client to the engine, built on first
// use with its TLS config.
func (r *Runner) engineClient() *http.Client {
	r.engineOnce.Do(func() {
		r.engine = &http.Client{Transport: &http.Transport{TLSClientConfig: r.TLS,
			MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}}
	})
	return r.engine
}
