package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/corpus"
	"agentloop/store"
	"agentloop/workload"
)

// TestCorpusPage: /corpus shows the reference run's headline, built from
// its sessions, both charts, a row and a race button per session, and
// every source's attribution; another speed changes the headline, and a
// speed it was not re-costed at is refused.
func TestCorpusPage(t *testing.T) {
	ref, err := corpus.Reference()
	if err != nil {
		t.Fatal(err)
	}
	reading := apistack.HostedReadings[0].Reading
	headline := func(tps int) string {
		var sv []float64
		for _, s := range ref.Sessions {
			sv = append(sv, s.Saving[reading][tps])
		}
		slices.Sort(sv)
		return fmt.Sprintf("On %d recorded sessions of ", len(sv)) + "%s" +
			fmt.Sprintf(", WebSocket mode would finish median %s sooner than optimized HTTP (p10 %s, p90 %s) under the %s reading, at %d tokens/s.",
				pctOf(corpus.Percentile(sv, .5)), pctOf(corpus.Percentile(sv, .1)), pctOf(corpus.Percentile(sv, .9)), reading, tps)
	}
	tp := newTestPlayground(t)
	rec := tp.do(http.MethodGet, "/corpus", "", nil)
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("/corpus: %d %s", rec.Code, body)
	}
	head, tail, ok := strings.Cut(headline(corpusSpeed), "%s")
	if !ok || !strings.Contains(body, head) || !strings.Contains(body, tail) {
		t.Errorf("/corpus lacks the headline %q…%q", head, tail)
	}
	for _, want := range []string{ref.Date, ref.Command, `href="/corpus"`, `data-testid="corpus-distribution"`, `data-testid="corpus-scatter"`,
		">turns<", "share WebSocket mode saves against optimized HTTP", corpus.NoLicence, "MIT (its LICENSE)", "laude-institute/terminal-bench-leaderboard"} {
		if !strings.Contains(body, want) {
			t.Errorf("/corpus lacks %q", want)
		}
	}
	for _, rd := range apistack.HostedReadings {
		if !strings.Contains(body, `data-testid="corpus-cdf" data-reading="`+rd.Reading+`"`) {
			t.Errorf("/corpus has no distribution under the %s reading", rd.Reading)
		}
	}
	if n := strings.Count(body, `data-testid="corpus-session"`); n != len(ref.Sessions) {
		t.Errorf("%d session rows, want %d", n, len(ref.Sessions))
	}
	if n := strings.Count(body, `data-testid="corpus-dot"`); n != len(ref.Sessions) {
		t.Errorf("%d dots, want %d", n, len(ref.Sessions))
	}
	for _, s := range ref.Sessions {
		if !strings.Contains(body, `data-corpus-race data-workload="/api/corpus/`+s.File+`"`) {
			t.Errorf("%s has no race button", s.File)
		}
	}
	checkCSPSafe(t, body)

	slow := tp.do(http.MethodGet, "/corpus?tps=65", "", nil).Body.String()
	if _, tail, _ := strings.Cut(headline(65), "%s"); !strings.Contains(slow, tail) || !strings.Contains(slow, `<strong aria-current="page">65 tok/s`) {
		t.Errorf("/corpus?tps=65 lacks its headline %q", tail)
	}
	if rec := tp.do(http.MethodGet, "/corpus?tps=7", "", nil); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "re-costed at") {
		t.Errorf("/corpus?tps=7: %d, want 400 naming the speeds", rec.Code)
	}
}

