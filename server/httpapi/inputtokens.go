package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// InputTokens is POST /responses/input_tokens: the input tokens of a
// create body (instructions, tools and the whole context, a parent's
// included), as {"object":"response.input_tokens","input_tokens":N}. The
// model is optional here, as in OpenAI's API, and fields a count does not
// use (stream, store, stream_id) are ignored like any unknown field.
func (h *API) InputTokens(c echo.Context) error {
	started := time.Now()
	body, release, aerr := h.readBody(c)
	if aerr != nil {
		return aerr
	}
	defer release()
	n, aerr := h.e.CountInputTokens(c.Request().Context(), h.e.NewFlight("http", started, body), started)
	if aerr != nil {
		return aerr
	}
	b := append(make([]byte, 0, 64), `{"object":"response.input_tokens","input_tokens":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '}')
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}
