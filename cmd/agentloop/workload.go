package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"agentloop/workload"
)

// loadWorkload reads --workload: a file in the format of docs/workload.md,
// or "session:ID", an inspector session of the server at serverURL.
func loadWorkload(ctx context.Context, spec, serverURL, apiKey string) (*workload.Workload, error) {
	if id, ok := strings.CutPrefix(spec, "session:"); ok {
		if serverURL == "" {
			return nil, fmt.Errorf("--workload %s needs --server: the session is the server's", spec)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(serverURL, "/")+"/api/sessions/"+id+"/workload", nil)
		if err != nil {
			return nil, err
		}
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("--workload %s: %w", spec, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return nil, fmt.Errorf("--workload %s: %s: %s", spec, resp.Status, strings.TrimSpace(string(b)))
		}
		w, err := workload.Decode(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("--workload %s: %w", spec, err)
		}
		return w, nil
	}
	f, err := os.Open(spec)
	if err != nil {
		return nil, fmt.Errorf("--workload: %w", err)
	}
	defer f.Close()
	w, err := workload.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("--workload %s: %w", spec, err)
	}
	return w, nil
}