// TestCorpusWorkload: /api/corpus/{file} serves a session's workload, and
// nothing else of the corpus.
func TestCorpusWorkload(t *testing.T) {
	ref, err := corpus.Reference()
	if err != nil {
		t.Fatal(err)
	}
	tp := newTestPlayground(t)
	s := ref.Sessions[0]
	rec := tp.do(http.MethodGet, "/api/corpus/"+s.File, "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", s.File, rec.Code, rec.Body.String())
	}
	w, err := workload.Parse(rec.Body.Bytes())
	if err != nil || len(w.Turns) != s.Turns {
		t.Errorf("%s: %v, turns %v, want %d", s.File, err, w, s.Turns)
	}
	for _, bad := range []string{"attribution.tsv", "reference.json", "swe-agent/nope.json", "../go.mod"} {
		if rec := tp.do(http.MethodGet, "/api/corpus/"+bad, "", nil); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"not_found"`) {
			t.Errorf("/api/corpus/%s: %d %s, want a 404", bad, rec.Code, rec.Body.String())
		}
	}
}

// TestCorpusCharts: the CDF rises step by step to every session, and
// places a larger saving further right; the scatter places more turns
// right and a larger saving higher.
func TestCorpusCharts(t *testing.T) {
	res := func(file string, turns int, saving float64) corpus.SessionResult {
		m := map[string]map[int]float64{}
		for _, rd := range apistack.HostedReadings {
			m[rd.Reading] = map[int]float64{1000: saving}
		}
		return corpus.SessionResult{File: file, Turns: turns, Saving: m}
	}
	results := []corpus.SessionResult{res("a", 5, 0.01), res("b", 30, 0.12), res("c", 12, -0.02)}
	cdf := corpusCDF(results, 1000)
	if len(cdf.Lines) != len(apistack.HostedReadings) {
		t.Fatalf("lines %+v", cdf.Lines)
	}
	var xs, ys []float64
	for _, pt := range strings.Fields(cdf.Lines[0].Path) {
		var x, y float64
		if _, err := fmt.Sscanf(pt, "%f,%f", &x, &y); err != nil {
			t.Fatal(err)
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	if len(xs) != 2*len(results) || !slices.IsSorted(xs) || ys[0] != cdf.Y1 || ys[len(ys)-1] != cdf.Y0 {
		t.Errorf("the CDF %v,%v does not rise from the bottom to the top in saving order (plot %v to %v)", xs, ys, cdf.Y1, cdf.Y0)
	}
	for i := 1; i < len(ys); i++ {
		if ys[i] > ys[i-1] {
			t.Errorf("the CDF falls at %d: %v", i, ys)
		}
	}
	sc := corpusScatter(results, apistack.HostedReadings[0].Reading, 1000, 0)
	if len(sc.Dots) != 3 || !(sc.Dots[1].X > sc.Dots[2].X && sc.Dots[2].X > sc.Dots[0].X) || !(sc.Dots[1].Y < sc.Dots[0].Y && sc.Dots[0].Y < sc.Dots[2].Y) {
		t.Errorf("scatter %+v", sc.Dots)
	}
	if sc.XTitle == "" || sc.YTitle == "" || cdf.XTitle == "" || cdf.YTitle == "" {
		t.Error("an axis has no title")
	}
}

// oneWorkload is a store of one workload.
type oneWorkload struct{ store.Workload }

func (o oneWorkload) GetWorkload(_ context.Context, id string) (*store.Workload, error) {
	if id != o.ID {
		return nil, store.ErrNotFound
	}
	return &o.Workload, nil
}
func (oneWorkload) SaveWorkload(context.Context, *store.Workload) error { return nil }
func (oneWorkload) ListWorkloads(context.Context, int) ([]store.Workload, error) {
	return nil, nil
}
func (oneWorkload) DeleteWorkload(context.Context, string) error { return nil }

// TestCorpusPlacesYourWorkload: ?workload= places a stored workload among
// the corpus by its turns, on the scatter too, with a button to race it;
// an unknown one is a 404, and a workload and a session at once a 400.
func TestCorpusPlacesYourWorkload(t *testing.T) {
	ref, err := corpus.Reference()
	if err != nil {
		t.Fatal(err)
	}
	longest := ref.Sessions[0]
	for _, s := range ref.Sessions {
		if s.Turns > longest.Turns {
			longest = s
		}
	}
	b, err := corpus.Workload(longest.File)
	if err != nil {
		t.Fatal(err)
	}
	tp := newTestPlayground(t, func(d *Deps) { d.Workloads = oneWorkload{store.Workload{ID: "wl_mine", JSON: b}} })
	rec := tp.do(http.MethodGet, "/corpus?workload=wl_mine", "", nil)
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, body)
	}
	n := 0
	for _, s := range ref.Sessions {
		if s.Turns < longest.Turns {
			n++
		}
	}
	if n == len(ref.Sessions)-1 { // the longest alone: at the top
		if want := fmt.Sprintf("Your workload wl_mine sits at the %s percentile of turns (%d turns;", ordinal(int(math.Round(100*(float64(n)+0.5)/float64(len(ref.Sessions))))), longest.Turns); !strings.Contains(body, want) {
			t.Errorf("/corpus?workload= lacks %q", want)
		}
	}
	for _, want := range []string{`data-testid="corpus-yours"`, `data-testid="corpus-yours-marker"`, fmt.Sprintf("yours: %d turns", longest.Turns), `data-workload="/api/workloads/wl_mine"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/corpus?workload= lacks %q", want)
		}
	}
	checkCSPSafe(t, body)
	if rec := tp.do(http.MethodGet, "/corpus?workload=wl_other", "", nil); rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), `data-testid="corpus-headline"`) {
		t.Errorf("an unknown workload: %d, want only a 404 page", rec.Code)
	}
	if rec := tp.do(http.MethodGet, "/corpus?workload=wl_mine&session=s", "", nil); rec.Code != http.StatusBadRequest {
		t.Errorf("a workload and a session: %d, want 400", rec.Code)
	}
	if strings.Contains(tp.do(http.MethodGet, "/corpus", "", nil).Body.String(), `data-testid="corpus-yours"`) {
		t.Error("/corpus places a workload nobody named")
	}
}

