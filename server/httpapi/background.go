package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"agentloop/api"
	"agentloop/server/core"
	"agentloop/server/request"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// Background responses over HTTP (docs/protocol.md "Background
// responses"): the create's answer, the resumed stream and the cancel.

// createBackground queues a prepared background create: it answers with
// the queued response, or streams its events from response.created on
// (the response runs on whether or not the stream is read).
func (h *API) createBackground(c echo.Context, fl *core.Flight, finished func(*api.Error)) error {
	r := c.Request()
	run, aerr := h.bg.Accept(r.Context(), fl, request.ClientIdentity(c), finished)
	if aerr != nil {
		h.e.Rejected("http", aerr.Status)
		return aerr
	}
	if !fl.Request().Streaming() {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, run.Snapshot())
	}
	return h.streamBackground(c, run.ID(), -1)
}

// Close ends the engine's background responses (core.Backgrounds.Close).
func (h *API) Close() { h.bg.Close() }

// resume is GET /responses/:id?stream=true[&starting_after=N]: a
// background response's events after N (all without it), live until it
// ends.
func (h *API) resume(c echo.Context, id string) error {
	after := -1
	if s := c.QueryParam("starting_after"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return api.BadRequest("starting_after", api.CodeInvalidValue, "Invalid 'starting_after': expected a non-negative integer, but got '%s'.", s)
		}
		after = n
	}
	return h.streamBackground(c, id, after)
}

// streamBackground streams a background response's events after after.
func (h *API) streamBackground(c echo.Context, id string, after int) error {
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	s := newSSESink(c.Response(), h.e.Config().WriteStall)
	if err := h.bg.Stream(c.Request().Context(), id, after, s); err != nil && c.Request().Context().Err() == nil {
		h.e.Shared().Log.Warn("resume background response", "id", id, "err", err)
	}
	return nil
}

// Cancel is POST /responses/:id/cancel: a background response's final
// snapshot once cancelled, or as it is when it had already ended; a
// response not created in the background gets a 400.
func (h *API) Cancel(c echo.Context) error {
	id := c.Param("id")
	ctx := c.Request().Context()
	snapshot, ok, aerr := h.bg.Cancel(ctx, id)
	if aerr != nil {
		return aerr
	}
	if !ok {
		st := h.e.Shared().Store
		if st == nil {
			return api.ResponseNotFound(id)
		}
		_, err := st.GetResponse(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return api.ResponseNotFound(id)
		}
		if err != nil {
			return storeError(err)
		}
		return api.NotCancellable(id)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, snapshot)
}
