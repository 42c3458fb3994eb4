package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
	"agentloop/static"
	"agentloop/store"
	"agentloop/views"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// render renders into a buffer first, so a template error never leaves a
// half-written page.
func render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.HTMLBlob(status, buf.Bytes())
}

func (p *Playground) page(title, nav string, scripts ...string) views.Page {
	return views.Page{Title: title, Nav: nav, Scripts: scripts, KeyRequired: p.keyed}
}

func (p *Playground) problem(c echo.Context, status int, title, msg string) error {
	return render(c, status, views.ProblemPage(p.page(title, ""), views.Problem{Status: status, Title: title, Message: msg}))
}

// preset is the home page's full race, beside "Race it live" (the
// classroom race the recording ran): the full comparison at a pace a
// first-time visitor can watch, fair (lanes one after another) and with
// the modelled hosted API stack (docs/decisions.md, "Defaults that tell
// the story").
var preset = rollout.Config{Scenario: "fix-failing-test", Profile: api.DefaultModel, RTTms: 20, ToolTimeMs: 50, Lanes: rollout.DefaultLanes,
	Sequential: true, Stack: apistack.DefaultRace}

// RecordedRace is the race the carried recording runs (RaceRecording):
// presenter mode's start, the classroom's live race (rollout.Classroom,
// the playground's classroom), so that what a class first sees is the
// race S starts. A copy, for the recording's generator.
func RecordedRace() rollout.Config {
	c := rollout.Classroom
	c.Lanes = slices.Clone(c.Lanes)
	return c
}

func (p *Playground) home(c echo.Context) error {
	cfg, full := p.classroom, p.preset
	b, _ := json.Marshal(cfg)
	f, _ := json.Marshal(full)
	return render(c, http.StatusOK, views.HomePage(p.page("Home", "home", "js/track.js", "js/home.js"), views.Home{Preset: string(b), PresetLabel: presetLabel(cfg),
		Estimate: estimate(cfg), Full: string(f), FullLabel: presetLabel(full), FullEstimate: estimate(full),
		Stack: cfg.Stack.Preset, Reading: apistack.Reading(cfg.Stack.Preset), Recording: p.recordingView()}))
}

// estimate says how long cfg's race will take ("about 25 s";
// rollout.Estimate), "" for a config that does not normalize.
func estimate(cfg rollout.Config) string {
	if rollout.Normalize(&cfg) != nil {
		return ""
	}
	return rollout.EstimateWords(rollout.Estimate(cfg))
}

// presetLabel says what the ready-made race runs.
func presetLabel(cfg rollout.Config) string {
	lanes := "all four lanes"
	if !slices.Equal(cfg.Lanes, rollout.DefaultLanes) {
		names := make([]string, 0, len(cfg.Lanes))
		for _, l := range cfg.Lanes {
			names = append(names, laneLabel(l))
		}
		lanes = strings.Join(names, ", ")
	}
	order := ", " + cfg.Order()
	stack := "lean API stack (nothing modelled around the model)"
	if cfg.Stack.Modelled() {
		stack = "modelled " + cfg.Stack.Preset + " API stack"
	}
	return cfg.Scenario + " · " + cfg.Profile + " · " + fmtMs(cfg.RTTms) + " round trip · " + fmtMs(cfg.ToolTimeMs) + " per tool call · " + lanes + order + " · " + stack
}

func findScenario(name string) (rollout.ScenarioInfo, bool) {
	for _, s := range rollout.Scenarios() {
		if s.Name == name {
			return s, true
		}
	}
	return rollout.ScenarioInfo{}, false
}

func (p *Playground) docs(c echo.Context) error {
	base := c.Scheme() + "://" + c.Request().Host
	ws := "ws://" + c.Request().Host + "/v1/responses"
	if c.Scheme() == "https" {
		ws = "wss://" + c.Request().Host + "/v1/responses"
	}
	return render(c, http.StatusOK, views.DocsPage(p.page("Docs", "docs"), views.Docs{BaseURL: base, WSURL: ws, KeyRequired: p.keyed}))
}

