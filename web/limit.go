package web

import (
	"strconv"

	"github.com/labstack/echo/v4"

	"agentloop/api"
)

// listLimit reads a list route's ?limit=: 50 when it is left out, else a
// whole number from 1 to 1000.
func listLimit(c echo.Context) (int, error) {
	s := c.QueryParam("limit")
	if s == "" {
		return 50, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1000 {
		return 0, api.BadRequest("limit", api.CodeInvalidValue, "limit must be a whole number from 1 to 1000.")
	}
	return n, nil
}
