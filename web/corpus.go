package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/corpus"
	"agentloop/inspect"
	"agentloop/store"
	"agentloop/views"
	"agentloop/workload"

	"github.com/labstack/echo/v4"
)

// corpusSpeed is the speed /corpus shows first: a fast model's, where the
// transport's share of a session is largest that the sweep draws.
const corpusSpeed = 1000

// loadCorpus reads the corpus and its reference run once.
var loadCorpus = sync.OnceValues(func() (corpusData, error) {
	sessions, err := corpus.Load()
	if err != nil {
		return corpusData{}, err
	}
	ref, err := corpus.Reference()
	if err != nil {
		return corpusData{}, err
	}
	return corpusData{sessions: sessions, ref: ref}, nil
})

type corpusData struct {
	sessions []corpus.Session
	ref      *corpus.Report
}

// corpusPage is /corpus: the reference run of agentloop bench corpus the
// binary carries (corpus/reference.json), at the speed ?tps= picks: its
// headline, the saving's distribution under each reading, the saving
// against turns, each session with a button to race it, and where each
// session was recorded.
func (p *Playground) corpusPage(c echo.Context) error {
	d, err := loadCorpus()
	if err != nil {
		p.log.Error("corpus", "err", err)
		return p.problem(c, http.StatusInternalServerError, "Corpus unreadable", "The corpus this binary carries could not be read.")
	}
	speeds := d.ref.Speeds()
	tps := corpusSpeed
	if !slices.Contains(speeds, tps) && len(speeds) > 0 {
		tps = speeds[len(speeds)-1]
	}
	if q := c.QueryParam("tps"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || !slices.Contains(speeds, n) {
			return p.problem(c, http.StatusBadRequest, "No such speed", fmt.Sprintf("The reference run was re-costed at %s tokens/s, not at %q.", joinSpeeds(speeds), q))
		}
		tps = n
	}
	yours, written, err := p.yourWorkload(c)
	if written || err != nil {
		return err
	}
	v, err := corpusView(d.sessions, d.ref, tps, yours)
	if err != nil {
		p.log.Error("corpus", "err", err)
		return p.problem(c, http.StatusInternalServerError, "Corpus unreadable", "The corpus and its reference run disagree: "+err.Error()+".")
	}
	return render(c, http.StatusOK, views.CorpusPage(p.page("Corpus", "corpus", "js/corpus.js"), v))
}

