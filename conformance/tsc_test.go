package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sdkDir is where scripts/sdk-setup.sh installs the openai npm package,
// zod, TypeScript and ws.
var sdkDir = filepath.Join("..", ".clients", "sdk")

// needSDK returns the installed SDK's node_modules, or skips the test
// (fails it under CI) when scripts/sdk-setup.sh has not run.
func needSDK(t *testing.T) string {
	t.Helper()
	mods, err := filepath.Abs(filepath.Join(sdkDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	_, errNode := exec.LookPath("node")
	for _, p := range []string{"openai/package.json", "zod/package.json", "typescript/bin/tsc", "ws/package.json"} {
		if _, err := os.Stat(filepath.Join(mods, p)); err != nil || errNode != nil {
			msg := fmt.Sprintf("the SDK is not installed in %s (run scripts/sdk-setup.sh, or make test)", mods)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return mods
}

// sdkWorkdir is a temporary directory whose node_modules is the installed
// SDK's, for tsc and node to run in.
func sdkWorkdir(t *testing.T, mods string) string {
	dir := t.TempDir()
	if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sdkVersion is an installed package's version.
func sdkVersion(t *testing.T, mods, pkg string) string {
	b, err := os.ReadFile(filepath.Join(mods, pkg, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p.Version
}

// tsImports declares the SDK types captures are checked against.
const tsImports = `import type { Response, ResponseStreamEvent, ResponsesServerEvent, ResponseOutputItem } from 'openai/resources/responses/responses';
import type { ResponseItemList } from 'openai/resources/responses/input-items';
import type { ErrorObject } from 'openai/resources/shared';
type ErrorBody = { error: ErrorObject };
`

// tsFile is a TypeScript module that assigns each capture, on its own
// line, to its SDK type with satisfies (so excess properties fail too).
// lines maps a line number to its capture.
func tsFile(cs []capture) (src []byte, lines map[int]capture) {
	var b bytes.Buffer
	b.WriteString(tsImports)
	line := strings.Count(tsImports, "\n")
	lines = map[int]capture{}
	for i, c := range cs {
		line++
		lines[line] = c
		fmt.Fprintf(&b, "export const c%d = %s satisfies %s; // %s\n", i, c.json, c.typ, strings.ReplaceAll(c.name, "\n", " "))
	}
	return b.Bytes(), lines
}

// tscError is one diagnostic: file(line,col): error TS…: message.
var tscError = regexp.MustCompile(`(?m)^([^()\s]+)\((\d+),\d+\): error (TS\d+: .*)$`)

// runTSC type-checks files (name → source) with tsc --strict in a
// directory that sees the installed SDK, and returns the errors per file
// and line.
func runTSC(t *testing.T, mods string, files map[string][]byte) map[string]map[int][]string {
	t.Helper()
	dir := sdkWorkdir(t, mods)
	var names []string
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	args := append([]string{filepath.Join(mods, "typescript", "bin", "tsc"), "--strict", "--noEmit", "--pretty", "false",
		"--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--skipLibCheck"}, names...)
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	errs := map[string]map[int][]string{}
	for _, m := range tscError.FindAllStringSubmatch(string(out), -1) {
		line, _ := strconv.Atoi(m[2])
		if errs[m[1]] == nil {
			errs[m[1]] = map[int][]string{}
		}
		errs[m[1]][line] = append(errs[m[1]][line], m[3])
	}
	if err != nil && len(errs) == 0 {
		t.Fatalf("tsc failed without a diagnostic: %v\n%s", err, out)
	}
	return errs
}

// mutations each break one capture the SDK accepts; tsc must refuse each.
// goCatches: the openai-go check must refuse it too.
var mutations = []struct {
	name      string
	typ       string
	goCatches bool
	edit      func(map[string]any)
}{
	{"an extra field", typeResponse, true, func(m map[string]any) { m["colour"] = "blue" }},
	{"a missing required field", typeResponse, true, func(m map[string]any) { delete(m, "created_at") }},
	{"a string outside its enum", typeResponse, false, func(m map[string]any) { m["status"] = "sometimes" }},
	{"a wrong type deep inside", typeStreamEvent, true, func(m map[string]any) {
		if m["type"] == "response.completed" {
			m["response"].(map[string]any)["usage"].(map[string]any)["output_tokens"] = []any{3}
		}
	}},
	{"an unknown event type", typeServerEvent, true, func(m map[string]any) { m["type"] = "response.output_text.delta_v2" }},
	{"an extra field in an output item of a completed event", typeServerEvent, true, func(m map[string]any) {
		if m["type"] == "response.completed" {
			r := m["response"].(map[string]any)
			if out := r["output"].([]any); len(out) > 0 {
				out[0].(map[string]any)["colour"] = "blue"
			}
		}
	}},
	{"a wrong type in a content part of an output item", typeOutputItem, true, func(m map[string]any) {
		if parts, ok := m["content"].([]any); ok && len(parts) > 0 {
			parts[0].(map[string]any)["annotations"] = "none"
		}
	}},
}

// mutated applies each mutation to the first capture of its type it
// changes, and returns the broken captures.
func mutated(t *testing.T, cs []capture) []capture {
	t.Helper()
	var out []capture
	for _, mu := range mutations {
		found := false
		for _, c := range cs {
			if c.typ != mu.typ {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(c.json, &m); err != nil {
				t.Fatal(err)
			}
			mu.edit(m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			var orig any
			_ = json.Unmarshal(c.json, &orig)
			if same, _ := json.Marshal(orig); bytes.Equal(same, b) {
				continue
			}
			out = append(out, capture{name: mu.name + " (" + c.name + ")", typ: c.typ, json: b})
			found = true
			break
		}
		if !found {
			t.Fatalf("mutation %q found no %s to change", mu.name, mu.typ)
		}
	}
	return out
}

// checkTypeScript type-checks every capture against the openai npm
// package's declarations with tsc --strict, and proves the check bites:
// each mutated capture, in a second file of the same run, must fail.
func checkTypeScript(t *testing.T, cs []capture) {
	mods := needSDK(t)
	t.Logf("openai %s, typescript %s, zod %s", sdkVersion(t, mods, "openai"), sdkVersion(t, mods, "typescript"), sdkVersion(t, mods, "zod"))
	good, goodLines := tsFile(cs)
	bad, badLines := tsFile(mutated(t, cs))
	errs := runTSC(t, mods, map[string][]byte{"captures.ts": good, "mutated.ts": bad})
	for line, msgs := range errs["captures.ts"] {
		c, ok := goodLines[line]
		if !ok {
			t.Errorf("captures.ts:%d: %s", line, strings.Join(msgs, "; "))
			continue
		}
		t.Errorf("%s is not a %s: %s\n%s", c.name, c.typ, strings.Join(msgs, "; "), c.json)
	}
	for line, c := range badLines {
		if len(errs["mutated.ts"][line]) == 0 {
			t.Errorf("tsc accepted %s as a %s: %s", c.name, c.typ, c.json)
		}
	}
	for file := range errs {
		if file != "captures.ts" && file != "mutated.ts" {
			t.Errorf("tsc: errors in %s: %v", file, errs[file])
		}
	}
}
