package web

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"agentloop/apistack"
	"agentloop/docs"
	"agentloop/rollout"
	"agentloop/views"

	"github.com/labstack/echo/v4"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// sensitivityHeading is the docs/stack.md section whose table the page
// also draws as a chart: first column a stack parameter, then one column
// per factor (×¼ … ×4), each cell the headline's saving ("41%").
const sensitivityHeading = "Sensitivity"

// stackDoc is docs/stack.md rendered once: the file is embedded, so it
// cannot change while the server runs.
var stackDoc = sync.OnceValues(func() (string, error) { return renderStackDoc(docs.Stack()) })

// stackDocPage is /docs/stack: docs/stack.md itself, in the site's layout,
// with the sensitivity table drawn as a chart beside it.
func (p *Playground) stackDocPage(c echo.Context) error {
	html, err := stackDoc()
	if err != nil {
		p.log.Error("render docs/stack.md", "err", err)
		return p.problem(c, http.StatusInternalServerError, "Could not render the page", "The server could not render docs/stack.md.")
	}
	return render(c, http.StatusOK, views.StackDocPage(p.page("The modelled API stack", "docs"), html))
}

// renderStackDoc renders the Markdown (CommonMark with GFM tables) with an
// id on every heading, an anchor for each hosted preset (the headline links
// to /docs/stack#PRESET), and the sensitivity chart after its table, drawn
// from the table itself.
func renderStackDoc(src []byte) (string, error) {
	md := goldmark.New(goldmark.WithExtensions(extension.Table), goldmark.WithParserOptions(parser.WithAutoHeadingID()))
	doc := md.Parser().Parse(text.NewReader(src))
	anchorPresets(doc, src)
	chart, table := sensitivityChart(doc, src)
	if table != nil {
		table.SetAttributeString("id", []byte("sensitivity-table"))
	}
	var buf bytes.Buffer
	if err := md.Renderer().Render(&buf, src, doc); err != nil {
		return "", err
	}
	out := wrapTables(buf.String())
	if chart != nil {
		var cb bytes.Buffer
		if err := views.SensitivityChartView(*chart).Render(context.Background(), &cb); err != nil {
			return "", err
		}
		at := strings.Index(out, `id="sensitivity-table"`)
		if end := strings.Index(out[at:], "</table>"); at >= 0 && end >= 0 {
			cut := at + end + len("</table>")
			out = out[:cut] + "\n" + cb.String() + out[cut:]
		}
	}
	return out, nil
}

// wrapTables puts each table in a keyboard-scrollable region, as the
// site's own tables are, so that a wide one scrolls on a phone by itself.
func wrapTables(html string) string {
	var b strings.Builder
	n := 0
	for {
		i := strings.Index(html, "<table")
		if i < 0 {
			b.WriteString(html)
			break
		}
		n++
		b.WriteString(html[:i])
		fmt.Fprintf(&b, `<div class="table-wrap" tabindex="0" role="region" aria-label="Table %d of the page">`, n)
		html = html[i:]
		j := strings.Index(html, "</table>")
		if j < 0 {
			b.WriteString(html)
			break
		}
		b.WriteString(html[:j+len("</table>")] + "</div>")
		html = html[j+len("</table>"):]
	}
	return b.String()
}

// nodeText is the plain text of a node's inline content.
func nodeText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

// presetWord finds a preset's name as a whole word (not "hosted" inside
// "hosted-plain").
func presetWord(name string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(name) + `($|[^\w-])`)
}

// anchorPresets gives each hosted preset an anchor: the first heading
// that names it, or else the first table row whose first cell is its name
// (the presets table), or else the first list item that names it, gets the
// preset's name as its id.
func anchorPresets(doc ast.Node, src []byte) {
	used := map[string]bool{}
	var headings, rows, items []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.(type) {
		case *ast.Heading:
			headings = append(headings, n)
			if id, ok := n.AttributeString("id"); ok {
				used[string(id.([]byte))] = true
			}
		case *ast.ListItem:
			items = append(items, n)
		case *extast.TableRow:
			rows = append(rows, n)
		}
		return ast.WalkContinue, nil
	})
	for _, r := range apistack.HostedReadings {
		name := r.Preset.Preset
		if used[name] {
			continue
		}
		re := presetWord(name)
		for _, n := range slices.Concat(headings, rows, items) {
			if _, taken := n.AttributeString("data-preset"); taken {
				continue
			}
			text := nodeText(n, src)
			if _, row := n.(*extast.TableRow); row {
				text = nodeText(n.FirstChild(), src)
				if text != name {
					continue
				}
			}
			if re.MatchString(text) {
				n.SetAttributeString("id", []byte(name))
				n.SetAttributeString("data-preset", []byte(name))
				used[name] = true
				break
			}
		}
	}
}