// race is /race and /race?run=ID: the form, and the lanes of a run.
func (p *Playground) race(c echo.Context) error {
	cfg := rollout.Config{Profile: api.DefaultModel, RTTms: 20, Lanes: rollout.DefaultLanes, Seed: 1, Repeats: 1, Sequential: true, Stack: apistack.DefaultRace}
	if all := rollout.Scenarios(); len(all) > 0 {
		cfg.Scenario = all[0].Name
	}
	v := views.Race{Cores: p.cores, Stages: raceStages, Groups: groupsJSON, Present: c.QueryParams().Has("present")}
	if v.Present {
		// Presenter mode starts the classroom's live race.
		cfg = p.classroom
		v.Estimate = estimate(cfg)
	}
	if id := c.QueryParam("run"); id != "" {
		rec, err := p.runs.LoadRun(c.Request().Context(), id)
		if errors.Is(err, store.ErrNotFound) {
			return p.problem(c, http.StatusNotFound, "Run not found", "There is no run '"+id+"'. It may have been deleted.")
		}
		if err != nil {
			return p.storeProblem(c, err, "Could not load the run", "The run could not be read")
		}
		cfg = rec.Config
		v.RunID = rec.ID
		status := map[string]string{}
		for _, l := range rec.Lanes {
			status[l.Lane] = l.Status
		}
		for _, l := range rec.Config.Lanes {
			st := status[l]
			if st == "" {
				st = rec.Status
			}
			v.RunLanes = append(v.RunLanes, laneCard(l, st))
		}
	}
	v.Scenarios = scenarioOptions(cfg.Scenario)
	v.Profiles = profileOptions(cfg.Profile)
	v.Lanes = laneChoices(cfg.Lanes)
	v.Limits = raceLimits
	_, largest := p.windows.Largest()
	v.Limits.MaxCompactThreshold = strconv.Itoa(largest)
	for _, l := range rollout.AllLanes {
		v.LaneTemplates = append(v.LaneTemplates, laneCard(l, rollout.StatusQueued))
	}
	v.RTTms = strconv.FormatFloat(cfg.RTTms, 'f', -1, 64)
	v.ToolTimeMs = strconv.FormatFloat(cfg.ToolTimeMs, 'f', -1, 64)
	v.Seed = strconv.FormatInt(max(cfg.Seed, 1), 10)
	v.Repeats = strconv.Itoa(max(cfg.Repeats, 1))
	v.Sequential, v.TakeTurns = cfg.Sequential, cfg.TakeTurns
	v.Stacks, v.StackParams, v.StackPresets = stackChoices(cfg.Stack)
	if cfg.CompactThreshold > 0 {
		v.CompactThreshold = strconv.Itoa(cfg.CompactThreshold)
	}
	if cfg.DecodeTPS > 0 {
		v.DecodeTPS = strconv.FormatFloat(cfg.DecodeTPS, 'f', -1, 64)
	}
	v.ReasoningEfforts, v.ReasoningSummaries = reasoningChoices(cfg.Reasoning)
	v.Drills, v.DrillSchedule = drillChoices(), "[]"
	if v.Present {
		p.presenter(&v, cfg)
	}
	if v.Present && v.RunID == "" {
		v.Recording = p.recordingView() // presenter mode opens on the recording
	}
	if len(cfg.Drills) > 0 {
		b, _ := json.Marshal(cfg.Drills)
		v.DrillSchedule = string(b)
	}
	page := p.page("Race", "race", "js/charts.js", "js/track.js", "js/race.js")
	page.Present = v.Present
	return render(c, http.StatusOK, views.RacePage(page, v))
}

// drillChoices are the race form's drills, each with the lanes it can hit,
// said next to its name.
func drillChoices() []views.DrillChoice {
	out := make([]views.DrillChoice, 0, len(api.DrillNames))
	for _, d := range api.DrillNames {
		lanes := rollout.DrillLanes(d)
		affects := "HTTP lanes only"
		switch {
		case slices.Equal(lanes, []string{rollout.LaneWS}):
			affects = "WebSocket only"
		case slices.Contains(lanes, rollout.LaneWS):
			affects = "HTTP and WebSocket"
		}
		out = append(out, views.DrillChoice{Name: d, Lanes: strings.Join(lanes, " "), Affects: affects})
	}
	return out
}

func (p *Playground) explorer(c echo.Context) error {
	ex := explorerExamples()
	return render(c, http.StatusOK, views.ExplorerPage(p.page("Explorer", "explorer", "js/explorer.js"), views.Explorer{Examples: ex, Body: ex[0].Body}))
}

// explorerExamples are the bodies to start from. explorer.js fills the
// chained follow-up from the last response when there is one.
func explorerExamples() []views.Example {
	pretty := func(v any) string {
		b, _ := json.MarshalIndent(v, "", "  ")
		return string(b)
	}
	weather := map[string]any{
		"type": "function", "name": "get_weather", "description": "Current weather for a city.", "strict": true,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string", "description": "City name"}},
			"required": []string{"city"}, "additionalProperties": false},
	}
	return []views.Example{
		{Key: "text", Label: "Plain text", Body: pretty(map[string]any{"model": api.DefaultModel,
			"input": "In two sentences, why does a persistent WebSocket help an agent loop?"})},
		{Key: "tool", Label: "Function tool", Body: pretty(map[string]any{"model": api.DefaultModel,
			"input": "What is the weather in Paris right now?", "tools": []any{weather}})},
		{Key: "chain", Label: "Chained follow-up", Body: pretty(map[string]any{"model": api.DefaultModel,
			"previous_response_id": "resp_FROM_THE_LAST_RESPONSE",
			"input":                []any{map[string]any{"type": "function_call_output", "call_id": "call_FROM_THE_LAST_RESPONSE", "output": `{"temp_c": 21, "sky": "clear"}`}},
			"tools":                []any{weather}})},
		// Two sub-agents share one socket: each body names its lane, and the
		// engine runs the lanes at once. Sent over WebSocket only.
		{Key: "lanes", Label: "Two sub-agents as lanes (WebSocket)", Body: pretty([]any{
			map[string]any{"model": api.DefaultModel, "stream_id": "agent_a", "store": false,
				"input": "You are sub-agent A. In one sentence, what does a WebSocket lane (stream_id) give an agent?"},
			map[string]any{"model": api.DefaultModel, "stream_id": "agent_b", "store": false,
				"input": "You are sub-agent B. What is the weather in Paris right now?", "tools": []any{weather}},
		})},
	}
}

