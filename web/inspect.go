package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/inspect"
	"agentloop/rollout"
	"agentloop/store"
	"agentloop/views"

	"github.com/labstack/echo/v4"
)

// Inspector is what the inspector's pages, API and feed read.
// *inspect.Inspector implements it (checked in app).
type Inspector interface {
	Sessions(ctx context.Context, limit int) ([]inspect.Session, error)
	Session(ctx context.Context, id string) (*inspect.Session, error)
	// Since and Tail read the sessions in memory for the feed: those
	// changed after a sequence, and one session's turns from an index on.
	Since(seq uint64) ([]inspect.Session, uint64)
	Tail(id string, from int) (inspect.Session, bool)
	Changed() <-chan struct{}
	// Dropped counts the requests a full queue kept from the inspector,
	// Unsaved the turns it recorded that the store missed.
	Dropped() int64
	Unsaved() int64
}

// The inspector's live feeds: the list of sessions, and one per session.
const (
	inspectFeedPrefix = "inspect:"
	inspectListFeed   = inspectFeedPrefix + "sessions"
)

func sessionFeed(id string) string { return inspectFeedPrefix + "session:" + id }

func isInspectFeed(id string) bool { return strings.HasPrefix(id, inspectFeedPrefix) }

// inspectFrameEvery keeps the inspector's feeds at no more than 20 frames
// a second (docs/decisions.md, "The live feeds push at most 20 frames a
// second"); turns that arrive meanwhile go
// in the next frame.
const inspectFrameEvery = 50 * time.Millisecond

// sessionListLimit is how many sessions /inspect shows.
const sessionListLimit = 100

func (p *Playground) registerInspector(e *echo.Echo) {
	e.GET("/inspect", p.inspectPage)
	e.GET("/inspect/:id", p.sessionPage)
	g := e.Group("/api/sessions")
	g.GET("", p.listSessions)
	g.GET("/:id", p.getSession)
	g.GET("/:id/export", p.exportSession)
	g.GET("/:id/workload", p.sessionWorkload)
	e.GET("/ui/inspect/live", p.inspectLive)
	e.GET("/ui/inspect/:id/live", p.sessionLive)
}

// sessionsFrame is a frame of the list feed: the sessions that changed.
type sessionsFrame struct {
	Sessions []listedSession `json:"sessions"`
}

// listedSession is a session as the inspector's list serves it: the
// session, and its row as the list shows it, phrased here so the page
// builds none (sessionRow renders the same cells).
type listedSession struct {
	inspect.Session
	Row sessionCells `json:"row"`
}

// sessionCells are a session's cells in the list.
type sessionCells struct {
	Client    string `json:"client"` // with the race it belongs to, if any
	Transport string `json:"transport"`
	Cache     string `json:"cache"`  // hits / misses
	Tokens    string `json:"tokens"` // in / cached / out
	Overhead  string `json:"overhead"`
}

func cellsOf(s inspect.Session) sessionCells {
	client := clientLabel(s.Client)
	if s.Race != "" {
		client += " · race " + s.Race
	}
	return sessionCells{Client: client, Transport: transportLabel(s.Transport),
		Cache:    strconv.Itoa(s.Summary.CacheHits) + " / " + strconv.Itoa(s.Summary.CacheMisses),
		Tokens:   fmtInt(s.Summary.InputTokens) + " / " + fmtInt(s.Summary.CachedTokens) + " / " + fmtInt(s.Summary.OutputTokens),
		Overhead: fmtNS(s.Summary.OverheadNS)}
}

func listed(sessions []inspect.Session) []listedSession {
	out := make([]listedSession, len(sessions))
	for i, s := range sessions {
		out[i] = listedSession{Session: s, Row: cellsOf(s)}
	}
	return out
}

// sessionFrame is a frame of a session's feed: its summary and the turns
// not sent before. A page merges turns by index and keeps the summary of
// the highest version, so frames and a fetch of the whole session may
// arrive in any order.
type sessionFrame struct {
	Session inspect.Session `json:"session"`
}

