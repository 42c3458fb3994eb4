package scenario

import (
	"strings"
	"text/template"
)

// parseArchive reads the txtar format the embedded repositories use: a line
// "-- path --" starts each file. Text before the first marker is a comment.
func parseArchive(data string) map[string]string {
	files := map[string]string{}
	name := ""
	var b strings.Builder
	flush := func() {
		if name != "" {
			files[name] = b.String()
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(data, "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			flush()
			name = strings.TrimSpace(trimmed[3 : len(trimmed)-3])
			continue
		}
		if name != "" {
			b.WriteString(line)
		}
	}
	flush()
	return files
}

// archiveRenderer returns the renderer of a templates archive: it runs the
// template named name (with funcs, if any) on data and ends the output with
// exactly one newline. The embedded templates are part of the binary, so a
// broken one panics.
func archiveRenderer(archive string, funcs template.FuncMap) func(name string, data any) string {
	tmpls := parseArchive(archive)
	return func(name string, data any) string {
		t := template.Must(template.New(name).Funcs(funcs).Parse(tmpls[name]))
		var b strings.Builder
		if err := t.Execute(&b, data); err != nil {
			panic("scenario: template " + name + ": " + err.Error())
		}
		return strings.TrimRight(b.String(), "\n") + "\n"
	}
}
