package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaceWorkloadFile: agentloop race --workload FILE replays the file in
// every default lane, and a bad file or a session without --server is a
// clear error.
func TestRaceWorkloadFile(t *testing.T) {
	getenv := func(string) string { return "" }
	var out bytes.Buffer
	args := []string{"race", "--workload", "testdata/workload.json", "--profile", "instant", "--db", filepath.Join(t.TempDir(), "a.db")}
	if err := run(context.Background(), args, getenv, &out, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "scenario workload") || strings.Count(out.String(), " passed ") < 4 {
		t.Fatalf("output:\n%s", out.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"race", "--workload", "testdata/nothing.json"}, "no such file"},
		{[]string{"race", "--workload", "session:abc"}, "needs --server"},
		{[]string{"race", "--workload", "main.go"}, "--workload main.go: workload: invalid JSON"},
		{[]string{"race", "--workload", "testdata/workload.json", "--lanes", "ws,prototype"}, "prototype lane does not replay workloads"},
	} {
		err := run(context.Background(), c.args, getenv, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
