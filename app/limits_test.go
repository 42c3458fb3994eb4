package app_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"agentloop/app"
	"agentloop/app/apptest"
)

// stalledBody opens a connection that sends a create's headers and the
// first byte of a 1,000-byte body, then nothing; it returns the status the
// server answered with, or 0 if the connection closed without one.
func stalledBody(t *testing.T, addr string) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return -1
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestStalledBodiesAreDroppedAndTheConnLimitHolds(t *testing.T) {
	a := apptest.Start(t, func(c *app.Config) { c.ConnLimit, c.BodyTimeout = 5, 300*time.Millisecond })
	addr := strings.TrimPrefix(a.URL(), "http://")
	const n = 40
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); codes <- stalledBody(t, addr) }()
	}
	wg.Wait() // every connection was answered or closed: none is held
	close(codes)
	got := map[int]int{}
	for c := range codes {
		got[c]++
	}
	if got[http.StatusTooManyRequests] < n-5 {
		t.Errorf("connections past the limit must get 429 without sending their body: %v", got)
	}
	if got[http.StatusRequestTimeout] == 0 {
		t.Errorf("the stalled bodies within the limit must be dropped with 408: %v", got)
	}
	// The limit counts connections until they close: once they have, a
	// new client gets through.
	resp, err := http.Post(a.URL()+"/v1/responses", "application/json", strings.NewReader(`{"model":"instant","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the stalled clients left: %d", resp.StatusCode)
	}
}

func TestBodyTimeoutLeavesLongStreamsAlone(t *testing.T) {
	a := apptest.Start(t, func(c *app.Config) { c.BodyTimeout = 200 * time.Millisecond })
	// A stream that lasts well past the body timeout: the deadline was
	// cleared once the body was read.
	resp, err := http.Post(a.URL()+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"custom-20","stream":true,"input":"go","max_output_tokens":20,"ignore_eos":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	completed := false
	for sc.Scan() {
		completed = completed || sc.Text() == "event: response.completed"
	}
	if !completed {
		t.Fatalf("the stream was cut: %v", sc.Err())
	}
}
