package snippets_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"agentloop/app/apptest"
	"agentloop/docs/snippets"
)

// TestREADMEHasEverySnippet: the README shows each snippet exactly as
// /docs does (for the default address), so the two cannot drift apart.
func TestREADMEHasEverySnippet(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, name := range snippets.Names {
		if !strings.Contains(readme, "\n"+snippets.Raw(name)+"\n```") {
			t.Errorf("README.md does not contain docs/snippets/%s verbatim in a code block:\n%s", name, snippets.Raw(name))
		}
	}
}

// TestCurlSnippetWorks runs the curl snippet as written, against a live
// server's own address, and reads the stream to its end.
func TestCurlSnippetWorks(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	a := apptest.Start(t)
	script := snippets.For("curl.sh", a.URL(), "ws"+strings.TrimPrefix(a.URL(), "http"), snippets.DefaultKey)
	out, err := exec.CommandContext(t.Context(), "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("curl snippet: %v\n%s", err, out)
	}
	for _, want := range []string{"event: response.created", "event: response.output_text.delta", "event: response.completed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the curl snippet's output lacks %q:\n%s", want, out)
		}
	}
}

// TestForFillsTheServer: /docs shows the server's own addresses and key.
func TestForFillsTheServer(t *testing.T) {
	got := snippets.For("python.py", "http://example.test:9", "ws://example.test:9", "YOUR_KEY")
	for _, want := range []string{`base_url="http://example.test:9/v1"`, `websocket_base_url="ws://example.test:9/v1"`, `api_key="YOUR_KEY"`} {
		if !strings.Contains(got, want) {
			t.Errorf("python snippet lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "127.0.0.1") {
		t.Errorf("python snippet still names the default address:\n%s", got)
	}
}
