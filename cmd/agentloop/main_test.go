package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"agentloop/apistack"
	"agentloop/internal/wait"
	"agentloop/rollout"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve runs `agentloop serve args` with env as its environment until
// the returned stop, and returns the URL it prints and its stdout.
func serve(t *testing.T, env map[string]string, args ...string) (url string, out *syncBuffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var errOut syncBuffer
	out = &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve"}, args...), func(k string) string { return env[k] }, out, &errOut)
	}()
	if err := wait.Poll(wait.Deadline, func() error {
		if s := out.String(); strings.HasPrefix(s, "listening on http://127.0.0.1:") && strings.HasSuffix(s, "\n") {
			url = strings.TrimSpace(strings.TrimPrefix(s, "listening on "))
			return nil
		}
		return errors.New("no listening line")
	}); err != nil {
		cancel()
		t.Fatalf("no listening line; stdout %q stderr %q", out.String(), errOut.String())
	}
	return url, out, func() error { cancel(); return <-done }
}

func TestServePrintsOneLineAndHonoursEnvironment(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"AGENTLOOP_ADDR": "127.0.0.1:0", "AGENTLOOP_DB": filepath.Join(dir, "env.db"), "AGENTLOOP_API_KEY": "sk-env"}
	url, out, stop := serve(t, env)
	// The key from the environment protects /v1.
	resp, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(`{"model":"burst","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the key: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", url+"/v1/responses", strings.NewReader(`{"model":"burst","input":"hi"}`))
	req.Header.Set("Authorization", "Bearer sk-env")
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the key: %d", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Fatalf("stdout has %d lines: %q", n, out.String())
	}
}

// TestBusyPortSaysWhatToDo: a port in use is an error that names the
// address and how to pick another.
func TestBusyPortSaysWhatToDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "busy.db")}, func(string) string { return "" }, &out, &errOut)
	if err == nil {
		t.Fatal("serving on a busy port succeeded")
	}
	for _, want := range []string{addr + " is already in use", "--addr", "AGENTLOOP_ADDR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
}

func TestHelpAndErrors(t *testing.T) {
	getenv := func(string) string { return "" }
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--help"}, getenv, &out, &errOut); exitCode(err) != 0 {
		t.Fatalf("--help: %v", err)
	}
	for _, flag := range []string{"-addr", "-db", "-api-key", "-ws-lifetime", "-max-body", "-allowed-hosts"} {
		if !strings.Contains(errOut.String(), flag) {
			t.Errorf("--help does not explain %s", flag)
		}
	}
	if err := run(context.Background(), []string{"frobnicate"}, getenv, &out, &errOut); err == nil {
		t.Fatal("unknown command accepted")
	}
	if err := run(context.Background(), []string{"serve", "--max-body", "lots"}, getenv, &out, &errOut); err == nil {
		t.Fatal("bad size accepted")
	}
	bad := func(k string) string {
		if k == "AGENTLOOP_WS_QUEUE" {
			return "many"
		}
		return ""
	}
	if err := run(context.Background(), []string{"serve"}, bad, &out, &errOut); err == nil || !strings.Contains(err.Error(), "AGENTLOOP_WS_QUEUE") {
		t.Fatalf("bad environment value: %v", err)
	}
	if err := run(context.Background(), []string{"serve", "--addr", "0.0.0.0:0", "--db", filepath.Join(t.TempDir(), "x.db")}, getenv, &out, &errOut); err == nil {
		t.Fatal("a wildcard bind without --allowed-hosts was accepted")
	}
}

func TestRaceListsScenarios(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"race", "--list-scenarios"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "\n") < 3 {
		t.Fatalf("scenarios: %q", out.String())
	}
}

func TestRaceStackAndDecodeFlags(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, args := range [][]string{
		{"race", "--stack", "turbo"},
		{"race", "--stack", `{"hop_ms":-1}`},
		{"race", "--profile", "burst", "--decode-tps", "250"},
		{"race", "--decode-tps", "0.5"},
		{"race", "--reasoning-effort", "extreme"},
		{"race", "--reasoning-summary", "auto"},
		{"bench", "matrix", "--stack", "turbo"},
	} {
		if err := run(context.Background(), args, getenv, io.Discard, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestPrintRaceSaysWhereTheTimeWent(t *testing.T) {
	rec := &rollout.RunRecord{ID: "run_1", Status: rollout.StatusPassed,
		Config: rollout.Config{Scenario: "fix-failing-test", Profile: "spark", DecodeTPS: 250, Lanes: []string{"http-optimized", "ws"}, Stack: apistack.Hosted, Repeats: 1},
		Summary: &rollout.Summary{
			Lanes: []rollout.LaneSummary{
				{Lane: "http-optimized", Status: "passed", TotalNS: 10e9, Turns: 20, APICPUNS: 100e6, RolloutsPerCore: 100, StackPerTurnNS: 8e6},
				{Lane: "ws", Status: "passed", TotalNS: 8e9, Turns: 20, APICPUNS: 20e6, RolloutsPerCore: 400},
			},
			SavedVsOptimized: map[string]float64{"ws": 0.2},
			TimeWent:         "Where the time went: WebSocket: queue+prefill 52%, tools 22%.",
			WhatItWouldTake:  &rollout.WhatItWouldTake{Target: 0.4, Turns: 20, ExtraPerTurnNS: 166666667, OverheadPerTurnNS: 2e6, StackPerTurnNS: 8e6},
		}}
	rec.Describe() // as reading it does: the summary's own sentences
	var out bytes.Buffer
	printRace(&out, rec)
	for _, want := range []string{"stack hosted", "custom-250", "lanes side by side, sharing the CPU", "Where the time went: WebSocket: queue+prefill 52%",
		"rollouts/core", "400", "would need 167 ms more API overhead", "modelled API stack of 8.00 ms per turn",
		"WebSocket finished in 8.00 s and optimized HTTP in 10.0 s: 20% sooner.", "(preset hosted, derived reading)", "Of the 2.0 s saved against optimized HTTP"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "spread") {
		t.Errorf("one repeat has no spread:\n%s", out.String())
	}
	// With repeats, each lane's median comes with its min–max.
	rec.Config.Repeats = 3
	rec.Summary.Lanes[1].MinTotalNS, rec.Summary.Lanes[1].MaxTotalNS = 7.5e9, 9.25e9
	out.Reset()
	printRace(&out, rec)
	if !strings.Contains(out.String(), "total is the median of 3 repeats, the fastest and slowest in brackets: 8.00 s (7.50 s – 9.25 s)") {
		t.Errorf("output lacks the spread:\n%s", out.String())
	}
}

// The usage and bench's error name every benchmark bench runs.
func TestUsageNamesEveryBenchmark(t *testing.T) {
	var help strings.Builder
	if err := run(context.Background(), []string{"help"}, func(string) string { return "" }, &help, io.Discard); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	err := run(context.Background(), []string{"bench"}, func(string) string { return "" }, io.Discard, &stderr)
	if err == nil {
		t.Fatal("bench without a benchmark ran")
	}
	for _, b := range []string{"overhead", "load", "floor", "state", "matrix", "sweep", "calibrate", "sensitivity"} {
		if !strings.Contains(help.String(), b) || !strings.Contains(stderr.String(), b) || !strings.Contains(err.Error(), b) {
			t.Errorf("%s: usage %q, bench's usage %q, its error %q", b, help.String(), stderr.String(), err)
		}
	}
}
