package rollout_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"agentloop/api"
	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/rollout"
	"agentloop/scenario"
)

func TestRaceEveryScenarioEveryLanePasses(t *testing.T) {
	t.Parallel() // a whole race on its own engine: overlaps the other slow races of this package
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	for _, sc := range rollout.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			// Each race's stateless HTTP lane re-renders its whole history
			// every turn and outlasts the other lanes by far, on one core:
			// the scenarios' races overlap on the machine's others.
			t.Parallel()
			// A short scenario (quick-fix) has fewer turns and a smaller
			// context.
			minTurns, minContext := 15, 60000
			if s, _ := scenario.Lookup(sc.Name); s.Short {
				minTurns, minContext = 10, 15000
			}
			var snaps int
			id, sum, err := runner.Run(context.Background(), rollout.Config{Scenario: sc.Name, Profile: "instant", RTTms: 2, Seed: 3},
				func(rollout.Snapshot) { snaps++ })
			if err != nil {
				t.Fatal(err)
			}
			byLane := map[string]rollout.LaneSummary{}
			for _, l := range sum.Lanes {
				if l.Status != rollout.StatusPassed {
					t.Fatalf("lane %s %s: %s", l.Lane, l.Status, l.Error)
				}
				if l.Turns < minTurns || l.Turns > 40 {
					t.Errorf("lane %s ran %d turns", l.Lane, l.Turns)
				}
				byLane[l.Lane] = l
			}
			// Stateless lanes upload the whole history every turn; chained
			// lanes upload only what is new.
			if !(byLane["ws"].BytesSent*3 < byLane["http"].BytesSent && byLane["http-chained"].BytesSent*3 < byLane["http-optimized"].BytesSent) {
				t.Errorf("uploads: %+v", byLane)
			}
			if byLane["ws"].CachedShare <= 0.5 {
				t.Errorf("ws cached share %.2f", byLane["ws"].CachedShare)
			}
			rec, err := rollout.LoadRun(context.Background(), a.DB, id)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != rollout.StatusPassed || len(rec.Turns) < 4*minTurns {
				t.Fatalf("stored run %s with %d turns", rec.Status, len(rec.Turns))
			}
			calls, stages := 0, 0
			connects := map[string]int{}
			for _, turn := range rec.Turns {
				if turn.ConnectNS > 0 {
					connects[turn.Lane]++
				}
				calls += len(turn.Calls)
				stages += len(turn.Stages)
				for _, c := range turn.Calls {
					if c.Output == "" {
						t.Fatalf("call %s without output", c.Name)
					}
				}
			}
			// Every lane keeps one connection for the whole rollout.
			for lane, n := range connects {
				if n != 1 {
					t.Errorf("lane %s opened %d connections", lane, n)
				}
			}
			if calls == 0 || stages == 0 || snaps == 0 {
				t.Fatalf("calls %d stages %d snapshots %d", calls, stages, snaps)
			}
			last := rec.Turns[len(rec.Turns)-1]
			if last.InputTokens < minContext {
				t.Errorf("context reached only %d tokens", last.InputTokens)
			}
		})
	}
}

func TestRaceInterruptedIsStoredAsInterrupted(t *testing.T) {
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var id string
	var err error
	go func() {
		defer close(done)
		id, _, err = runner.Run(ctx, rollout.Config{Profile: "classic", Lanes: []string{"ws", "http"}}, func(s rollout.Snapshot) {
			for _, l := range s.Lanes {
				if l.Turn >= 2 {
					cancel()
				}
			}
		})
	}()
	<-done
	if !errors.Is(err, context.Canceled) && err == nil {
		t.Fatalf("run ended without an error")
	}
	rec, lerr := rollout.LoadRun(context.Background(), a.DB, id)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if rec.Status != rollout.StatusInterrupted {
		t.Fatalf("status %s", rec.Status)
	}
}

func TestNormalizeRejectsBadConfigs(t *testing.T) {
	for _, c := range []rollout.Config{
		{Scenario: "nope"}, {Profile: "turbo"}, {Lanes: []string{"carrier-pigeon"}}, {Lanes: []string{"ws", "ws"}},
		{RTTms: -1}, {Repeats: 100}, {ToolTimeMs: 1e9}, {Sequential: true, TakeTurns: true},
	} {
		if err := rollout.Normalize(&c); err == nil || err.Status != 400 {
			t.Errorf("%+v accepted", c)
		}
	}
	// Two lane orders at once: the error names take_turns.
	both := rollout.Config{Sequential: true, TakeTurns: true}
	if err := rollout.Normalize(&both); err == nil || err.Param != "take_turns" {
		t.Errorf("sequential and take_turns: %v", err)
	}
	c := rollout.Config{}
	if err := rollout.Normalize(&c); err != nil || len(c.Lanes) != 4 || c.Repeats != 1 || c.Profile != "spark" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}