func TestPercentileOf(t *testing.T) {
	sorted := []float64{1, 2, 3, 3, 5}
	for _, c := range []struct {
		v    float64
		want int
	}{{0, 0}, {1, 10}, {3, 60}, {4, 80}, {9, 100}} {
		if got := percentileOf(sorted, c.v); got != c.want {
			t.Errorf("percentileOf(%v) = %d, want %d", c.v, got, c.want)
		}
	}
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 70: "70th", 100: "100th", 101: "101st"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestCorpusPlacesAnInspectedSession: the inspector's session page links
// to /corpus?session=, which places the session; an unknown one is a 404.
func TestCorpusPlacesAnInspectedSession(t *testing.T) {
	tp, in := newInspectPlayground(t)
	for i := range 2 {
		tr := observedTrace("ws:conn_1", "websocket", int64(i)*1e9)
		tr.Shape = &api.Shape{InstructionsTokens: 50, Generated: true, New: []api.ShapeItem{{Kind: "user_message", Tokens: 40}}}
		in.ObserveTrace(tr)
	}
	in.Close(context.Background())
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(tp.do(http.MethodGet, "/api/sessions", "", nil).Body.Bytes(), &list); err != nil || len(list.Data) != 1 {
		t.Fatalf("sessions %+v (%v)", list, err)
	}
	id := list.Data[0].ID
	if body := tp.do(http.MethodGet, "/inspect/"+id, "", nil).Body.String(); !strings.Contains(body, `href="/corpus?session=`+id+`"`) {
		t.Errorf("/inspect/%s does not link to the corpus", id)
	}
	rec := tp.do(http.MethodGet, "/corpus?session="+id, "", nil)
	if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, "Your session "+id+" sits at the ") || !strings.Contains(body, "percentile of turns (2 turns;") {
		t.Errorf("/corpus?session=%s: %d %s", id, rec.Code, body)
	}
	if rec := tp.do(http.MethodGet, "/corpus?session=sess_none", "", nil); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown session: %d, want 404", rec.Code)
	}
}