// corpusWorkload is GET /api/corpus/{file}: a session of the corpus as a
// workload (docs/workload.md), what /corpus races.
func (p *Playground) corpusWorkload(c echo.Context) error {
	file := c.Param("*")
	b, err := corpus.Workload(file)
	if err != nil {
		return api.Errorf(http.StatusNotFound, "", api.CodeNotFound, "The corpus holds no session '%s'.", file)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// yours is a workload placed among the corpus, and where it is served
// (for its race button).
type yours struct {
	w    *workload.Workload
	name string
	href string
}

// yourWorkload is the workload /corpus places among the corpus: a stored
// workload (?workload=, from an upload or a race) or an inspected session
// (?session=); nil when the page names none. When it cannot be read, the
// answer is written (written is true): a problem page.
func (p *Playground) yourWorkload(c echo.Context) (y *yours, written bool, err error) {
	ctx := c.Request().Context()
	switch id, sid := c.QueryParam("workload"), c.QueryParam("session"); {
	case id != "" && sid != "":
		return nil, true, p.problem(c, http.StatusBadRequest, "One workload", "Place a workload or a session, not both.")
	case id != "":
		if p.workloads == nil {
			return nil, true, p.problem(c, http.StatusNotFound, "Workload not found", "This server stores no workloads.")
		}
		sw, err := p.workloads.GetWorkload(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, true, p.problem(c, http.StatusNotFound, "Workload not found", "There is no workload '"+id+"'.")
		}
		if err != nil {
			return nil, true, p.storeProblem(c, err, "Could not read the workload", "The workload could not be read")
		}
		w, err := workload.Parse(sw.JSON)
		if err != nil {
			return nil, true, p.problem(c, http.StatusUnprocessableEntity, "Workload unreadable", "The stored workload '"+id+"' could not be read: "+err.Error()+".")
		}
		return &yours{w: w, name: "Your workload " + id, href: "/api/workloads/" + id}, false, nil
	case sid != "":
		if p.inspector == nil {
			return nil, true, p.problem(c, http.StatusNotFound, "Session not found", "This server inspects no sessions.")
		}
		s, err := p.inspector.Session(ctx, sid)
		if errors.Is(err, store.ErrNotFound) {
			return nil, true, p.problem(c, http.StatusNotFound, "Session not found", "There is no session '"+sid+"'. It may have been swept by retention.")
		}
		if err != nil {
			return nil, true, p.storeProblem(c, err, "Could not read the session", "The session could not be read")
		}
		w, err := inspect.Workload(s)
		if err != nil {
			return nil, true, p.problem(c, http.StatusUnprocessableEntity, "Session not replayable", "Session '"+sid+"' cannot be read as a workload: "+strings.TrimPrefix(err.Error(), "workload: ")+".")
		}
		return &yours{w: w, name: "Your session " + sid, href: "/api/sessions/" + sid + "/workload"}, false, nil
	}
	return nil, false, nil
}

// percentileOf is where v stands among sorted values, from 0 to 100: the
// share below it, and half of those equal to it.
func percentileOf(sorted []float64, v float64) int {
	if len(sorted) == 0 {
		return 0
	}
	below, equal := 0, 0
	for _, s := range sorted {
		switch {
		case s < v:
			below++
		case s == v:
			equal++
		}
	}
	return int(math.Round(100 * (float64(below) + float64(equal)/2) / float64(len(sorted))))
}

// ordinal is 1st, 2nd, 3rd, 4th, 11th, 21st…
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// yoursView places y among the corpus's sessions by turns and final
// context.
func yoursView(y *yours, results []corpus.SessionResult) *views.CorpusYours {
	var turns, ctx []float64
	for _, r := range results {
		turns = append(turns, float64(r.Turns))
		ctx = append(ctx, float64(r.FinalContext))
	}
	slices.Sort(turns)
	slices.Sort(ctx)
	n, fc := len(y.w.Turns), corpus.FinalContext(y.w)
	return &views.CorpusYours{Turns: n, WorkloadHref: y.href,
		Sentence: fmt.Sprintf("%s sits at the %s percentile of turns (%d turns; the corpus's median is %.0f) and the %s of final context (%d tokens; the median is %.0f).",
			y.name, ordinal(percentileOf(turns, float64(n))), n, corpus.Percentile(turns, .5), ordinal(percentileOf(ctx, float64(fc))), fc, corpus.Percentile(ctx, .5))}
}

func joinSpeeds(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// corpusView builds the page's model at speed tps.
func corpusView(sessions []corpus.Session, ref *corpus.Report, tps int, y *yours) (views.Corpus, error) {
	byFile := map[string]corpus.Session{}
	for _, s := range sessions {
		byFile[s.File] = s
	}
	headline := apistack.HostedReadings[0].Reading
	v := views.Corpus{Date: ref.Date, Command: ref.Command, Machine: ref.Machine, TPS: tps, RaceConfig: raceThisSession}
	for _, s := range ref.Speeds() {
		v.Speeds = append(v.Speeds, views.CorpusSpeed{TPS: s, Href: "/corpus?tps=" + strconv.Itoa(s), Current: s == tps})
	}
	var agents []string
	for _, r := range ref.Sessions {
		s, ok := byFile[r.File]
		if !ok {
			return views.Corpus{}, fmt.Errorf("the reference names %s, which the corpus does not hold", r.File)
		}
		if _, ok := r.Saving[headline][tps]; !ok {
			return views.Corpus{}, fmt.Errorf("%s has no saving at %d tok/s under %s", r.File, tps, headline)
		}
		if !slices.Contains(agents, s.Attribution.Agent) {
			agents = append(agents, s.Attribution.Agent)
		}
		v.Rows = append(v.Rows, views.CorpusRow{File: r.File, Agent: s.Attribution.Agent, Turns: r.Turns, FinalContext: r.FinalContext,
			Saving: pctOf(r.Saving[headline][tps]), WorkloadHref: "/api/corpus/" + r.File})
	}
	sv := savingsAt(ref.Sessions, headline, tps)
	v.Headline = fmt.Sprintf("On %d recorded sessions of %s, WebSocket mode would finish median %s sooner than optimized HTTP (p10 %s, p90 %s) under the %s reading, at %d tokens/s.",
		len(sv), strings.Join(agents, " and "), pctOf(corpus.Percentile(sv, .5)), pctOf(corpus.Percentile(sv, .1)), pctOf(corpus.Percentile(sv, .9)), headline, tps)
	v.Distribution = corpusCDF(ref.Sessions, tps)
	yourTurns := 0
	if y != nil {
		v.Yours = yoursView(y, ref.Sessions)
		yourTurns = v.Yours.Turns
	}
	v.Scatter = corpusScatter(ref.Sessions, headline, tps, yourTurns)
	v.Sources = corpusSources(sessions)
	return v, nil
}

// savingsAt is every session's saving under reading at tps, sorted.
func savingsAt(results []corpus.SessionResult, reading string, tps int) []float64 {
	v := make([]float64, 0, len(results))
	for _, r := range results {
		v = append(v, r.Saving[reading][tps])
	}
	slices.Sort(v)
	return v
}

// pctOf is a share as a whole percentage, with a true minus sign.
func pctOf(v float64) string {
	s := strconv.FormatFloat(math.Round(100*v), 'f', 0, 64)
	if s == "-0" {
		s = "0"
	}
	return strings.Replace(s, "-", "−", 1) + "%"
}

// corpusBox is the corpus's charts' drawing area, in SVG units, with room
// for both axes' titles.
var corpusBox = chartBox{w: 480, h: 300, left: 62, right: 14, top: 14, bottom: 50}

// savingRange is the saving axis's ends, in steps of 5%, with 0 in it.
func savingRange(results []corpus.SessionResult, tps int) (lo, hi float64) {
	lo, hi = 0, 0.05
	for _, r := range results {
		for _, rd := range apistack.HostedReadings {
			v := r.Saving[rd.Reading][tps]
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return math.Floor(lo*20) / 20, math.Ceil(hi*20) / 20
}

// corpusCDF draws the share of sessions that save at most each saving,
// one line per reading: the saving on x, the sessions on y.
func corpusCDF(results []corpus.SessionResult, tps int) views.CorpusChart {
	lo, hi := savingRange(results, tps)
	frame, xAt, y := corpusBox.frame(0, 1, 0.2, func(v float64) string { return pctOf(v) })
	x := func(v float64) float64 { return xAt((v - lo) / (hi - lo)) }
	frame.XTicks = savingTicks(lo, hi, x)
	frame.XTitle, frame.YTitle = "share WebSocket mode saves against optimized HTTP", "sessions saving at most that"
	ch := views.CorpusChart{ChartFrame: frame}
	for i, rd := range apistack.HostedReadings {
		sv := savingsAt(results, rd.Reading, tps)
		var xs, ys []float64
		n := float64(len(sv))
		for k, s := range sv { // a step at each session
			xs = append(xs, x(s), x(s))
			ys = append(ys, y(float64(k)/n), y(float64(k+1)/n))
		}
		ch.Lines = append(ch.Lines, views.CorpusLine{Name: rd.Reading + " reading (" + rd.Preset.Preset + ")", Reading: rd.Reading,
			Class: "series-" + strconv.Itoa(i), Path: polyline(xs, ys),
			Median: pctOf(corpus.Percentile(sv, .5)), P10: pctOf(corpus.Percentile(sv, .1)), P90: pctOf(corpus.Percentile(sv, .9))})
	}
	return ch
}

// savingTicks labels the saving axis every 5%, or every 10% when it is
// wide.
func savingTicks(lo, hi float64, x func(float64) float64) []views.ChartTick {
	step := 0.05
	if hi-lo > 0.3 {
		step = 0.1
	}
	var out []views.ChartTick
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+1e-9; v += step {
		out = append(out, views.ChartTick{At: x(v), Label: pctOf(v)})
	}
	return out
}

// corpusScatter draws each session's saving under reading against its
// turns, and a line at yourTurns when it is not 0.
func corpusScatter(results []corpus.SessionResult, reading string, tps int, yourTurns int) views.CorpusChart {
	maxTurns := max(10, yourTurns)
	lo, hi := 0.0, 0.05
	for _, r := range results {
		maxTurns = max(maxTurns, r.Turns)
		lo, hi = math.Min(lo, r.Saving[reading][tps]), math.Max(hi, r.Saving[reading][tps])
	}
	unit := 0.05
	if hi-lo > 0.3 { // labels on round tens when the axis is wide
		unit = 0.1
	}
	lo, hi = math.Floor(lo/unit)*unit, math.Ceil(hi/unit)*unit
	top := float64((maxTurns + 9) / 10 * 10)
	frame, xAt, y := corpusBox.frame(lo, hi, unit, pctOf)
	x := func(turns float64) float64 { return xAt(turns / top) }
	step := 10.0
	if top > 60 {
		step = 20
	}
	for t := 0.0; t <= top; t += step {
		frame.XTicks = append(frame.XTicks, views.ChartTick{At: x(t), Label: strconv.Itoa(int(t))})
	}
	frame.XTitle, frame.YTitle = "turns", "saved against optimized HTTP"
	ch := views.CorpusChart{ChartFrame: frame}
	if yourTurns > 0 {
		ch.Marker = &views.CorpusMarker{X: x(float64(yourTurns)), Label: "yours: " + strconv.Itoa(yourTurns) + " turns"}
	}
	for _, r := range results {
		v := r.Saving[reading][tps]
		ch.Dots = append(ch.Dots, views.CorpusDot{X: x(float64(r.Turns)), Y: y(v),
			Title: fmt.Sprintf("%s: %d turns, %s saved", r.File, r.Turns, pctOf(v))})
	}
	return ch
}

// corpusSources groups the sessions by where they were recorded.
func corpusSources(sessions []corpus.Session) []views.CorpusSource {
	var out []views.CorpusSource
	for _, s := range sessions {
		a := s.Attribution
		i := slices.IndexFunc(out, func(o views.CorpusSource) bool {
			return o.Repository == a.Repository && o.Commit == a.Commit && o.Agent == a.Agent && o.Model == a.Model && o.Licence == a.Licence
		})
		if i < 0 {
			out = append(out, views.CorpusSource{Repository: a.Repository, Commit: a.Commit, Agent: a.Agent, Model: a.Model, Licence: a.Licence,
				Href: "https://github.com/" + a.Repository + "/tree/" + a.Commit})
			i = len(out) - 1
		}
		out[i].Sessions++
	}
	return out
}
