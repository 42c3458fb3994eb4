package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/rollout"
	"agentloop/store"
	"agentloop/workload"

	"github.com/labstack/echo/v4"
)

// maxRunBody bounds POST /api/runs: a config is a few hundred bytes, and it
// may hold a workload (docs/workload.md).
const maxRunBody = 64<<10 + workload.MaxBytes

// decodeRunRequest reads POST /api/runs's body strictly: unknown fields and
// wrong types are 400s that name the parameter. Defaults and ranges are the
// runner's (rollout.Normalize).
func decodeRunRequest(body []byte) (rollout.Config, *api.Error) {
	var cfg rollout.Config
	if len(bytes.TrimSpace(body)) == 0 {
		return cfg, api.BadRequest("", api.CodeInvalidJSON, "The body is empty; send a JSON object such as {\"scenario\": \"fix-failing-test\"}.")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return rollout.Config{}, jsonProblem(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return rollout.Config{}, api.BadRequest("", api.CodeInvalidJSON, "The body must hold exactly one JSON object.")
	}
	// An absent repeats or seed takes its default; a given one must be a
	// real value: 0 or below is refused, never quietly changed.
	var given map[string]json.RawMessage
	_ = json.Unmarshal(body, &given)
	// A null number would decode as 0, quietly: an empty round trip is not
	// 0 ms. Refuse it; leaving the field out takes the default.
	for _, name := range []string{"rtt_ms", "tool_time_ms", "seed", "repeats", "decode_tps", "bandwidth_kbps", "compact_threshold"} {
		if raw, ok := given[name]; ok && string(bytes.TrimSpace(raw)) == "null" {
			return rollout.Config{}, api.BadRequest(name, api.CodeInvalidValue, "%s is null: give a value, or leave it out for the default.", name)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"repeats", int64(cfg.Repeats)}, {"seed", cfg.Seed}} {
		if _, ok := given[f.name]; ok && f.v < 1 {
			return rollout.Config{}, api.BadRequest(f.name, api.CodeInvalidValue, "%s must be 1 or more (leave it out for the default).", f.name)
		}
	}
	// A workload race is fair by default: the fields it leaves out, and
	// only those, take the fair defaults.
	rollout.FairDefaults(&cfg, func(name string) bool { _, ok := given[name]; return ok })
	return cfg, nil
}

// jsonProblem turns a decoding error into a 400 that says what to fix.
func jsonProblem(err error) *api.Error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		ae  *api.Error
		we  *workload.Error
	)
	switch {
	case errors.As(err, &we): // the workload's own decoder refused it
		return api.BadRequest("workload", api.CodeInvalidValue, "Invalid 'workload': %s.", strings.TrimPrefix(we.Error(), "workload: "))
	case errors.As(err, &ae): // a field's own decoder refused its value (stack)
		return ae
	case errors.As(err, &typ):
		param := typ.Field
		if param == "" {
			return api.BadRequest("", api.CodeInvalidType, "The body must be a JSON object.")
		}
		return api.BadRequest(param, api.CodeInvalidType, "Invalid type for '%s': expected %s, got %s.", param, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.As(err, &syn):
		return api.BadRequest("", api.CodeInvalidJSON, "The body is not valid JSON (at byte %d).", syn.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return api.BadRequest(name, api.CodeUnknownParameter, "Unknown parameter: '%s'.", name)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return api.BadRequest("", api.CodeInvalidJSON, "The body ends before the JSON object does.")
	default:
		return api.BadRequest("", api.CodeInvalidJSON, "The body is not valid JSON.")
	}
}

func jsonKind(k string) string {
	switch k {
	case "float64", "int64", "int":
		return "a number"
	case "slice":
		return "an array"
	case "bool":
		return "a boolean"
	case "struct":
		return "an object"
	default:
		return "a " + k
	}
}

// startRun is POST /api/runs → {"id": "..."}, and the run's cancel_token
// for a client without the server's key: only it (or the key) cancels or
// deletes the run. The client's share of race slots is the runner's.
func (p *Playground) startRun(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxRunBody+1))
	if err != nil {
		return api.BadRequest("", api.CodeInvalidJSON, "Could not read the body.")
	}
	if len(body) > maxRunBody {
		return api.Errorf(http.StatusRequestEntityTooLarge, "", api.CodeRequestTooLarge, "The body is larger than %d bytes.", maxRunBody)
	}
	cfg, perr := decodeRunRequest(body)
	if perr != nil {
		return perr
	}
	if err := p.resolveWorkload(c.Request().Context(), &cfg); err != nil {
		return err
	}
	client := p.identify(c)
	id, err := p.races.Start(client.ID, cfg, p.hub.publish)
	if err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) {
			p.log.Error("start race", "err", err)
		}
		return api.StoreError(err, "The race could not be stored")
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	c.Response().Header().Set(echo.HeaderLocation, "/api/runs/"+id)
	answer := startedRun{ID: id}
	if !client.Keyed {
		answer.CancelToken = p.cancels.token(id)
	}
	return c.JSON(http.StatusOK, answer)
}

// startedRun is POST /api/runs's answer.
type startedRun struct {
	ID          string `json:"id"`
	CancelToken string `json:"cancel_token,omitempty"`
}

