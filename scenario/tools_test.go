package scenario

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func testWorkspace(files map[string]string) *Workspace {
	return &Workspace{files: files}
}

func TestApplyPatch(t *testing.T) {
	base := map[string]string{
		"a.go":     "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 1\n}\n",
		"old.txt":  "bye\n",
		"dir/x.md": "# x\n",
	}
	tests := []struct {
		name    string
		patch   string
		wantOut string            // substring of the output
		want    map[string]string // files after (nil: unchanged)
		gone    []string
	}{
		{
			name:    "update with header picks the second function",
			patch:   "*** Begin Patch\n*** Update File: a.go\n@@ func B() int {\n-\treturn 1\n+\treturn 2\n }\n*** End Patch",
			wantOut: "M a.go",
			want:    map[string]string{"a.go": "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n"},
		},
		{
			name:    "update without header takes the first match",
			patch:   "*** Begin Patch\n*** Update File: a.go\n func A() int {\n-\treturn 1\n+\treturn 3\n*** End Patch",
			wantOut: "M a.go",
			want:    map[string]string{"a.go": "package a\n\nfunc A() int {\n\treturn 3\n}\n\nfunc B() int {\n\treturn 1\n}\n"},
		},
		{
			name:    "whitespace-insensitive context",
			patch:   "*** Begin Patch\n*** Update File: a.go\n@@ func B() int {\n-    return 1   \n+\treturn 4\n*** End Patch",
			wantOut: "M a.go",
			want:    map[string]string{"a.go": "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 4\n}\n"},
		},
		{
			name:    "add and delete",
			patch:   "*** Begin Patch\n*** Add File: new/n.txt\n+hello\n+world\n*** Delete File: old.txt\n*** End Patch",
			wantOut: "A new/n.txt\nD old.txt",
			want:    map[string]string{"new/n.txt": "hello\nworld\n"},
			gone:    []string{"old.txt"},
		},
		{
			name:    "move",
			patch:   "*** Begin Patch\n*** Update File: dir/x.md\n*** Move to: dir/y.md\n@@\n-# x\n+# y\n*** End Patch",
			wantOut: "M dir/y.md",
			want:    map[string]string{"dir/y.md": "# y\n"},
			gone:    []string{"dir/x.md"},
		},
		{
			name:    "context mismatch changes nothing",
			patch:   "*** Begin Patch\n*** Add File: z.txt\n+z\n*** Update File: a.go\n@@\n-\treturn 9\n+\treturn 2\n*** End Patch",
			wantOut: "Failed to find expected lines in a.go",
		},
		{
			name:    "wrong header",
			patch:   "*** Begin Patch\n*** Update File: a.go\n@@ func C() int {\n-\treturn 1\n+\treturn 2\n*** End Patch",
			wantOut: "Failed to find context 'func C() int {' in a.go",
		},
		{name: "missing file", patch: "*** Begin Patch\n*** Update File: nope.go\n@@\n-x\n+y\n*** End Patch", wantOut: "cannot update nope.go: no such file"},
		{name: "delete missing", patch: "*** Begin Patch\n*** Delete File: nope.go\n*** End Patch", wantOut: "cannot delete nope.go"},
		{name: "add existing", patch: "*** Begin Patch\n*** Add File: a.go\n+x\n*** End Patch", wantOut: "already exists"},
		{name: "no envelope", patch: "*** Update File: a.go\n-x\n+y", wantOut: "first line must be"},
		{name: "no end", patch: "*** Begin Patch\n*** Delete File: old.txt", wantOut: "last line must be"},
		{name: "bad header", patch: "*** Begin Patch\n*** Frobnicate: a.go\n*** End Patch", wantOut: "not a valid section header"},
		{name: "bad hunk line", patch: "*** Begin Patch\n*** Update File: a.go\n@@\n*return 1\n*** End Patch", wantOut: "unexpected line in hunk"},
		{name: "escape the repository", patch: "*** Begin Patch\n*** Add File: ../evil\n+x\n*** End Patch", wantOut: "outside the repository"},
		{name: "absolute path", patch: "*** Begin Patch\n*** Delete File: /etc/passwd\n*** End Patch", wantOut: "must be relative"},
		{name: "file over a directory", patch: "*** Begin Patch\n*** Add File: dir\n+x\n*** End Patch", wantOut: "is a directory"},
		{name: "empty update", patch: "*** Begin Patch\n*** Update File: a.go\n*** End Patch", wantOut: "has no hunks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range base {
				files[k] = v
			}
			w := testWorkspace(files)
			out, err := w.Call(ToolApplyPatch, mustJSON(t, map[string]string{"input": tc.patch}))
			if err != nil {
				t.Fatalf("Call error: %v", err)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Fatalf("output %q does not contain %q", out, tc.wantOut)
			}
			if tc.want == nil {
				for k, v := range base {
					if got, _ := w.ReadFile(k); got != v {
						t.Errorf("%s changed by a failed patch: %q", k, got)
					}
				}
				if len(w.Files()) != len(base) {
					t.Errorf("files = %v, want the original %d", w.Files(), len(base))
				}
				return
			}
			for k, v := range tc.want {
				if got, ok := w.ReadFile(k); !ok || got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, k := range tc.gone {
				if _, ok := w.ReadFile(k); ok {
					t.Errorf("%s still exists", k)
				}
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	w := testWorkspace(map[string]string{"f.txt": "one\ntwo\nthree\nfour\n", "d/g.txt": "", "d/h.txt": "x"})
	tests := []struct {
		name string
		args string
		want string
	}{
		{name: "whole file", args: `{"path":"f.txt"}`, want: "f.txt (lines 1-4 of 4)\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"},
		{name: "range", args: `{"path":"f.txt","start_line":2,"end_line":3}`, want: "f.txt (lines 2-3 of 4)\n     2\ttwo\n     3\tthree\n"},
		{name: "end past the end is clamped", args: `{"path":"./f.txt","start_line":4,"end_line":99}`, want: "f.txt (lines 4-4 of 4)\n     4\tfour\n"},
		{name: "start past the end", args: `{"path":"f.txt","start_line":5}`, want: "error: start_line 5 is past the end of f.txt (4 lines)"},
		{name: "end before start", args: `{"path":"f.txt","start_line":3,"end_line":2}`, want: "error: end_line 2 is before start_line 3"},
		{name: "missing", args: `{"path":"nope.txt"}`, want: "error: nope.txt: no such file"},
		{name: "directory", args: `{"path":"d"}`, want: "error: d is a directory; use list_files"},
		{name: "empty file", args: `{"path":"d/g.txt"}`, want: "d/g.txt (empty file)\n"},
		{name: "no final newline", args: `{"path":"d/h.txt"}`, want: "d/h.txt (lines 1-1 of 1)\n     1\tx\n"},
		{name: "outside", args: `{"path":"../f.txt"}`, want: `error: path "../f.txt" is outside the repository`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := w.Call(ToolReadFile, tc.args)
			if err != nil {
				t.Fatalf("Call error: %v", err)
			}
			if out != tc.want {
				t.Errorf("output\n%q\nwant\n%q", out, tc.want)
			}
		})
	}
}

func TestSearchAndList(t *testing.T) {
	w := testWorkspace(map[string]string{
		"src/a.py": "def fetch_items():\n    pass\nx = client.fetch_items\n",
		"src/b.py": "FETCH_ITEMS = 1\n",
		"doc.md":   "call fetch_items(now)\n",
	})
	tests := []struct {
		name string
		tool string
		args string
		want string
	}{
		{name: "substring", tool: ToolSearch, args: `{"pattern":"fetch_items"}`, want: "doc.md:1:call fetch_items(now)\nsrc/a.py:1:def fetch_items():\nsrc/a.py:3:x = client.fetch_items\n"},
		{name: "regex", tool: ToolSearch, args: `{"pattern":"\\.fetch_items\\b","regex":true}`, want: "src/a.py:3:x = client.fetch_items\n"},
		{name: "ignore case under a path", tool: ToolSearch, args: `{"pattern":"fetch_items","path":"src/b.py","ignore_case":true}`, want: "src/b.py:1:FETCH_ITEMS = 1\n"},
		{name: "no match", tool: ToolSearch, args: `{"pattern":"zzz"}`, want: "No matches for \"zzz\".\n"},
		{name: "bad regex", tool: ToolSearch, args: `{"pattern":"(","regex":true}`, want: "error: invalid regular expression"},
		{name: "missing path", tool: ToolSearch, args: `{"pattern":"x","path":"nope"}`, want: "error: nope: no such file or directory"},
		{name: "list all", tool: ToolListFiles, args: `{}`, want: "doc.md\nsrc/a.py\nsrc/b.py\n"},
		{name: "list dir", tool: ToolListFiles, args: `{"path":"src/"}`, want: "src/a.py\nsrc/b.py\n"},
		{name: "list missing", tool: ToolListFiles, args: `{"path":"lib"}`, want: `error: no files under "lib"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := w.Call(tc.tool, tc.args)
			if err != nil {
				t.Fatalf("Call error: %v", err)
			}
			if !strings.HasPrefix(out, tc.want) {
				t.Errorf("output %q, want prefix %q", out, tc.want)
			}
		})
	}
}

func TestArgumentValidation(t *testing.T) {
	w := testWorkspace(map[string]string{"f": "x\n"})
	tests := []struct {
		name, tool, args, want string
	}{
		{name: "unknown tool", tool: "exec_command", args: `{}`, want: "unknown tool"},
		{name: "not json", tool: ToolReadFile, args: `{"path":`, want: "not a valid JSON object"},
		{name: "array", tool: ToolReadFile, args: `["f"]`, want: "must be a JSON object"},
		{name: "null", tool: ToolListFiles, args: `null`, want: "must be a JSON object"},
		{name: "empty", tool: ToolListFiles, args: ``, want: "must be a JSON object"},
		{name: "missing required", tool: ToolReadFile, args: `{}`, want: `missing required field "path"`},
		{name: "wrong type", tool: ToolReadFile, args: `{"path":1}`, want: `field "path" must be a string`},
		{name: "fractional line", tool: ToolReadFile, args: `{"path":"f","start_line":1.5}`, want: `must be an integer`},
		{name: "zero line", tool: ToolReadFile, args: `{"path":"f","start_line":0}`, want: `must be at least 1`},
		{name: "huge line", tool: ToolReadFile, args: `{"path":"f","end_line":1e300}`, want: `must be an integer`},
		{name: "string bool", tool: ToolSearch, args: `{"pattern":"x","regex":"true"}`, want: `must be a boolean`},
		{name: "null field", tool: ToolSearch, args: `{"pattern":null}`, want: `must not be null`},
		{name: "unknown field", tool: ToolRunTests, args: `{"target":"x","extra":1}`, want: `unknown field "extra"`},
		{name: "trailing data", tool: ToolListFiles, args: `{} {}`, want: "unexpected data"},
		{name: "invalid utf-8", tool: ToolSearch, args: "{\"pattern\":\"\xff\"}", want: "not valid UTF-8"},
		{name: "too long pattern", tool: ToolSearch, args: `{"pattern":"` + strings.Repeat("a", maxPatternBytes+1) + `"}`, want: "longer than"},
		{name: "huge arguments", tool: ToolApplyPatch, args: `{"input":"` + strings.Repeat("a", maxArgumentBytes) + `"}`, want: "more than the limit"},
		{name: "deep nesting", tool: ToolListFiles, args: `{"path":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, want: "invalid arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := w.Call(tc.tool, tc.args)
			if err == nil {
				t.Fatalf("Call succeeded with %q", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			var ae *ArgumentError
			if tc.name != "unknown tool" && !errors.As(err, &ae) {
				t.Errorf("error %T is not an *ArgumentError", err)
			}
			if tc.name == "unknown tool" && !errors.Is(err, ErrUnknownTool) {
				t.Errorf("error %v is not ErrUnknownTool", err)
			}
		})
	}
}

// The schemas handed to the model and the decoder must agree.
func TestToolSchemasMatchDecoder(t *testing.T) {
	for _, def := range standardTools() {
		props := def.Parameters["properties"].(map[string]any)
		required := def.Parameters["required"].([]any)
		if def.Parameters["additionalProperties"] != false || def.Parameters["type"] != "object" {
			t.Errorf("%s: schema is not a closed object", def.Name)
		}
		args := map[string]any{}
		for name, p := range props {
			switch p.(map[string]any)["type"] {
			case "string":
				args[name] = "x"
			case "integer":
				args[name] = 1
			case "boolean":
				args[name] = true
			default:
				t.Errorf("%s.%s: unexpected type", def.Name, name)
			}
		}
		if _, err := ParseToolArguments(def.Name, mustJSON(t, args)); err != nil {
			t.Errorf("%s: every declared field set: %v", def.Name, err)
		}
		for _, r := range required {
			delete(args, r.(string))
			if _, err := ParseToolArguments(def.Name, mustJSON(t, args)); err == nil {
				t.Errorf("%s: accepted arguments without required %q", def.Name, r)
			}
		}
	}
}

func TestRunTestsTargets(t *testing.T) {
	s, _ := Lookup("fix-failing-test")
	w := s.NewWorkspace()
	tests := []struct {
		name, args, want, notWant string
	}{
		{name: "one package", args: `{"target":"./internal/money/..."}`, want: "FAIL\tgithub.com/harborline/fulfil/internal/money", notWant: "internal/pricing"},
		{name: "verbose", args: `{"target":"internal/config","verbose":true}`, want: "=== RUN   TestLoad/flag_beats_environment"},
		{name: "missing target", args: `{"target":"nope"}`, want: "error: nope: no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := w.Call(ToolRunTests, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tc.want) || (tc.notWant != "" && strings.Contains(out, tc.notWant)) {
				t.Errorf("output:\n%s\nwant %q, not %q", out, tc.want, tc.notWant)
			}
		})
	}
	// A patch that breaks the syntax is a build failure, not a pass.
	out, _ := w.Call(ToolApplyPatch, mustJSON(t, map[string]string{"input": "*** Begin Patch\n*** Update File: internal/money/money.go\n@@\n-func Sum(amounts ...Cents) Cents {\n+func Sum(amounts ...Cents) Cents {{\n*** End Patch"}))
	if !strings.HasPrefix(out, patchSuccessPrefix) {
		t.Fatalf("patch: %s", out)
	}
	out, _ = w.Call(ToolRunTests, `{"target":"internal/money"}`)
	if !strings.Contains(out, "[build failed]") || !strings.Contains(out, "internal/money/money.go:") {
		t.Errorf("broken file did not fail the build:\n%s", out)
	}
}

func FuzzWorkspaceCall(f *testing.F) {
	f.Add(ToolReadFile, `{"path":"README.md","start_line":1,"end_line":3}`)
	f.Add(ToolSearch, `{"pattern":"func (\\w+)","regex":true,"path":"internal"}`)
	f.Add(ToolListFiles, `{"path":"internal/"}`)
	f.Add(ToolRunTests, `{"target":"./internal/money/...","verbose":true}`)
	f.Add(ToolApplyPatch, `{"input":"*** Begin Patch\n*** Add File: x.go\n+package x\n*** End Patch"}`)
	s, _ := Lookup("fix-failing-test")
	f.Fuzz(func(t *testing.T, name, args string) {
		w := s.NewWorkspace()
		out, err := w.Call(name, args)
		if err != nil {
			if out != "" {
				t.Errorf("output %q alongside error %v", out, err)
			}
			return
		}
		if !utf8.ValidString(out) && name != ToolReadFile && name != ToolSearch {
			// Only file contents (which a patch may fill with anything valid) reach the output verbatim.
			t.Errorf("%s produced invalid UTF-8", name)
		}
		if len(w.Files()) > maxWorkspaceFiles {
			t.Errorf("workspace grew to %d files", len(w.Files()))
		}
	})
}

func FuzzApplyPatch(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: a.txt\n@@ two\n-three\n+3\n*** End Patch")
	f.Add("*** Begin Patch\n*** Add File: b/c.txt\n+x\n*** Delete File: a.txt\n*** End Patch")
	f.Add("*** Begin Patch\n*** Update File: a.txt\n*** Move to: z.txt\n one\n-two\n*** End of File\n*** End Patch")
	f.Fuzz(func(t *testing.T, patch string) {
		files := map[string]string{"a.txt": "one\ntwo\nthree\n", "d/e.txt": "e\n"}
		before := map[string]string{}
		for k, v := range files {
			before[k] = v
		}
		changed, err := applyPatchTo(files, patch)
		if err != nil {
			// A failed patch must leave everything as it was.
			if len(files) != len(before) {
				t.Fatalf("failed patch changed the file set")
			}
			for k, v := range before {
				if files[k] != v {
					t.Fatalf("failed patch changed %s", k)
				}
			}
			return
		}
		if len(changed) == 0 {
			t.Fatal("successful patch changed nothing")
		}
		for p := range files {
			if c, err := cleanPath(p); err != nil || c != p || p == "" {
				t.Fatalf("patch created a bad path %q", p)
			}
		}
	})
}
