package check

import (
	"testing"

	"agentloop/api"
)

// TestGradeOneResponseInFlight: a continuation the engine received
// before the response it names had finished (finalize's end) fails; one
// received after passes; no continuation is not_exercised. A modelled
// stage after finalize does not count as in flight.
func TestGradeOneResponseInFlight(t *testing.T) {
	parent := api.Trace{ResponseID: "resp_a", StartedUnixNS: 1_000, Chain: &api.Chain{},
		Spans: []api.Span{{Name: api.StageGenerate, StartNS: 0, DurationNS: 400}, {Name: api.StageFinalize, StartNS: 400, DurationNS: 100},
			{Name: "stack_billing", StartNS: 500, DurationNS: 10_000}}}
	child := func(at int64) api.Trace {
		return api.Trace{ResponseID: "resp_b", StartedUnixNS: at, Chain: &api.Chain{PreviousResponseID: "resp_a"}}
	}
	for _, c := range []struct {
		traces []api.Trace
		want   Verdict
	}{
		{[]api.Trace{parent, child(1_499)}, Fail},
		{[]api.Trace{parent, child(1_500)}, Pass},
		{[]api.Trace{parent, child(2_000)}, Pass},
		{[]api.Trace{parent}, NotExercised},
	} {
		if got := gradeInFlight(&Observed{Traces: c.traces}); got.Verdict != c.want {
			t.Errorf("%d traces, the last at %d: %s (%s), want %s", len(c.traces), c.traces[len(c.traces)-1].StartedUnixNS, got.Verdict, got.Reason, c.want)
		}
	}
}