// sensitivityChart reads the table under the "## Sensitivity" heading into
// a chart: one line per parameter, the saving at each factor.
func sensitivityChart(doc ast.Node, src []byte) (*views.SensitivityChart, ast.Node) {
	var table ast.Node
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok || h.Level != 2 || nodeText(h, src) != sensitivityHeading {
			continue
		}
		for m := n.NextSibling(); m != nil; m = m.NextSibling() {
			if _, ok := m.(*ast.Heading); ok {
				break
			}
			if _, ok := m.(*extast.Table); ok {
				table = m
				break
			}
		}
		break
	}
	if table == nil {
		return nil, nil
	}
	var rows [][]string
	for r := table.FirstChild(); r != nil; r = r.NextSibling() {
		var cells []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, nodeText(c, src))
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 || len(rows[0]) < 3 {
		return nil, nil
	}
	ch := &views.SensitivityChart{Factors: rows[0][1:]}
	for _, row := range rows[1:] {
		line := views.SensitivityLine{Name: strings.Trim(row[0], "`")}
		for i := 1; i < len(row) && i <= len(ch.Factors); i++ {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(row[i]), "%")), 64)
			if err != nil {
				continue
			}
			line.Points = append(line.Points, views.SensitivityPoint{Factor: ch.Factors[i-1], Index: i - 1, Saved: v})
		}
		if len(line.Points) > 0 {
			ch.Lines = append(ch.Lines, line)
		}
	}
	if len(ch.Lines) == 0 {
		return nil, nil
	}
	layoutSensitivity(ch)
	ch.Together = together(ch.Lines)
	return ch, table
}

// together says which lines have the same saving at every factor, so lie
// on one another: "a, b and c lie on one another (47% at every factor)".
func together(lines []views.SensitivityLine) string {
	key := func(l views.SensitivityLine) string {
		var b strings.Builder
		for _, p := range l.Points {
			fmt.Fprintf(&b, "%d:%g ", p.Index, p.Saved)
		}
		return b.String()
	}
	var groups [][]views.SensitivityLine
	for _, l := range lines {
		i := slices.IndexFunc(groups, func(g []views.SensitivityLine) bool { return key(g[0]) == key(l) })
		if i < 0 {
			groups = append(groups, nil)
			i = len(groups) - 1
		}
		groups[i] = append(groups[i], l)
	}
	var out []string
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		names := make([]string, len(g))
		for i, l := range g {
			names[i] = l.Name
		}
		s := andList(names) + " lie on one another"
		if flat := slices.IndexFunc(g[0].Points, func(p views.SensitivityPoint) bool { return p.Saved != g[0].Points[0].Saved }) < 0; flat {
			s += " (" + strconv.FormatFloat(g[0].Points[0].Saved, 'f', -1, 64) + "% at every factor)"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "; ") + "."
}

// The sensitivity chart's drawing area, in SVG units: small enough that
// its 14-unit labels stay readable when a phone scales it down, with room
// on the right for each parameter's name at its line's end.
var sensitivityBox = chartBox{w: 480, h: 300, left: 58, right: 184, top: 14, bottom: 52}

// layoutSensitivity places the points: the factors evenly, the saving (in
// %) from the lowest to the highest point, rounded out to tens; each line
// gets a colour and dash of its own and its name at its right end.
func layoutSensitivity(ch *views.SensitivityChart) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range ch.Lines {
		for _, p := range l.Points {
			lo, hi = math.Min(lo, p.Saved), math.Max(hi, p.Saved)
		}
	}
	lo, hi = math.Floor(lo/10)*10, math.Ceil(hi/10)*10
	if hi == lo {
		hi = lo + 10
	}
	frame, x, y := sensitivityBox.frame(lo, hi, 10, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + "%" })
	n := float64(max(len(ch.Factors)-1, 1))
	for i, f := range ch.Factors {
		frame.XTicks = append(frame.XTicks, views.ChartTick{At: x(float64(i) / n), Label: f})
	}
	frame.XTitle = "each parameter scaled by (× its preset value)"
	frame.YTitle = rollout.LaneLabel(rollout.LaneWS) + "'s saving (%)"
	ch.ChartFrame = frame
	labels := make([]*views.EndLabel, len(ch.Lines))
	for i := range ch.Lines {
		l := &ch.Lines[i]
		l.Class = fmt.Sprintf("series-%d", i%chartSeries)
		xs, ys := make([]float64, len(l.Points)), make([]float64, len(l.Points))
		for j := range l.Points {
			p := &l.Points[j]
			p.X, p.Y = x(float64(p.Index)/n), y(p.Saved)
			xs[j], ys[j] = p.X, p.Y
		}
		l.Path = polyline(xs, ys)
		last := l.Points[len(l.Points)-1]
		l.EndLabel = views.EndLabel{Label: l.Name, EndX: last.X, EndY: last.Y}
		labels[i] = &l.EndLabel
	}
	endLabels(labels, frame.X1+endLabelIndent, frame.Y0, frame.Y1)
}
