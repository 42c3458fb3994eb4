package server_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"agentloop/internal/wait"
	"agentloop/server/enginetest"
)

func TestInflightBudgetAnswers503WithRetryAfter(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *enginetest.Config) { c.InflightRequests = 1 })
	// One slow stream holds the only place in flight until it is read.
	long, err := http.Post(h.url+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"classic","stream":true,"input":"go","max_output_tokens":2000,"ignore_eos":true}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(long.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "output_text.delta") {
	}
	// Over HTTP and on a WebSocket create: 503 with Retry-After.
	status, body := h.post("/baseline/v1/responses", `{"model":"instant","input":"hi"}`)
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "server_busy") {
		t.Fatalf("HTTP past the budget: %d %s", status, body)
	}
	c := h.rawWS("/v1/responses")
	send(t, c, `{"type":"response.create","model":"instant","input":"hi"}`)
	ev := readEvent(t, c)
	if ev.Type != "error" || ev.Status != http.StatusServiceUnavailable || ev.Error == nil || ev.Error.Headers["Retry-After"] == "" {
		t.Fatalf("WebSocket past the budget: %+v", ev)
	}
	if h.scrape()["agentloop_budget_refusals_total"] < 2 {
		t.Fatal("refusals are counted")
	}
	// Once the stream has gone, there is room again.
	long.Body.Close()
	wait.UntilErr(t, "room again once the stream has gone", func() error {
		status, _ = h.post("/v1/responses", `{"model":"instant","input":"hi"}`)
		switch status {
		case http.StatusOK:
			return nil
		case http.StatusServiceUnavailable:
			return fmt.Errorf("still %d", status)
		}
		t.Fatalf("after the stream ended: %d", status)
		return nil
	})
}
