package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"

	"agentloop/api"

	"github.com/labstack/echo/v4"
)

// connLimiter counts each client address's connections from accept to
// close, so a client cannot hold more than the limit however slowly it
// sends: a connection past the limit is answered 429 and closed as soon as
// its first request's headers arrive, without reading a body.
type connLimiter struct {
	limit int
	mu    sync.Mutex
	open  map[string]int
}

func newConnLimiter(limit int) *connLimiter {
	return &connLimiter{limit: limit, open: map[string]int{}}
}

// listener counts the connections that ln accepts.
func (l *connLimiter) listener(ln net.Listener) net.Listener { return &limitedListener{ln, l} }

type limitedListener struct {
	net.Listener
	l *connLimiter
}

func (ll *limitedListener) Accept() (net.Conn, error) {
	c, err := ll.Listener.Accept()
	if err != nil {
		return c, err
	}
	ip := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(ip); err == nil {
		ip = h
	}
	lc := &limitedConn{Conn: c, l: ll.l, ip: ip}
	ll.l.mu.Lock()
	if ll.l.open[ip] >= ll.l.limit {
		lc.over = true // not counted: it is refused at once
	} else {
		ll.l.open[ip]++
	}
	ll.l.mu.Unlock()
	return lc, nil
}

type limitedConn struct {
	net.Conn
	l    *connLimiter
	ip   string
	over bool
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		if c.over {
			return
		}
		c.l.mu.Lock()
		if c.l.open[c.ip]--; c.l.open[c.ip] <= 0 {
			delete(c.l.open, c.ip)
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

type overLimitKey struct{}

// connContext marks the requests of a connection past the limit.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if lc, ok := c.(*limitedConn); ok && lc.over {
		return context.WithValue(ctx, overLimitKey{}, lc.l.limit)
	}
	return ctx
}

// refuseOverLimit answers a request on a connection past the limit with
// 429 and closes the connection, reading nothing more from it.
func refuseOverLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		limit, over := c.Request().Context().Value(overLimitKey{}).(int)
		if !over {
			return next(c)
		}
		e := api.Errorf(http.StatusTooManyRequests, "", api.CodeRateLimitExceeded,
			"Too many concurrent connections from %s (limit %d).", c.RealIP(), limit)
		e.Headers = map[string]string{"Retry-After": "1"}
		conn, buf, err := http.NewResponseController(c.Response()).Hijack()
		if err != nil {
			return e // not hijackable (HTTP/2): the error handler answers
		}
		defer conn.Close()
		var rec recordedResponse
		rec.h = http.Header{}
		_ = api.WriteHTTPError(&rec, e)
		res := &http.Response{StatusCode: rec.status, ProtoMajor: 1, ProtoMinor: 1, Header: rec.h, Close: true,
			ContentLength: int64(rec.body.Len()), Body: io.NopCloser(&rec.body)}
		if err := res.Write(buf); err != nil {
			return nil
		}
		return buf.Flush()
	}
}

// recordedResponse keeps what a handler writes, for a hijacked connection.
type recordedResponse struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (r *recordedResponse) Header() http.Header         { return r.h }
func (r *recordedResponse) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recordedResponse) WriteHeader(status int)      { r.status = status }
