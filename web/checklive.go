package web

import (
	"net/http"
	"sync"

	"agentloop/api"
	"agentloop/check"
	"agentloop/views"

	"github.com/labstack/echo/v4"
)

// Gauntlet is what /check needs of the engine to grade a client pointed
// at it by hand: the report card's scopes and the drills (app adapts the
// server's registries). owner is who the client is (Identify).
type Gauntlet interface {
	CreateScope(spec api.ScopeSpec, owner string) (api.Scope, *api.Error)
	Scope(id, owner string) (api.Scope, bool)
	ArmDrill(spec api.DrillSpec) (api.Drill, *api.Error)
	Drill(id string) (api.Drill, bool)
	DisarmDrill(id string)
}

// liveChecks remembers, per client, the drill of the check /check armed
// last, so that arming the next one disarms it: one check at a time.
type liveChecks struct {
	mu    sync.Mutex
	drill map[string]string
}

// maxLiveOwners bounds liveChecks: past it, the map starts over (the
// drills it forgets are spent or scoped to a scope no one uses).
const maxLiveOwners = 10_000

func (p *Playground) registerCheckLive(e *echo.Echo) {
	e.GET("/check", p.checkLivePage)
	e.POST("/api/checks/live", p.armLiveCheck, SameOriginJSON)
	e.GET("/api/checks/live/:scope", p.gradeLiveCheck)
}

// checkLivePage is /check: pick a check, point a client at the URL it
// shows, and watch the verdict as requests arrive.
func (p *Playground) checkLivePage(c echo.Context) error {
	var rows []views.CheckChoice
	for _, ch := range check.All {
		rows = append(rows, views.CheckChoice{ID: ch.ID, Passes: ch.Passes})
	}
	return render(c, http.StatusOK, views.CheckLivePage(p.page("Grade your client", "inspect", "js/check.js"), rows))
}

// liveCheck is POST /api/checks/live's answer: what the client must be
// pointed at, and what to poll.
type liveCheck struct {
	Check     string `json:"check"`
	Scope     string `json:"scope"`
	BaseURL   string `json:"base_url"`
	ToolTurns int    `json:"tool_turns"`
	Drill     string `json:"drill,omitempty"`
	DrillID   string `json:"drill_id,omitempty"`
}

// armLiveCheck is POST /api/checks/live {"check": ID}: a scope of the
// caller's own with the check's K, and the check's drill armed there,
// after the caller's previous one is disarmed.
func (p *Playground) armLiveCheck(c echo.Context) error {
	var body struct {
		Check string `json:"check"`
	}
	if err := c.Bind(&body); err != nil {
		return api.BadRequest("", api.CodeInvalidJSON, `The body must be {"check": ID}.`)
	}
	ch := check.Lookup(body.Check)
	if ch == nil {
		return api.BadRequest("check", api.CodeInvalidValue, "Unknown check '%s'.", body.Check)
	}
	owner := p.identify(c).ID
	sc, aerr := p.gauntlet.CreateScope(api.ScopeSpec{ToolTurns: ch.ToolTurns()}, owner)
	if aerr != nil {
		return aerr
	}
	out := liveCheck{Check: ch.ID, Scope: sc.ID, ToolTurns: sc.ToolTurns, BaseURL: c.Scheme() + "://" + c.Request().Host + sc.Path}
	p.liveChecks.mu.Lock()
	defer p.liveChecks.mu.Unlock()
	if p.liveChecks.drill == nil || len(p.liveChecks.drill) >= maxLiveOwners {
		p.liveChecks.drill = map[string]string{}
	}
	if prev := p.liveChecks.drill[owner]; prev != "" {
		p.gauntlet.DisarmDrill(prev)
		delete(p.liveChecks.drill, owner)
	}
	if ch.Drill != nil {
		spec := ch.Drill(check.Options{}.WithDefaults())
		spec.Scope = sc.ID
		dr, aerr := p.gauntlet.ArmDrill(*spec)
		if aerr != nil {
			return aerr
		}
		out.Drill, out.DrillID = dr.Drill, dr.ID
		p.liveChecks.drill[owner] = dr.ID
	}
	return c.JSON(http.StatusCreated, out)
}

// liveGrade is GET /api/checks/live/{scope}'s answer: the verdict on
// what the engine has seen so far.
type liveGrade struct {
	Requests int          `json:"requests"`
	Result   check.Result `json:"result"`
}

// gradeLiveCheck is GET /api/checks/live/{scope}?check=ID&drill=DRILL_ID:
// the check graded on the scope's requests so far. A client still
// running may turn not_exercised into a verdict, or a pass into a fail.
func (p *Playground) gradeLiveCheck(c echo.Context) error {
	ch := check.Lookup(c.QueryParam("check"))
	if ch == nil {
		return api.BadRequest("check", api.CodeInvalidValue, "Unknown check '%s'.", c.QueryParam("check"))
	}
	sc, ok := p.gauntlet.Scope(c.Param("scope"), p.identify(c).ID)
	if !ok {
		return api.Errorf(http.StatusNotFound, "", api.CodeNotFound, "No scope '%s' of yours.", c.Param("scope"))
	}
	o := &check.Observed{Scope: sc.ID, ToolTurns: sc.ToolTurns, Traces: check.Ordered(sc.Traces), Options: check.Options{}.WithDefaults(),
		StartedUnixNS: sc.CreatedUnixNS, Live: true}
	if id := c.QueryParam("drill"); id != "" {
		dr, ok := p.gauntlet.Drill(id)
		if !ok || dr.Scope != sc.ID {
			return api.Errorf(http.StatusNotFound, "drill", api.CodeNotFound, "No drill '%s' in scope '%s'.", id, sc.ID)
		}
		o.Drill = &dr
	}
	res := ch.Grade(o)
	res.ID, res.Passes, res.Scope = ch.ID, ch.Passes, sc.ID
	if o.Drill != nil {
		res.Drill = o.Drill.Drill
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, liveGrade{Requests: len(sc.Traces), Result: res})
}
