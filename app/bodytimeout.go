package app

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// bodyTimeout drops a request whose body stops arriving: the connection's
// read deadline is set for the body and cleared once it has been read, so
// a long stream that follows is never cut (http.Server.ReadTimeout would).
func bodyTimeout(d time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if d <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
				return next(c)
			}
			rc := http.NewResponseController(c.Response())
			if rc.SetReadDeadline(time.Now().Add(d)) != nil {
				return next(c) // the connection cannot take deadlines
			}
			// Left set when the handler stops early, so the server's drain
			// of an unread body times out too.
			r.Body = &deadlineBody{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			return next(c)
		}
	}
}

// deadlineBody clears the read deadline once the body is read or closed.
type deadlineBody struct {
	io.ReadCloser
	clear func()
	once  sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.done()
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.done()
	return b.ReadCloser.Close()
}

func (b *deadlineBody) done() { b.once.Do(b.clear) }