// runFilter reads ?scenario=&profile=&since=&until=&limit=. Dates are
// YYYY-MM-DD in the server's time zone (until includes its day) or RFC 3339.
func runFilter(q url.Values) (store.RunFilter, *api.Error) {
	f := store.RunFilter{Scenario: strings.TrimSpace(q.Get("scenario")), Profile: strings.TrimSpace(q.Get("profile")), Limit: 50}
	if len(f.Scenario) > 200 || len(f.Profile) > 200 {
		return f, api.BadRequest("scenario", api.CodeInvalidValue, "Filter values are at most 200 characters.")
	}
	var err *api.Error
	if f.Since, err = filterTime(q.Get("since"), "since", false); err != nil {
		return f, err
	}
	if f.Until, err = filterTime(q.Get("until"), "until", true); err != nil {
		return f, err
	}
	if s := q.Get("limit"); s != "" {
		n, cerr := strconv.Atoi(s)
		if cerr != nil || n < 1 || n > 1000 {
			return f, api.BadRequest("limit", api.CodeInvalidValue, "limit must be an integer between 1 and 1000.")
		}
		f.Limit = n
	}
	return f, nil
}

// The dates a filter may name: run times are stored as Unix nanoseconds,
// which hold 1678 to 2262, and no run predates 1970.
var (
	filterEarliest = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	filterLatest   = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

func filterTime(s, param string, endOfDay bool) (time.Time, *api.Error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation(time.DateOnly, s, time.Local)
	if err == nil && endOfDay {
		t = t.AddDate(0, 0, 1)
	}
	if err != nil {
		if t, err = time.Parse(time.RFC3339, s); err != nil {
			return time.Time{}, api.BadRequest(param, api.CodeInvalidValue, "%s must be a date (YYYY-MM-DD) or an RFC 3339 time.", param)
		}
	}
	if t.Before(filterEarliest) || t.After(filterLatest) {
		return time.Time{}, api.BadRequest(param, api.CodeInvalidValue, "%s must lie between %s and %s.", param,
			filterEarliest.Format(time.DateOnly), filterLatest.Format(time.DateOnly))
	}
	return t, nil
}

// listRuns is GET /api/runs: {"object":"list","data":[...],"has_more":bool}.
func (p *Playground) listRuns(c echo.Context) error {
	f, perr := runFilter(c.QueryParams())
	if perr != nil {
		return perr
	}
	runs, more, err := p.list(c.Request().Context(), f)
	if err != nil {
		p.log.Error("list runs", "err", err)
		return api.StoreError(err, "The runs could not be read")
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, runList{Object: "list", Data: runs, HasMore: more})
}

type runList struct {
	Object  string              `json:"object"`
	Data    []rollout.RunRecord `json:"data"`
	HasMore bool                `json:"has_more"`
}

// list asks for one run more than the limit to know whether there are more.
func (p *Playground) list(ctx context.Context, f store.RunFilter) ([]rollout.RunRecord, bool, error) {
	limit := f.Limit
	f.Limit = limit + 1
	runs, err := p.runs.ListRuns(ctx, f)
	if err != nil {
		return nil, false, err
	}
	more := len(runs) > limit
	if more {
		runs = runs[:limit]
	}
	if runs == nil {
		runs = []rollout.RunRecord{}
	}
	return runs, more, nil
}

// getRun is GET /api/runs/{id}: the run with every turn.
func (p *Playground) getRun(c echo.Context) error {
	id := c.Param("id")
	rec, err := p.runs.LoadRun(c.Request().Context(), id)
	if err != nil {
		return storeError(err, "Run", id)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, rec)
}

// cancelRun is POST /api/runs/{id}/cancel: a running or queued race stops
// and ends as cancelled; its lanes that had not passed end cancelled too.
// Only whoever started it, or the server's key, may (mayStop).
func (p *Playground) cancelRun(c echo.Context) error {
	id := c.Param("id")
	if !p.races.Running(id) {
		if _, lerr := p.runs.LoadRun(c.Request().Context(), id); lerr != nil {
			return storeError(lerr, "Run", id)
		}
		return p.races.Cancel(id) // a 409: there is nothing to cancel here
	}
	if err := p.mayStop(c, id, "cancel"); err != nil {
		return err
	}
	if err := p.races.Cancel(id); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"id": id, "object": "run", "status": "cancelling"})
}

// deleteRun is DELETE /api/runs/{id}, by whoever started the run or with
// the server's key (mayStop). A run still running is refused: its lanes
// would keep writing turns of a deleted run.
func (p *Playground) deleteRun(c echo.Context) error {
	id := c.Param("id")
	ctx := c.Request().Context()
	if p.races.Running(id) {
		return api.Errorf(http.StatusConflict, "", api.CodeRunRunning, "Run '%s' is still running; delete it once it ends.", id)
	}
	rec, err := p.runs.LoadRun(ctx, id)
	if err != nil {
		return storeError(err, "Run", id)
	}
	if rec.Status == rollout.StatusQueued || rec.Status == rollout.StatusRunning {
		return api.Errorf(http.StatusConflict, "", api.CodeRunRunning, "Run '%s' is %s in another process; delete it once it ends.", id, rec.Status)
	}
	if err := p.mayStop(c, id, "delete"); err != nil {
		return err
	}
	if err := p.runs.DeleteRun(ctx, id); err != nil {
		return storeErrorDoing(err, "Run", id, "deleted")
	}
	return c.JSON(http.StatusOK, map[string]any{"id": id, "object": "run", "deleted": true})
}
