package scenario

import "strings"

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