// inspectFeed turns the inspector's changes into frames for the pages
// that watch, until Shutdown. A frame nobody watches is never built.
func (p *Playground) inspectFeed() {
	defer close(p.feedDone)
	var seq uint64
	next := map[string]int{} // a watched session's feed → its first turn not yet sent
	for {
		select {
		case <-p.stopFeed:
			return
		case <-p.inspector.Changed():
		}
		changed, latest := p.inspector.Since(seq)
		seq = latest
		if len(changed) > 0 && p.hub.watched(inspectListFeed) {
			p.sendFrame(inspectListFeed, sessionsFrame{Sessions: listed(changed)})
		}
		for _, s := range changed {
			feed := sessionFeed(s.ID)
			if !p.hub.watched(feed) {
				delete(next, feed)
				continue
			}
			tail, ok := p.inspector.Tail(s.ID, next[feed])
			if !ok {
				continue
			}
			if n := len(tail.Turns); n > 0 {
				next[feed] = tail.Turns[n-1].Index + 1
			}
			p.sendFrame(feed, sessionFrame{Session: tail})
		}
		t := time.NewTimer(inspectFrameEvery)
		select {
		case <-p.stopFeed:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (p *Playground) sendFrame(feed string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		p.log.Error("encode inspector frame", "feed", feed, "err", err)
		return
	}
	p.hub.send(feed, b)
}

// inspectLive is GET /ui/inspect/live: a push-only WebSocket of
// sessionsFrame JSON, at most 20 a second.
func (p *Playground) inspectLive(c echo.Context) error {
	return p.watchInspector(c, inspectListFeed)
}

// sessionLive is GET /ui/inspect/{id}/live: a push-only WebSocket of one
// session's sessionFrame JSON, at most 20 a second.
func (p *Playground) sessionLive(c echo.Context) error {
	return p.watchInspector(c, sessionFeed(c.Param("id")))
}

func (p *Playground) watchInspector(c echo.Context, feed string) error {
	sub, leave, ok := p.hub.subscribe(feed)
	if !ok {
		return api.Errorf(http.StatusNotFound, "", api.CodeNotFound, "The inspector is off.")
	}
	defer leave()
	return p.push(c, feed, sub, nil, "feed ended")
}

// sessionList is GET /api/sessions.
type sessionList struct {
	Object string          `json:"object"`
	Data   []listedSession `json:"data"`
	// Dropped counts the requests the inspector missed because its queue
	// was full (it never slows the engine down).
	Dropped int64 `json:"dropped"`
	// Unsaved counts the turns recorded while the store was too far
	// behind (or refused a batch): live, but not stored.
	Unsaved int64 `json:"unsaved"`
}

// listSessions is GET /api/sessions?limit=N: live and recent sessions,
// the most recently active first, without their turns.
func (p *Playground) listSessions(c echo.Context) error {
	limit, err := listLimit(c)
	if err != nil {
		return err
	}
	hideRaces := false
	switch v := c.QueryParam("races"); v {
	case "", "show":
	case "hide":
		hideRaces = true
	default:
		return api.BadRequest("races", api.CodeInvalidValue, "races must be 'show' or 'hide' (the playground's own races' sessions).")
	}
	sessions, err := p.inspector.Sessions(c.Request().Context(), limit)
	if err != nil {
		p.log.Error("list sessions", "err", err)
		return api.StoreError(err, "The sessions could not be read")
	}
	if hideRaces {
		sessions = slices.DeleteFunc(sessions, func(s inspect.Session) bool { return s.Race != "" })
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, sessionList{Object: "list", Data: listed(sessions), Dropped: p.inspector.Dropped(),
		Unsaved: p.inspector.Unsaved()})
}

// getSession is GET /api/sessions/{id}: a session with its turns.
func (p *Playground) getSession(c echo.Context) error {
	s, err := p.inspector.Session(c.Request().Context(), c.Param("id"))
	if err != nil {
		return storeError(err, "Session", c.Param("id"))
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, s)
}

// exportSession is GET /api/sessions/{id}/export: the same JSON, as a
// file to download.
func (p *Playground) exportSession(c echo.Context) error {
	id := c.Param("id")
	s, err := p.inspector.Session(c.Request().Context(), id)
	if err != nil {
		return storeError(err, "Session", id)
	}
	// The export stays as it was: a turn's sizes for workloads are the
	// workload's (sessionWorkload).
	for i := range s.Turns {
		s.Turns[i].Shape = nil
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return api.ServerError("The session could not be encoded.")
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Disposition", `attachment; filename="`+s.ID+`.json"`)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// raceThisSession is the race "Race this session" starts (the page adds the
// session's workload): the race form's stack, optimized HTTP against
// WebSocket mode, at spark's speed with the recorded tool times.
var raceThisSession = func() string {
	b, _ := json.Marshal(map[string]any{"profile": api.ModelSpark, "stack": apistack.DefaultRace.Preset,
		"lanes": []string{rollout.LaneHTTPOptimized, rollout.LaneWS}})
	return string(b)
}()

// sessionWorkload is GET /api/sessions/{id}/workload: the session as a
// workload (docs/workload.md), a file `agentloop race --workload` takes.
func (p *Playground) sessionWorkload(c echo.Context) error {
	id := c.Param("id")
	s, err := p.inspector.Session(c.Request().Context(), id)
	if err != nil {
		return storeError(err, "Session", id)
	}
	w, err := inspect.Workload(s)
	if err != nil {
		return api.Errorf(http.StatusUnprocessableEntity, "", api.CodeInvalidValue, "Session '%s' cannot be replayed as a workload: %s.", id, strings.TrimPrefix(err.Error(), "workload: "))
	}
	var buf bytes.Buffer
	if err := w.Encode(&buf); err != nil {
		return api.ServerError("The workload could not be encoded.")
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Disposition", `attachment; filename="`+s.ID+`.workload.json"`)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, buf.Bytes())
}

// inspectPage is /inspect: the live and recent sessions.
func (p *Playground) inspectPage(c echo.Context) error {
	sessions, err := p.inspector.Sessions(c.Request().Context(), sessionListLimit)
	if err != nil {
		return p.storeProblem(c, err, "Could not list sessions", "The sessions could not be read")
	}
	v := views.InspectList{BaseURL: c.Scheme() + "://" + c.Request().Host + "/v1", Drills: api.DrillNames}
	for _, s := range sessions {
		v.Rows = append(v.Rows, sessionRow(s))
	}
	return render(c, http.StatusOK, views.InspectPage(p.page("Inspector", "inspect", "js/inspect.js"), v))
}

// sessionPage is /inspect/{id}: the permalink of a session.
func (p *Playground) sessionPage(c echo.Context) error {
	id := c.Param("id")
	s, err := p.inspector.Session(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return p.problem(c, http.StatusNotFound, "Session not found", "There is no session '"+id+"'. It may have been swept by retention.")
	}
	if err != nil {
		return p.storeProblem(c, err, "Could not load the session", "The session could not be read")
	}
	link := c.Scheme() + "://" + c.Request().Host + "/inspect/" + s.ID
	return render(c, http.StatusOK, views.SessionPage(p.page("Session "+s.ID, "inspect", "js/inspect.js"), sessionHead(s, link)))
}

func transportLabel(t string) string {
	if t == inspect.TransportWebSocket {
		return "WebSocket"
	}
	return "HTTP"
}

// clientLabel names a client by its originator, else its User-Agent.
func clientLabel(c api.Client) string {
	switch {
	case c.Originator != "" && c.UserAgent != "":
		return c.Originator + " · " + c.UserAgent
	case c.Originator != "":
		return c.Originator
	case c.UserAgent != "":
		return c.UserAgent
	}
	return "unknown client"
}

func sessionRow(s inspect.Session) views.SessionRow {
	updated := time.Unix(0, s.UpdatedUnixNS)
	short := s.ID
	if len(short) > 17 {
		short = strings.ToValidUTF8(short[:17], "") + "…" // cut at a character
	}
	cells := cellsOf(s)
	return views.SessionRow{ID: s.ID, Short: short, Href: "/inspect/" + s.ID, Client: cells.Client, Transport: cells.Transport,
		Turns: strconv.Itoa(s.Summary.Turns), Errors: strconv.Itoa(s.Summary.Errors),
		Cache: cells.Cache, Tokens: cells.Tokens, Overhead: cells.Overhead, Updated: fmtTime(updated), UpdatedISO: updated.UTC().Format(time.RFC3339), Live: s.Live}
}

func sessionHead(s *inspect.Session, permalink string) views.SessionHead {
	started := time.Unix(0, s.StartedUnixNS)
	dash := func(v string) string {
		if v == "" {
			return "–"
		}
		return v
	}
	return views.SessionHead{ID: s.ID, Key: s.Key, Transport: transportLabel(s.Transport), Live: s.Live,
		Started: fmtTime(started), StartedISO: started.UTC().Format(time.RFC3339),
		UserAgent: dash(s.Client.UserAgent), Originator: dash(s.Client.Originator), Beta: dash(s.Client.Beta),
		ExportHref: "/api/sessions/" + s.ID + "/export", Permalink: permalink, HTTP: s.Transport != inspect.TransportWebSocket,
		WorkloadHref: "/api/sessions/" + s.ID + "/workload", RaceConfig: raceThisSession, CorpusHref: "/corpus?session=" + url.QueryEscape(s.ID), Legend: sessionStages}
}
