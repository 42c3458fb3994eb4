package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/server/core"
	"agentloop/server/request"
	"agentloop/store"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// RegisterTraces mounts GET /api/traces/:id on g.
func RegisterTraces(g *echo.Group, traces *core.TraceRing) {
	g.GET("/traces/:id", func(c echo.Context) error {
		t, ok, err := traces.Lookup(c.Request().Context(), c.Param("id"))
		if err != nil {
			return storeError(err)
		}
		if !ok {
			return api.Errorf(http.StatusNotFound, "", "", "No trace for response '%s'.", c.Param("id"))
		}
		return c.JSON(http.StatusOK, t)
	})
}

// API is one engine's HTTP+SSE transport: the handlers of its routes.
type API struct {
	e  *core.Engine
	bg *core.Backgrounds
}

// New returns engine e's HTTP+SSE transport.
func New(e *core.Engine) *API { return &API{e: e, bg: core.NewBackgrounds(e)} }

// readBody reads a request body up to the engine's limit and takes its
// share of the in-flight budget; release returns it.
func (h *API) readBody(c echo.Context) (body []byte, release func(), aerr *api.Error) {
	body, aerr = h.readLimited(c)
	if aerr != nil {
		return nil, nil, aerr
	}
	release, aerr = h.e.Shared().Budget.Acquire(len(body))
	if aerr != nil {
		h.e.Rejected("http", aerr.Status)
		return nil, nil, aerr
	}
	return body, release, nil
}

// readLimited reads a request body up to the engine's limit.
func (h *API) readLimited(c echo.Context) ([]byte, *api.Error) {
	maxBody := h.e.Config().MaxBody
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, api.Errorf(http.StatusRequestEntityTooLarge, "", api.CodeRequestTooLarge,
				"Request body too large: the limit is %d bytes.", maxBody)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, api.Errorf(http.StatusRequestTimeout, "", api.CodeRequestTimeout, "The request body stopped arriving and was dropped.")
		}
		return nil, api.BadRequest("", api.CodeInvalidBody, "The request body could not be read.")
	}
	return body, nil
}

// Create is POST /responses.
func (h *API) Create(c echo.Context) (err error) {
	e := h.e
	started := time.Now()
	r := c.Request()
	fl := e.NewFlight("http", started, nil)
	fl.Via.Admit = admitHTTP
	fl.Trace.Client = request.ClientOf(r)
	fl.Trace.SetScope(api.AgentloopHeader(r, api.HeaderScope))
	closeTurn := func() {}
	handedOver := false // to a background response, which observes its own end
	defer func() {
		if handedOver {
			return
		}
		if fl.Trace.Session == "" {
			fl.Trace.Session = request.HTTPClientSessionKey(r, "")
		}
		var aerr *api.Error
		errors.As(err, &aerr)
		e.Observe(fl.Trace, aerr)
		closeTurn()
	}()
	body, release, aerr := h.readBody(c)
	if aerr != nil {
		return aerr
	}
	defer func() {
		if !handedOver {
			release()
		}
	}()
	ctx := r.Context()
	fl.SetBody(body)
	// In flight for the inspector from the moment the body names its
	// session until its trace is observed.
	fl.Via.OnParsed = func() {
		fl.Trace.Session = request.HTTPClientSessionKey(r, fl.Partition())
		closeTurn = e.ObserveOpen(fl.Trace.Session)
	}
	stack, aerr := apistack.FromRequest(r, e.Config().Stack)
	if aerr != nil {
		e.Rejected("http", aerr.Status)
		return aerr
	}
	e.UseStack(fl, stack)
	aerr = e.Prepare(ctx, fl)
	fl.Trace.Session = request.HTTPClientSessionKey(r, fl.Partition()) // before generate shares the trace
	if aerr != nil {
		e.Rejected("http", aerr.Status)
		return aerr
	}
	if fl.Request().InBackground() {
		// The response outlives this request: it keeps its share of the
		// budget, and is observed, when it ends.
		handedOver = true
		return h.createBackground(c, fl, func(aerr *api.Error) {
			release()
			e.Observe(fl.Trace, aerr)
			closeTurn()
		})
	}
	if !fl.Request().Streaming() {
		res := e.Generate(ctx, fl, core.Discard{})
		if res.Err != nil {
			return res.Err
		}
		if res.Response.Status == "cancelled" {
			return nil
		}
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c.Response().WriteHeader(http.StatusOK)
		_, err := c.Response().Write(res.Snapshot)
		return err
	}
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	s := newSSESink(c.Response(), e.Config().WriteStall)
	s.stalled = e.Shared().Metrics.StallAborted
	e.Generate(ctx, fl, s)
	return nil
}