// runsPage is /runs with ?scenario=&profile=&since=&until=.
func (p *Playground) runsPage(c echo.Context) error {
	q := c.QueryParams()
	v := views.RunsList{Scenarios: scenarioOptions(q.Get("scenario")), Profiles: profileOptions(q.Get("profile")),
		Since: q.Get("since"), Until: q.Get("until")}
	f, perr := runFilter(q)
	if perr != nil {
		v.Problem, v.ProblemField = perr.Message, perr.Param
		return render(c, http.StatusBadRequest, views.RunsPage(p.page("Runs", "runs"), v))
	}
	runs, more, err := p.list(c.Request().Context(), f)
	if err != nil {
		return p.storeProblem(c, err, "Could not list runs", "The runs could not be read")
	}
	for _, r := range runs {
		v.Rows = append(v.Rows, runRow(r))
	}
	v.HasMore = more
	return render(c, http.StatusOK, views.RunsPage(p.page("Runs", "runs"), v))
}

// runPage is /runs/{id}: the permalink of a run.
func (p *Playground) runPage(c echo.Context) error {
	id := c.Param("id")
	rec, err := p.runs.LoadRun(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return p.problem(c, http.StatusNotFound, "Run not found", "There is no run '"+id+"'. It may have been deleted.")
	}
	if err != nil {
		return p.storeProblem(c, err, "Could not load the run", "The run could not be read")
	}
	link := c.Scheme() + "://" + c.Request().Host + "/runs/" + rec.ID
	d := runDetail(rec, link, p.cores)
	d.WorkloadAnswer = rollout.WorkloadAnswer(rec.Config, rec.Summary)
	if rec.Config.WorkloadID != "" {
		d.WorkloadHref = "/api/workloads/" + rec.Config.WorkloadID
		d.CorpusHref = "/corpus?workload=" + url.QueryEscape(rec.Config.WorkloadID)
	}
	if d.Summary != nil {
		ids, err := p.overlapping(c.Request().Context(), *rec)
		if err != nil {
			p.log.Error("overlapping runs", "run", rec.ID, "err", err)
		}
		d.Summary.Overlap = overlapNote(ids)
	}
	return render(c, http.StatusOK, views.RunPage(p.page("Run "+rec.ID, "runs", "js/charts.js", "js/run.js"), d))
}

// LoginPage is the page app shows, with status 401, to a browser without
// the key cookie. app may already have written the status.
func (p *Playground) LoginPage(c echo.Context) error {
	var buf bytes.Buffer
	if err := views.Login(p.page("Sign in", "", "js/login.js")).Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	if c.Response().Committed {
		_, err := c.Response().Write(buf.Bytes())
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(http.StatusUnauthorized, buf.Bytes())
}

// serveStatic serves the embedded assets. A URL carrying the asset's
// content hash (static.URL) may be cached for good.
func serveStatic(c echo.Context) error {
	name := c.Param("*")
	if !fs.ValidPath(name) || strings.HasSuffix(name, "/") {
		return c.String(http.StatusNotFound, "not found\n")
	}
	b, err := fs.ReadFile(static.FS(), name)
	if err != nil {
		return c.String(http.StatusNotFound, "not found\n")
	}
	h := c.Response().Header()
	if v := static.Version(name); v != "" {
		h.Set("ETag", `"`+v+`"`)
		if c.QueryParam("v") == v {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		if c.Request().Header.Get("If-None-Match") == `"`+v+`"` {
			return c.NoContent(http.StatusNotModified)
		}
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	return c.Blob(http.StatusOK, ct, b)
}

func favicon(c echo.Context) error {
	b, err := fs.ReadFile(static.FS(), "img/icon.svg")
	if err != nil {
		return c.NoContent(http.StatusNotFound)
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=86400")
	return c.Blob(http.StatusOK, "image/svg+xml", b)
}

// NotFoundPage is the HTML page for an unknown page path.
func (p *Playground) NotFoundPage(c echo.Context) error {
	return p.problem(c, http.StatusNotFound, "Not found", "There is no page at "+c.Request().URL.Path+".")
}
