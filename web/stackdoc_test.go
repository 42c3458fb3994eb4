package web

import (
	"cmp"
	"io/fs"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"agentloop/apistack"
	"agentloop/docs"
	"agentloop/static"
	"agentloop/views"
)

// TestStackDocRendersTheMarkdown: /docs/stack is docs/stack.md rendered,
// its tables as tables, in the site's layout.
func TestStackDocRendersTheMarkdown(t *testing.T) {
	tp := newTestPlayground(t)
	rec := tp.do(http.MethodGet, "/docs/stack", "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	body := rec.Body.String()
	for _, want := range []string{`data-testid="stack-doc"`, `<h1 id="the-modelled-api-stack">The modelled API stack</h1>`, "<table>", "<td><code>stack_classify</code></td>", `<tr id="hosted-post-sprint" data-preset="hosted-post-sprint">`, `id="hosted-plain"`, `id="hosted"`, `data-testid="sensitivity-chart"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestSensitivityChartIsDrawnFromTheTable: the chart's lines and points
// are the sensitivity table's rows and cells; each preset gets its anchor.
func TestSensitivityChartIsDrawnFromTheTable(t *testing.T) {
	src, err := os.ReadFile("testdata/stack_sensitivity.md")
	if err != nil {
		t.Fatal(err)
	}
	html, err := renderStackDoc(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="sensitivity-table"`, `data-testid="sensitivity-chart"`, `data-param="classify_tps"`, `data-param="hop_ms"`,
		"<title>classify_tps ×¼: 55%</title>", "<title>hop_ms ×4: 42%</title>", ">×½</text>",
		`<li id="hosted-post-sprint" data-preset="hosted-post-sprint">`, `<tr id="hosted-plain" data-preset="hosted-plain">`, `<li id="hosted" data-preset="hosted">`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if c, tbl := strings.Index(html, "sensitivity-chart"), strings.Index(html, "sensitivity-table"); c < tbl {
		t.Error("the chart comes before its table")
	}
	if strings.Count(html, `data-testid="sensitivity-line"`) != 2 {
		t.Errorf("want one line per table row:\n%s", html)
	}
}

// TestStackDocRangesAreTheTable: docs/stack.md's table of ranges says
// what apistack.Params enforces: every parameter in one row, with its
// minimum, maximum, unit and whether 0 turns its work off. Editing either
// alone fails here.
func TestStackDocRangesAreTheTable(t *testing.T) {
	rows := stackDocRanges(t, string(docs.Stack()))
	for _, p := range apistack.Params {
		cell, ok := rows[p.Key]
		if !ok {
			t.Errorf("docs/stack.md's ranges lack %s", p.Key)
			continue
		}
		delete(rows, p.Key)
		m := rangeCell.FindStringSubmatch(cell)
		if m == nil {
			t.Errorf("%s: cannot read the range %q", p.Key, cell)
			continue
		}
		if lo, hi := docNumber(t, m[1]), docNumber(t, m[2]); lo != p.Min || hi != p.Max {
			t.Errorf("%s: the doc says %g – %g, the table %g – %g", p.Key, lo, hi, p.Min, p.Max)
		}
		// A count of hops goes without its unit.
		if unit := strings.TrimSpace(m[3]); p.Unit != "hops" && unit != p.Unit {
			t.Errorf("%s: the doc's unit is %q, the table's %q", p.Key, unit, p.Unit)
		}
		if off := strings.Contains(cell, "or 0"); off != p.Off {
			t.Errorf("%s: the doc says 0 turns it off: %v, the table: %v", p.Key, off, p.Off)
		}
	}
	for k := range rows {
		t.Errorf("docs/stack.md gives a range for %s, which apistack.Params lacks", k)
	}
}

// rangeCell reads "20,000 – 10⁹ tok/s, or 0 (no classifier)".
var rangeCell = regexp.MustCompile(`^(10[⁰¹²³⁴⁵⁶⁷⁸⁹]+|[0-9,]+) – (10[⁰¹²³⁴⁵⁶⁷⁸⁹]+|[0-9,]+)([^,]*)`)

// stackDocRanges reads the rows of the table under "| parameter | range |":
// each parameter key in the first cell, with the second cell.
func stackDocRanges(t *testing.T, doc string) map[string]string {
	_, table, ok := strings.Cut(doc, "| parameter | range |")
	if !ok {
		t.Fatal("docs/stack.md has no table of ranges")
	}
	rows := map[string]string{}
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		for _, k := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(cells[1], -1) {
			rows[k[1]] = strings.TrimSpace(cells[2])
		}
	}
	return rows
}

// docNumber reads "10,000" or "10⁹".
func docNumber(t *testing.T, s string) float64 {
	if exp, ok := strings.CutPrefix(s, "10"); ok && exp != "" && !strings.ContainsAny(exp, "0123456789,") {
		n := 0
		for _, r := range exp {
			n = n*10 + slices.Index([]rune("⁰¹²³⁴⁵⁶⁷⁸⁹"), r)
		}
		return math.Pow(10, float64(n))
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// TestSensitivityLinesStandApart: on docs/stack.md's own chart, whose
// flat lines lie on top of each other, every line has a colour and a dash
// no other line has (app.css's .series-N), the legend repeats them, each
// line's name stands at its end apart from the others', and both axes are
// titled.
func TestSensitivityLinesStandApart(t *testing.T) {
	page, err := renderStackDoc(docs.Stack())
	if err != nil {
		t.Fatal(err)
	}
	_, chart, _ := strings.Cut(page, `data-testid="sensitivity-chart"`)
	chart, _, _ = strings.Cut(chart, "</figure>")
	css, err := fs.ReadFile(static.FS(), "css/app.css")
	if err != nil {
		t.Fatal(err)
	}
	style := map[string][2]string{} // class → colour, dash
	for _, m := range regexp.MustCompile(`\.(series-\d+) \{ --series: ([^;]+);(?: --dash: ([^;]+);)? \}`).FindAllStringSubmatch(string(css), -1) {
		style[m[1]] = [2]string{m[2], cmp.Or(m[3], "none")}
	}
	lines := regexp.MustCompile(`<g class="series (series-\d+)" data-testid="sensitivity-line" data-param="([^"]+)">`).FindAllStringSubmatch(chart, -1)
	if len(lines) < 7 {
		t.Fatalf("%d lines, want one per row of the table (8)", len(lines))
	}
	colours, dashes := map[string]string{}, map[string]string{}
	var ys []float64
	for _, l := range lines {
		class, param := l[1], l[2]
		st, ok := style[class]
		if !ok {
			t.Errorf("%s: app.css gives %s no colour", param, class)
			continue
		}
		if o, dup := colours[st[0]]; dup {
			t.Errorf("%s and %s share the colour %s", o, param, st[0])
		}
		if o, dup := dashes[st[1]]; dup {
			t.Errorf("%s and %s share the dash %s", o, param, st[1])
		}
		colours[st[0]], dashes[st[1]] = param, param
		if !strings.Contains(chart, `<svg class="swatch-dash `+class+`"`) {
			t.Errorf("%s: the legend has no %s swatch", param, class)
		}
		label := regexp.MustCompile(`<text class="end-label" x="[0-9.]+" y="([0-9.]+)">` + regexp.QuoteMeta(param) + `</text>`).FindStringSubmatch(chart)
		if label == nil {
			t.Errorf("%s is not named at its line's end", param)
			continue
		}
		y, _ := strconv.ParseFloat(label[1], 64)
		ys = append(ys, y)
	}
	slices.Sort(ys)
	for i := 1; i < len(ys); i++ {
		if ys[i]-ys[i-1] < 14 {
			t.Errorf("two end labels %.1f units apart (at %v), less than their 14-unit text", ys[i]-ys[i-1], ys)
		}
	}
	for _, want := range []string{">each parameter scaled by (× its preset value)</text>", `transform="rotate(-90)">WebSocket&#39;s saving (%)</text>`} {
		if !strings.Contains(chart, want) {
			t.Errorf("the chart lacks the axis title %q", want)
		}
	}
}

// TestTogetherNamesTheLinesOnOneAnother: lines with the same saving at
// every factor are named together, with their value when they are flat; a
// line alone is not named.
func TestTogetherNamesTheLinesOnOneAnother(t *testing.T) {
	line := func(name string, saved ...float64) views.SensitivityLine {
		l := views.SensitivityLine{Name: name}
		for i, v := range saved {
			l.Points = append(l.Points, views.SensitivityPoint{Index: i, Saved: v})
		}
		return l
	}
	for _, tc := range []struct {
		lines []views.SensitivityLine
		want  string
	}{
		{[]views.SensitivityLine{line("a", 47, 47), line("b", 48, 47), line("c", 47, 47), line("d", 47, 47)}, "a, c and d lie on one another (47% at every factor)."},
		{[]views.SensitivityLine{line("a", 40, 50), line("b", 40, 50), line("c", 1, 2), line("d", 1, 2)}, "a and b lie on one another; c and d lie on one another."},
		{[]views.SensitivityLine{line("a", 40, 50), line("b", 41, 50)}, ""},
	} {
		if got := together(tc.lines); got != tc.want {
			t.Errorf("together = %q, want %q", got, tc.want)
		}
	}
}
