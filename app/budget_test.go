package app_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/internal/wait"
)

const smallWorkload = `{"version":1,"turns":[{"input":[{"kind":"user_message","tokens":40}],"output_tokens":60}]}`

// Every request body the server holds counts against one in-flight
// budget: while one upload holds the whole of --inflight-bytes (counted
// from its Content-Length, before a byte is read), other uploads, runs
// with a workload and the engine's creates get 503 server_busy with
// Retry-After; once it ends they are taken again.
func TestUploadsCountAgainstTheInflightBudget(t *testing.T) {
	const budget = 1 << 20
	a := apptest.Start(t, func(c *app.Config) { c.InflightBytes = budget })
	json := map[string]string{"Content-Type": "application/json"}

	// An upload of the whole budget whose body stops arriving after its
	// first bytes; held carries its status once it is answered.
	var hold *io.PipeWriter
	var held chan int
	startHold := func() {
		body, w := io.Pipe()
		req, _ := http.NewRequest("POST", a.URL()+"/api/workloads", body)
		req.ContentLength = budget
		req.Header.Set("Content-Type", "application/json")
		hold, held = w, make(chan int, 1)
		go func(held chan int) {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				held <- 0
				return
			}
			resp.Body.Close()
			held <- resp.StatusCode
		}(held)
		// Returns once the client sends the body, its headers sent before
		// it (or fails, once the upload is answered).
		w.Write([]byte(`{"version":1,`))
	}
	startHold()

	refused := func(method, path, body string) func() error {
		return func() error {
			resp, got := do(t, method, a.URL()+path, body, json)
			if resp.StatusCode != 503 || !strings.Contains(got, "server_busy") || resp.Header.Get("Retry-After") == "" {
				return fmt.Errorf("%s %s: %d %s (Retry-After %q)", method, path, resp.StatusCode, got, resp.Header.Get("Retry-After"))
			}
			return nil
		}
	}
	wait.UntilErr(t, "an upload refused while another holds the budget", func() error {
		select {
		case code := <-held:
			// A probe held bytes of the budget when the upload arrived,
			// so the upload was the one refused: it is sent again.
			startHold()
			return fmt.Errorf("the held upload was answered %d before it held the budget", code)
		default:
		}
		return refused("POST", "/api/workloads", smallWorkload)()
	})
	for _, check := range []func() error{
		refused("POST", "/api/runs", `{"workload":`+smallWorkload+`,"profile":"instant"}`),
		refused("POST", "/v1/responses", `{"model":"instant","input":"hi"}`),
	} {
		if err := check(); err != nil {
			t.Error(err)
		}
	}

	hold.CloseWithError(io.ErrUnexpectedEOF)
	if code := <-held; code == 200 {
		t.Fatalf("the cut upload answered %d", code)
	}
	wait.UntilErr(t, "an upload taken once the budget is free", func() error {
		if resp, got := do(t, "POST", a.URL()+"/api/workloads", smallWorkload, json); resp.StatusCode != 200 {
			return fmt.Errorf("%d %s", resp.StatusCode, got)
		}
		return nil
	})
}