func TestRaceAgainstAKeyedServer(t *testing.T) {
	t.Parallel() // a whole race on its own engine: overlaps the other slow races of this package
	a := apptest.Start(t, func(c *app.Config) { c.APIKey = "sk-race" })
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	runner.APIKey = "sk-race"
	_, sum, err := runner.Run(context.Background(), rollout.Config{Workload: shortWorkload(t), Profile: "burst", Lanes: []string{"ws", "http-chained"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed || l.MedianOverNS == 0 {
			t.Fatalf("lane %s: %s %s (overhead %d: traces need the key too)", l.Lane, l.Status, l.Error, l.MedianOverNS)
		}
		// The race's own clock, kept with the run, covers every lane.
		if sum.ElapsedNS < l.TotalNS {
			t.Errorf("the race's elapsed %d ns is shorter than lane %s's %d ns", sum.ElapsedNS, l.Lane, l.TotalNS)
		}
	}
	runner.APIKey = ""
	_, sum, _ = runner.Run(context.Background(), rollout.Config{Profile: "burst", Lanes: []string{"ws"}}, nil)
	if sum.Lanes[0].Status != rollout.StatusFailed {
		t.Fatalf("a race without the key: %s", sum.Lanes[0].Status)
	}
}

func TestRaceOverTLSPaysRealHandshakes(t *testing.T) {
	t.Parallel() // a whole race on its own engine: overlaps the other slow races of this package
	a := apptest.Start(t)
	url, clientTLS, err := a.StartTLS()
	if err != nil {
		t.Fatal(err)
	}
	// Every TLS handshake the race's clients make, the lanes' and the
	// trace lookups' alike, is counted.
	var handshakes atomic.Int32
	clientTLS.VerifyConnection = func(tls.ConnectionState) error { handshakes.Add(1); return nil }
	runner := rollout.NewRunner(url, a.DB, nil)
	runner.TLS = clientTLS
	id, sum, err := runner.Run(context.Background(), rollout.Config{Workload: shortWorkload(t), Profile: "burst", Lanes: []string{"ws", "http-chained"}, RTTms: 5, TLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed || l.MedianOverNS == 0 {
			t.Fatalf("lane %s over TLS: %s %s", l.Lane, l.Status, l.Error)
		}
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	connects := 0
	for _, turn := range rec.Turns {
		if turn.ConnectNS > 0 {
			connects++
		}
	}
	// Each lane opens its connection once and reuses it.
	if connects != 2 {
		t.Fatalf("%d turns paid for a new connection, want one per lane", connects)
	}
	// The trace lookups (one per turn, at most two at a time) share one
	// engine client: they reuse its connections too. Not two handshakes
	// exactly: a lookup can start before the transport has put the last
	// one's connection back in its idle pool (it does so once the body is
	// read, on its own goroutine), and then dials a third (seen once under
	// a loaded make test). A client per lookup pays one a turn.
	if n := int(handshakes.Load()) - connects; n > len(rec.Turns)/2 {
		t.Fatalf("the trace lookups of %d turns made %d TLS handshakes: they do not reuse their connections", len(rec.Turns), n)
	}
}

// The prototype lane plays a whole scenario as one long-running response:
// every turn is a segment of it, and each turn's stages come from its
// segment of the trace.
func TestPrototypeLanePasses(t *testing.T) {
	a := apptest.Start(t)
	runner := rollout.NewRunner(a.URL(), a.DB, nil)
	sc := rollout.Scenarios()[0]
	id, sum, err := runner.Run(context.Background(), rollout.Config{Scenario: sc.Name, Profile: "instant",
		Lanes: []string{rollout.LanePrototype, rollout.LaneWS}, Seed: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	byLane := map[string]rollout.LaneSummary{}
	for _, l := range sum.Lanes {
		if l.Status != rollout.StatusPassed {
			t.Fatalf("lane %s %s: %s", l.Lane, l.Status, l.Error)
		}
		byLane[l.Lane] = l
	}
	p := byLane[rollout.LanePrototype]
	if p.Turns < 2 || p.Turns != byLane[rollout.LaneWS].Turns { // the same rollout, turn for turn
		t.Fatalf("prototype ran %d turns, ws %d", p.Turns, byLane[rollout.LaneWS].Turns)
	}
	rec, err := rollout.LoadRun(context.Background(), a.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	n := 0
	var merged int64
	for _, turn := range rec.Turns {
		if turn.Lane != rollout.LanePrototype {
			continue
		}
		n++
		ids[turn.ResponseID] = true
		var overhead bool
		for _, s := range turn.Stages {
			overhead = overhead || s.Name == rollout.StageOverhead
		}
		if !overhead {
			t.Fatalf("turn %d was not merged with its segment: %+v", turn.Index, turn.Stages)
		}
		if turn.OverheadNS <= 0 {
			t.Fatalf("turn %d: no engine overhead from segment %d", turn.Index, turn.Index)
		}
		merged += turn.OverheadNS
	}
	if n != p.Turns || len(ids) != 1 {
		t.Fatalf("%d prototype turns over %d responses, want %d over one", n, len(ids), p.Turns)
	}
	// Each span went to its own segment's turn, once.
	var tr api.Trace
	for id := range ids {
		resp, err := http.Get(a.URL() + "/api/traces/" + id)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&tr)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if tr.Overhead().Nanoseconds() != merged {
		t.Fatalf("the turns' overhead sums to %d ns, the trace's to %d ns", merged, tr.Overhead().Nanoseconds())
	}
}