// sseSink frames events as SSE into a buffer and flushes once per batch.
type sseSink struct {
	w        *bufio.Writer
	rc       *http.ResponseController // flushes and sets deadlines on the writer under echo's
	stall    time.Duration
	deadline time.Time // the write deadline last set
	stalled  func()    // counts a write that hit the stall limit
}

// NewSSESink is the sink of a streamed HTTP response written to w, whose
// writes end when one stalls for stall (the transports' benchmarks use it).
func NewSSESink(w http.ResponseWriter, stall time.Duration) core.Sink { return newSSESink(w, stall) }

func newSSESink(w http.ResponseWriter, stall time.Duration) *sseSink {
	inner := w
	if er, ok := w.(*echo.Response); ok {
		// echo's Flush drops the error of the write it causes: a stalled
		// flush would end the stream as if the client had gone.
		inner = er.Writer
	}
	return &sseSink{w: bufio.NewWriterSize(w, 16<<10), rc: http.NewResponseController(inner), stall: stall}
}

func (s *sseSink) Event(typ string, b []byte) error {
	s.w.WriteString("event: ")
	s.w.WriteString(typ)
	s.w.WriteString("\ndata: ")
	s.w.Write(b)
	_, err := s.w.WriteString("\n\n")
	return s.check(err) // an event larger than the buffer is written here, not at the flush
}

// check counts a write that hit the stall limit, once.
func (s *sseSink) check(err error) error {
	if err != nil && s.stalled != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		s.stalled()
		s.stalled = nil
	}
	return err
}

func (s *sseSink) Flush() error {
	if s.stall > 0 {
		// Moving the deadline re-arms a runtime timer; at one flush per
		// token that showed in profiles. It moves once it is nearer than
		// 7/8 of the limit, so a stalled write ends after 7/8 to all of it.
		if now := time.Now(); s.deadline.Sub(now) < s.stall-s.stall/8 {
			s.deadline = now.Add(s.stall)
			_ = s.rc.SetWriteDeadline(s.deadline)
		}
	}
	if err := s.w.Flush(); err != nil {
		return s.check(err)
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return s.check(err)
	}
	return nil
}

// Get is GET /responses/:id: a stored response.
func (h *API) Get(c echo.Context) error {
	st := h.e.Shared().Store
	id := c.Param("id")
	if st == nil {
		return api.ResponseNotFound(id)
	}
	ctx := c.Request().Context()
	stream, aerr := h.streamAsked(c)
	if aerr != nil {
		return aerr
	}
	r, err := st.GetResponse(ctx, id)
	var snapshot []byte
	switch {
	case err == nil:
		if stream && !createdInBackground(r.Snapshot) {
			return api.NotStreamable(id)
		}
		snapshot = r.Snapshot
	case errors.Is(err, store.ErrNotFound):
		// A background response is stored as one only once it has ended.
		bg, berr := h.bg.Get(ctx, id)
		if errors.Is(berr, store.ErrNotFound) {
			return api.ResponseNotFound(id)
		}
		if berr != nil {
			return storeError(berr)
		}
		snapshot = bg.Snapshot
	default:
		return storeError(err)
	}
	if stream {
		return h.resume(c, id)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, snapshot)
}

