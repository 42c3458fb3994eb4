package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentloop/app/apptest"
	"agentloop/rollout"
	"agentloop/store"
	"agentloop/store/postgres/pgtest"
	"agentloop/store/sqlite"
)

// The crash test re-executes this test binary as an agentloop process; the
// tests that need PostgreSQL share one throwaway cluster.
func TestMain(m *testing.M) {
	if args := os.Getenv("AGENTLOOP_TEST_CHILD_ARGS"); args != "" {
		err := run(context.Background(), strings.Split(args, " "), func(string) string { return "" }, io.Discard, os.Stderr)
		if err != nil {
			os.Exit(exitCode(err))
		}
		os.Exit(0)
	}
	pgtest.Main(m)
}

func child(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTLOOP_TEST_CHILD_ARGS="+strings.Join(args, " "))
	return cmd
}

func TestSIGKILLMidRaceLeavesTheStoreIntact(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	db := filepath.Join(t.TempDir(), "crash.db")
	// One race that completes.
	if out, err := child(t, "race", "--db", db, "--profile", "burst", "--lanes", "ws,http").CombinedOutput(); err != nil {
		t.Fatalf("first race: %v %s", err, out)
	}
	completed := readRuns(t, db)
	if len(completed) != 1 || completed[0].Status != rollout.StatusPassed {
		t.Fatalf("completed run: %+v", completed)
	}
	before, err := loadRun(db, completed[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	// Then races killed at different moments.
	const kills = 3
	for i := range kills {
		cmd := child(t, "race", "--db", db, "--profile", "spark", "--seed", string(rune('2'+i)))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitForTurns(t, db, len(completed)+i+1, 3*(i+1))
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	// Restart on the same database, as serve does.
	a := apptest.Start(t, apptest.DB(db))
	if err := a.DB.IntegrityCheck(context.Background()); err != nil {
		t.Fatalf("integrity check after %d SIGKILLs: %v", kills, err)
	}
	runs, err := rollout.ListRuns(context.Background(), a.DB, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1+kills {
		t.Fatalf("%d runs", len(runs))
	}
	for _, r := range runs {
		rec, err := rollout.LoadRun(context.Background(), a.DB, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID == before.ID {
			if rec.Status != rollout.StatusPassed || len(rec.Turns) != len(before.Turns) || rec.Summary == nil {
				t.Fatalf("the completed run changed: %s, %d turns (was %d)", rec.Status, len(rec.Turns), len(before.Turns))
			}
			continue
		}
		if rec.Status != rollout.StatusInterrupted {
			t.Errorf("killed run %s is %s, want interrupted", r.ID, rec.Status)
		}
		for _, l := range rec.Lanes {
			if l.Status != rollout.StatusInterrupted && l.Status != rollout.StatusPassed && l.Status != rollout.StatusFailed {
				t.Errorf("lane %s of a killed run is %s", l.Lane, l.Status)
			}
		}
		for _, turn := range rec.Turns {
			if turn.ResponseID == "" && turn.Error == "" {
				t.Errorf("half-written turn %+v", turn)
			}
		}
	}
	t.Logf("%d SIGKILLs survived; %d runs intact", kills, len(runs))
}

func readRuns(t *testing.T, path string) []store.Run {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, _, err := db.ListRuns(context.Background(), store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func loadRun(path, id string) (*rollout.RunRecord, error) {
	db, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return rollout.LoadRun(context.Background(), db, id)
}

// waitForTurns waits until the newest run has stored at least n turns.
func waitForTurns(t *testing.T, path string, runs, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			continue
		}
		list, _, _ := db.ListRuns(context.Background(), store.RunFilter{})
		if len(list) >= runs {
			turns, _, _ := db.RunTurns(context.Background(), list[0].ID)
			if len(turns) >= n {
				db.Close()
				return
			}
		}
		db.Close()
	}
	t.Fatalf("the race never stored %d turns", n)
}
