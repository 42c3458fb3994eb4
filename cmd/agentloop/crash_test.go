package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"agentloop/app/apptest"
	"agentloop/internal/wait"
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
	t.Parallel() // its own engine or process: overlaps the other slow tests of this package
	if testing.Short() {
		t.Skip("kills processes")
	}
	db := filepath.Join(t.TempDir(), "crash.db")
	// One race that completes (the shortest scenario, instant, and chained
	// so it stores responses: its length is not the point).
	if out, err := child(t, "race", "--db", db, "--scenario", "quick-fix", "--profile", "instant", "--lanes", "ws,http-chained").CombinedOutput(); err != nil {
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
	wait.UntilErr(t, fmt.Sprintf("the newest of %d races to store %d turns", runs, n), func() error {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			return err
		}
		defer db.Close()
		list, _, _ := db.ListRuns(context.Background(), store.RunFilter{})
		if len(list) < runs {
			return fmt.Errorf("%d races stored", len(list))
		}
		turns, _, _ := db.RunTurns(context.Background(), list[0].ID)
		if len(turns) < n {
			return fmt.Errorf("%d turns stored", len(turns))
		}
		return nil
	})
}
