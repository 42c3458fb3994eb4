package rollout

import (
	"io"
	"net"
	"testing"
	"time"
)

// echoServer echoes every byte back.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// The proxy's delays are lower bounds by construction, so asserting them
// cannot flake on a slow machine.
func TestProxyDelaysEveryRoundTrip(t *testing.T) {
	const rtt = 60 * time.Millisecond
	p, err := NewProxy(echoServer(t), rtt, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The handshake is modelled from the proxy's accept, which a real dial
	// would wait for, so the first round trip is timed from before the dial.
	start := time.Now()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 5)
	for i := range 3 {
		if i > 0 {
			start = time.Now()
		}
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		min := rtt
		if i == 0 {
			min = 2 * rtt // the handshake round trip, then the request's
		}
		if elapsed < min-time.Millisecond || string(buf) != "hello" {
			t.Fatalf("round trip %d took %v (want ≥ %v), got %q", i, elapsed, min, buf)
		}
	}
	if p.Accepted.Load() != 1 {
		t.Fatalf("accepted %d", p.Accepted.Load())
	}
}

func TestProxyLimitsBandwidth(t *testing.T) {
	p, err := NewProxy(echoServer(t), 0, 800) // 100 kB/s per direction
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	payload := make([]byte, 20_000)
	start := time.Now()
	go c.Write(payload)
	if _, err := io.ReadFull(c, make([]byte, len(payload))); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 190*time.Millisecond {
		t.Fatalf("20 kB at 100 kB/s took %v", elapsed)
	}
}

func TestProxyCloseDropsConnections(t *testing.T) {
	p, err := NewProxy(echoServer(t), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("x"))
	io.ReadFull(c, make([]byte, 1))
	p.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection survived the proxy's close")
	}
}
