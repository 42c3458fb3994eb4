package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/rollout"
	"agentloop/store/postgres"
	"agentloop/store/sqlite"
)

// cluster is scripts/cluster.sh running: PostgreSQL, replicas and HAProxy.
type cluster struct {
	dir string
	url string
}

// startCluster runs make cluster's script with the test binary. It needs
// PostgreSQL and HAProxy: with CI set their absence fails the test,
// elsewhere it skips, saying why.
func startCluster(t *testing.T, replicas int) *cluster {
	t.Helper()
	var missing []string
	if pg, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(pg) == 0 {
		missing = append(missing, "postgresql")
	}
	if _, err := exec.LookPath("haproxy"); err != nil {
		if _, err := os.Stat("/usr/sbin/haproxy"); err != nil {
			missing = append(missing, "haproxy")
		}
	}
	if len(missing) > 0 {
		msg := "the cluster needs Debian's " + strings.Join(missing, " and ") + " (.ci/run installs them)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	bin := binary(t)
	// The postgres user must reach the cluster's directory.
	dir, err := os.MkdirTemp("", "agentloop-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd := exec.Command("sh", "../../scripts/cluster.sh", "-n", strconv.Itoa(replicas), "-p", "0", "-b", bin)
	cmd.Env = append(os.Environ(), "CLUSTER_DIR="+dir)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) // the script stops everything it started
		cmd.Wait()
	})
	// The script prints the URL once every replica and the balancer are ready.
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				logs, _ := os.ReadFile(filepath.Join(dir, "haproxy.log"))
				t.Fatalf("the cluster script ended before it was ready; haproxy: %s", logs)
			}
			t.Log(line)
			if strings.Contains(line, "state and logs") {
				url, err := os.ReadFile(filepath.Join(dir, "url"))
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					for l := range lines {
						t.Log(l)
					}
				}()
				return &cluster{dir: dir, url: strings.TrimSpace(string(url))}
			}
		case <-timeout:
			t.Fatal("the cluster did not become ready in 2 minutes")
		}
	}
}

// kill ends a replica at once, as a crash would.
func (c *cluster) kill(t *testing.T, replica string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, replica+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", replica, err)
	}
}

// replicaOf asks the cluster which replica served a response, from its
// trace (kept in PostgreSQL, so any replica answers once it is written).
func (c *cluster) replicaOf(ctx context.Context, responseID string) (string, error) {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url+"/api/traces/"+responseID, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var tr api.Trace
			ok := resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&tr) == nil
			resp.Body.Close()
			if ok {
				return tr.Replica, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", errors.New("no trace for " + responseID)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A race through HAProxy with two replicas on one PostgreSQL, where the
// replica holding the WebSocket lane's connection is killed mid-race: the
// WebSocket lane reconnects through the balancer to the survivor and
// recovers as a well-behaved client does, the chained HTTP lane goes on,
// the run passes its success check, and nothing stored is lost.
func TestFailoverMidRace(t *testing.T) {
	t.Parallel() // its own engine or process: overlaps the other slow tests of this package
	c := startCluster(t, 2)
	// The race's client runs outside the cluster, with its own run store.
	runs, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runs.Close()
	runner := rollout.NewRunner(c.url, runs, nil)

	var once sync.Once
	killed := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	onSnapshot := func(s rollout.Snapshot) {
		for _, l := range s.Lanes {
			if l.Lane != rollout.LaneWS || len(l.Turns) < 2 {
				continue
			}
			last := l.Turns[len(l.Turns)-1].ResponseID
			once.Do(func() {
				go func() { // off the race's path
					lookup, stop := context.WithTimeout(ctx, 10*time.Second)
					defer stop()
					replica, err := c.replicaOf(lookup, last)
					if err != nil {
						killed <- "error: " + err.Error()
						return
					}
					c.kill(t, replica)
					killed <- replica
				}()
			})
		}
	}
	cfg := rollout.Config{Scenario: rollout.Scenarios()[0].Name, Profile: "burst", ToolTimeMs: 40, Seed: 7,
		Lanes: []string{rollout.LaneHTTPChained, rollout.LaneWS}}
	id, sum, err := runner.Run(ctx, cfg, onSnapshot)
	if err != nil {
		t.Fatalf("race %s: %v", id, err)
	}
	var victim string
	select {
	case victim = <-killed:
	default:
		t.Fatal("the race ended before a replica was killed")
	}
	if strings.HasPrefix(victim, "error") {
		t.Fatal(victim)
	}
	t.Logf("killed %s mid-race", victim)
	chained := map[string]bool{}
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed {
			t.Errorf("lane %s: %s (%s)", l.Lane, l.Status, l.Error)
		}
	}
	turns, _, err := runs.RunTurns(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var wsRecoveries []rollout.Recovery
	for _, tu := range turns {
		if tu.Lane == rollout.LaneHTTPChained && tu.ResponseID != "" {
			chained[tu.ResponseID] = true
		}
		if tu.Lane == rollout.LaneWS {
			var timings rollout.Turn
			if err := json.Unmarshal(tu.Timings, &timings); err != nil {
				t.Fatal(err)
			}
			wsRecoveries = append(wsRecoveries, timings.Recoveries...)
		}
	}
	// The killed replica held the WebSocket lane's connection, so the lane
	// must have reconnected through the balancer and resent what the
	// survivor could not know (its parent was store:false).
	reconnected := false
	for _, r := range wsRecoveries {
		t.Logf("ws lane recovery: %+v", r)
		reconnected = reconnected || r.Action == rollout.ActionReconnect
	}
	if !reconnected {
		t.Errorf("the WebSocket lane never reconnected after its replica died: %+v", wsRecoveries)
	}
	if len(chained) < 3 {
		t.Fatalf("%d chained responses, want a whole lane's", len(chained))
	}

	// Nothing stored is lost: every chained response reads back through the
	// balancer (from the survivor), and the database passes its integrity
	// check.
	for rid := range chained {
		resp, err := http.Get(c.url + "/v1/responses/" + rid)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("stored response %s after the failover: %d", rid, resp.StatusCode)
		}
	}
	dsn, err := os.ReadFile(filepath.Join(c.dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, strings.TrimSpace(string(dsn)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("integrity after the failover: %v", err)
	}
	t.Logf("%d chained responses stored and read back after killing %s", len(chained), victim)
}
