package rollout

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP proxy on loopback that delays bytes like a wide-area link:
// each direction carries half the round trip, optionally limited in
// bandwidth. A userspace proxy accepts a connection at once, so the proxy
// holds a new connection's first byte until one round trip after the
// accept, as a TCP handshake would; clients report that as a modelled
// connect span.
type Proxy struct {
	ln       net.Listener
	upstream string
	rtt      time.Duration
	bps      int64 // bytes per second per direction; 0 = unlimited

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed atomic.Bool
	// Accepted counts connections, for tests and reports.
	Accepted atomic.Int64
}

// NewProxy listens on a free loopback port and forwards to upstream
// (host:port).
func NewProxy(upstream string, rtt time.Duration, bandwidthKbps int) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, rtt: rtt, conns: map[net.Conn]struct{}{}}
	if bandwidthKbps > 0 {
		p.bps = int64(bandwidthKbps) * 1000 / 8
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// RTT is the modelled round trip.
func (p *Proxy) RTT() time.Duration { return p.rtt }

// Close stops the proxy and drops its connections.
func (p *Proxy) Close() error {
	p.closed.Store(true)
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.closed.Load() {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.Accepted.Add(1)
		p.wg.Add(1)
		go p.serve(c, time.Now())
	}
}

func (p *Proxy) serve(client net.Conn, accepted time.Time) {
	defer p.wg.Done()
	if !p.track(client, true) {
		client.Close()
		return
	}
	defer p.track(client, false)
	defer client.Close()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	if !p.track(up, true) {
		up.Close()
		return
	}
	defer p.track(up, false)
	defer up.Close()
	// The handshake: nothing flows before one round trip after accept.
	handshakeDone := accepted.Add(p.rtt)
	var done sync.WaitGroup
	done.Add(2)
	go func() { defer done.Done(); p.pipe(up, client, handshakeDone); closeWrite(up) }()
	go func() { defer done.Done(); p.pipe(client, up, handshakeDone); closeWrite(client) }()
	done.Wait()
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	} else {
		c.Close()
	}
}

type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, delivering each chunk half a round trip after it
// was read (and not before notBefore), paced by the bandwidth limit.
func (p *Proxy) pipe(dst, src net.Conn, notBefore time.Time) {
	oneWay := p.rtt / 2
	if p.rtt == 0 && p.bps == 0 {
		if wait := time.Until(notBefore); wait > 0 {
			time.Sleep(wait)
		}
		io.Copy(dst, src)
		return
	}
	// A bounded delay line: the reader stops reading (TCP backpressure)
	// when 1024 chunks are in flight.
	line := make(chan chunk, 1024)
	go func() {
		defer close(line)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				// Nothing leaves before the handshake's round trip is over,
				// then each chunk takes half a round trip.
				sent := time.Now()
				if sent.Before(notBefore) {
					sent = notBefore
				}
				due := sent.Add(oneWay)
				line <- chunk{b: append([]byte(nil), buf[:n]...), due: due}
			}
			if err != nil {
				return
			}
		}
	}()
	var sendFree time.Time // when the link is free again (bandwidth)
	for c := range line {
		if wait := time.Until(c.due); wait > 0 {
			time.Sleep(wait)
		}
		if p.bps > 0 {
			now := time.Now()
			if sendFree.Before(now) {
				sendFree = now
			}
			sendFree = sendFree.Add(time.Duration(int64(len(c.b)) * int64(time.Second) / p.bps))
			if wait := time.Until(sendFree); wait > 0 {
				time.Sleep(wait)
			}
		}
		if _, err := dst.Write(c.b); err != nil {
			src.Close()
			for range line {
			}
			return
		}
	}
}

// countingConn counts bytes in both directions.
type countingConn struct {
	net.Conn
	sent, received *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.received.Add(int64(n))
	return n, err
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.sent.Add(int64(n))
	return n, err
}

// dialer dials addr (the proxy) whatever address is asked, counting bytes
// and new connections.
type dialer struct {
	addr           string
	sent, received atomic.Int64
	dials          atomic.Int64
}

func (d *dialer) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, d.addr)
	if err != nil {
		return nil, err
	}
	d.dials.Add(1)
	return countingConn{Conn: c, sent: &d.sent, received: &d.received}, nil
}

var errStopped = errors.New("rollout: stopped")
