package bench_test

import (
	"context"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/bench"
)

// TestStateReportsWhatSessionsHold: without a bound every session keeps
// its state and the oldest continues from the connection cache; with a
// budget of about two sessions the oldest's state is dropped, its
// continuation gets previous_response_not_found, and resending its full
// context recovers.
func TestStateReportsWhatSessionsHold(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget int64
		oldest string
	}{
		{"no bound", 0, "continued"},
		{"a budget of about two sessions", 12 << 10, api.CodePreviousResponseNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := apptest.Start(t, func(cfg *app.Config) { cfg.StateBytes = c.budget })
			rep, err := bench.State(context.Background(), bench.StateConfig{BaseURL: a.URL(), Sessions: 4, SharedTokens: 300,
				UniqueTokens: 600, Model: "instant", Parallel: 1, SharedProcess: true, Settle: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Opened != 4 || rep.Errors != 0 || rep.InputTokens < 800 {
				t.Fatalf("%d opened, %d errors %v, %d input tokens", rep.Opened, rep.Errors, rep.ErrorSamples, rep.InputTokens)
			}
			if rep.StatePerSession <= 0 || rep.StateBudget != float64(c.budget) {
				t.Fatalf("state %.0f bytes per session, budget %.0f", rep.StatePerSession, rep.StateBudget)
			}
			if rep.Newest.Result != "continued" || rep.Newest.InputTokens <= rep.InputTokens {
				t.Fatalf("newest: %+v", rep.Newest)
			}
			if rep.Oldest.Result != c.oldest || (c.budget == 0) != (rep.Drops == 0) {
				t.Fatalf("oldest: %+v after %.0f drops", rep.Oldest, rep.Drops)
			}
			if c.budget > 0 && !rep.Oldest.Recovered {
				t.Fatal("the dropped session did not recover with its full context")
			}
		})
	}
}