// streamAsked says whether a retrieve asks for the events: stream=true in
// the query, or {"stream": true} in the body, as openai-go's GetStreaming
// sends it.
func (h *API) streamAsked(c echo.Context) (bool, *api.Error) {
	if stream, _ := strconv.ParseBool(c.QueryParam("stream")); stream {
		return true, nil
	}
	if c.Request().ContentLength == 0 {
		return false, nil
	}
	body, aerr := h.readLimited(c)
	if aerr != nil || len(body) == 0 {
		return false, aerr
	}
	var b struct {
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return false, api.BadRequest("", api.CodeInvalidJSON, "The request body is not a JSON object.")
	}
	return b.Stream, nil
}

// createdInBackground reads a stored snapshot's "background".
func createdInBackground(snapshot []byte) bool {
	var r struct {
		Background bool `json:"background"`
	}
	return json.Unmarshal(snapshot, &r) == nil && r.Background
}

// Delete is DELETE /responses/:id.
func (h *API) Delete(c echo.Context) error {
	st := h.e.Shared().Store
	id := c.Param("id")
	if st == nil {
		return api.ResponseNotFound(id)
	}
	err := st.DeleteResponse(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		// A background response that ended unstored (cancelled, failed).
		err = h.bg.Delete(c.Request().Context(), id)
	} else if err == nil {
		_ = h.bg.Delete(c.Request().Context(), id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return api.ResponseNotFound(id)
	}
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, api.DeletedResponse{ID: id, Object: "response", Deleted: true})
}

// page is a listing's query: after, limit (1–100, default 20) and order
// (asc or desc, default desc).
type page struct {
	after, order string
	limit        int
}

// pageOf reads a listing's query.
func pageOf(c echo.Context) (page, *api.Error) {
	p := page{after: c.QueryParam("after"), limit: 20, order: c.QueryParam("order")}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return p, api.BadRequest("limit", api.CodeIntegerOutOfRange, "Invalid 'limit': expected an integer between 1 and 100.")
		}
		p.limit = n
	}
	switch p.order {
	case "":
		p.order = "desc"
	case "asc", "desc":
	default:
		return p, api.BadRequest("order", api.CodeInvalidValue, "Invalid value: '%s'. Supported values are: 'asc' and 'desc'.", p.order)
	}
	return p, nil
}

// InputItems is GET /responses/:id/input_items: a stored response's input items, a page at a time.
func (h *API) InputItems(c echo.Context) error {
	st := h.e.Shared().Store
	id := c.Param("id")
	p, aerr := pageOf(c)
	if aerr != nil {
		return aerr
	}
	if st == nil {
		return api.ResponseNotFound(id)
	}
	items, more, err := st.InputItems(c.Request().Context(), id, p.after, p.limit, p.order)
	if errors.Is(err, store.ErrNotFound) {
		return api.ResponseNotFound(id)
	}
	if err != nil {
		return storeError(err)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, appendItemList(nil, items, more))
}

// appendItemList appends a page of items as a list: its data, first_id,
// last_id (the last listed item's id, so a walk of pages returns every
// item once) and has_more.
func appendItemList(b []byte, items []store.Item, more bool) []byte {
	b = append(b, `{"object":"list","data":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it.JSON...)
	}
	b = append(b, `],"first_id":`...)
	if len(items) > 0 {
		b = api.AppendString(b, items[0].ItemID)
		b = append(b, `,"last_id":`...)
		b = api.AppendString(b, items[len(items)-1].ItemID)
	} else {
		b = append(b, `null,"last_id":null`...)
	}
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, more)
	return append(b, '}')
}

// MetricsHandler serves m in the Prometheus text format.
func MetricsHandler(m *core.Metrics) http.Handler {
	return promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{})
}

func storeError(err error) *api.Error { return api.StoreError(err, "The store could not answer") }

// admitHTTP applies the HTTP transport's rules to a decoded create: what
// this engine does not serve gets a clear 400 rather than a silent answer.
func admitHTTP(req *api.CreateRequest) *api.Error {
	if req.Model == "" {
		return api.MissingParameter("model")
	}
	if req.StreamID != nil {
		return api.BadRequest("stream_id", api.CodeUnsupportedParameter, "'stream_id' names a WebSocket lane; it is not accepted over HTTP.")
	}
	if req.InBackground() && !req.Stored() {
		return api.BackgroundNeedsStore()
	}
	return nil
}
