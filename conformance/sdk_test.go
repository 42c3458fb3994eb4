package conformance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"agentloop/server/enginetest"
)

// TestTheNodeSDKDrivesTheEngine runs testdata/sdk.mjs with the installed
// openai npm package against the engine over HTTP: a streamed
// responses.create yields the event sequence and text, and
// responses.parse with zod's zodTextFormat parses the structured output
// (the SDK throws on JSON its schema refuses).
func TestTheNodeSDKDrivesTheEngine(t *testing.T) {
	t.Parallel()
	es := enginetest.Start(t, func(c *enginetest.Config) { c.Unmodelled = true })
	out := runNode(t, "sdk.mjs", "OPENAI_BASE_URL="+es.URL+"/v1")
	var got struct {
		Types  []string
		Text   string
		Parsed *struct {
			Name       string
			Population *int
			Tags       []string
			Mayor      *string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if n := len(got.Types); n < 3 || got.Types[0] != "response.created" || got.Types[n-1] != "response.completed" || got.Text == "" {
		t.Errorf("streamed create: %+v", got)
	}
	if p := got.Parsed; p == nil || p.Name == "" || p.Population == nil || p.Tags == nil {
		t.Errorf("responses.parse gave %s", out)
	}
}

// runNode runs testdata/script with node and the installed SDK, with env
// added to the environment, and returns its standard output; a failure
// fails the test with its output.
func runNode(t *testing.T, script string, env ...string) []byte {
	t.Helper()
	mods := needSDK(t)
	dir := sdkWorkdir(t, mods)
	src, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, script), src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "OPENAI_API_KEY=sk-test"), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node %s: %v\n%s%s", script, err, out, stderr)
	}
	return out
}
