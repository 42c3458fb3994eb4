package web

import (
	"net/http"
	"os"
	"strings"
	"testing"
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
