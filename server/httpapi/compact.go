package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"agentloop/api"
	"agentloop/server/request"

	"github.com/labstack/echo/v4"
)

// Compact is POST /responses/compact (docs/protocol.md, "Compaction"): the
// context a body names, compacted into its user messages and one
// compaction item, as {"object":"response.compaction","output":[…]}. It
// stores nothing; its trace is kept under the answer's id.
func (h *API) Compact(c echo.Context) (err error) {
	e := h.e
	started := time.Now()
	r := c.Request()
	fl := e.NewFlight("http", started, nil)
	fl.Trace.Client = request.ClientOf(r)
	defer func() {
		var aerr *api.Error
		errors.As(err, &aerr)
		e.Observe(fl.Trace, aerr)
	}()
	body, release, aerr := h.readBody(c)
	if aerr != nil {
		return aerr
	}
	defer release()
	fl.SetBody(body)
	fl.Via.OnParsed = func() { fl.Trace.Session = request.HTTPClientSessionKey(r, fl.Partition()) }
	out, aerr := e.Compact(r.Context(), fl)
	if aerr != nil {
		e.Rejected("http", aerr.Status)
		return aerr
	}
	b, jerr := json.Marshal(out)
	if jerr != nil {
		return api.ServerError("The compacted response could not be written.")
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}
