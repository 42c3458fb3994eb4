package web

import "github.com/labstack/echo/v4"

// heldBody holds a request's body against the in-flight budget
// (Deps.Budget) from before it is read until the handler returns, when
// the copies decoded from it are garbage: its Content-Length, or limit+1
// when the length is unknown or past limit (the handler reads at most
// that, then refuses it). Past the budget the answer is its 503 with
// Retry-After, before a byte is read.
func (p *Playground) heldBody(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if p.budget == nil {
				return next(c)
			}
			n := limit + 1
			if cl := c.Request().ContentLength; cl >= 0 && cl <= limit {
				n = cl
			}
			release, err := p.budget.Acquire(int(n))
			if err != nil {
				return err
			}
			defer release()
			return next(c)
		}
	}
}
