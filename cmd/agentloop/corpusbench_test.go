package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/apistack"
	"agentloop/corpus"
)

// TestBenchCorpus: bench corpus races a session once and gives its saving
// at each reading and speed; a check races it for real too; bad flags are
// refused.
func TestBenchCorpus(t *testing.T) {
	t.Parallel() // its own engine: overlaps the other slow tests of this package
	getenv := func(string) string { return "" }
	var out bytes.Buffer
	args := []string{"bench", "corpus", "--limit", "1", "--speeds", "1000,4000", "--check", "1", "--check-speeds", "4000", "--tool-time", "0",
		"--lanes", "http,http-optimized,ws", "--json", "--db", filepath.Join(t.TempDir(), "a.db")}
	if err := run(context.Background(), args, getenv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Sessions []corpus.SessionResult `json:"sessions"`
		Checks   []corpus.Check         `json:"checks"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Sessions) != 1 || len(res.Checks) != 1 || res.Sessions[0].Turns == 0 || res.Sessions[0].FinalContext == 0 {
		t.Fatalf("%s", out.String())
	}
	for _, rd := range apistack.HostedReadings {
		for _, s := range []map[int]float64{res.Sessions[0].Saving[rd.Reading], res.Sessions[0].SavingVsHTTP[rd.Reading]} {
			if len(s) != 2 || s[1000] <= -1 || s[1000] >= 1 || s[4000] <= -1 || s[4000] >= 1 {
				t.Errorf("%s: %v", rd.Reading, s)
			}
		}
	}
	if c := res.Checks[0]; c.RealMS["ws"] <= 0 || c.RecostMS["ws"] <= 0 || c.RealMS["http-optimized"] <= 0 {
		t.Errorf("check %+v", c)
	}
	for _, c := range []struct{ flag, value, want string }{
		{"--tool-time", "soon", `--tool-time: "soon"`},
		{"--speeds", "0", `--speeds: "0"`},
		{"--lanes", "http,ws", "must hold http-optimized and ws"},
		{"--lanes", "http-optimized,ws,prototype", `--lanes: "prototype"`},
	} {
		err := run(context.Background(), []string{"bench", "corpus", c.flag, c.value}, getenv, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v", c.flag, c.value, err)
		}
	}
}
