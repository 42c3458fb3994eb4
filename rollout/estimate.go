package rollout

import (
	"fmt"
	"math"
	"sync"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/inference"
	"agentloop/scenario"
)

// How long a race will take, said before it starts ("about 25 s"): built
// once here from what the race is made of, never from a recorded race.
// A scenario's rollout is played in-process (its plan and its tools, as
// the engine and the lanes play it), which gives its turns and the
// context each turn sends; each lane's turns then cost what the race
// models: a round trip, the profile's time to first token, prefill of the
// new tokens and decode of the reply, the modelled API stack's stages for
// what that lane sends (apistack.Stack.StageCost, as the engine costs
// them) and the tool time. The engine's measured work is left out: it is
// the machine's, and small beside the modelled parts of a hosted race.

// estimateCharsPerToken turns a rollout's characters into tokens: the
// scenarios measure 3.3 to 3.9 characters per o200k token (scenario's doc).
const estimateCharsPerToken = 3.6

// Classroom is the classroom's live race, presenter mode's start: a short
// session (quick-fix) on the fast burst profile, under the one-click
// race's modelled stack, the four default lanes taking turns, one repeat.
// Its four lanes finish in about 20 s in all (docs/decisions.md, "Lanes
// that take turns").
var Classroom = Config{Scenario: "quick-fix", Profile: api.ModelBurst, RTTms: 20, ToolTimeMs: 50, Lanes: DefaultLanes,
	Seed: 1, Repeats: 1, TakeTurns: true, Stack: apistack.DefaultRace}

// estimateTurn is one turn of a played rollout, in tokens.
type estimateTurn struct {
	context, fresh, output int // the whole request, the items new since the last turn, the reply
	calls                  bool
}

var (
	playedMu sync.Mutex
	played   = map[string][]estimateTurn{}
)

// playScenario plays sc's rollout for seed in-process, once per process.
func playScenario(sc *scenario.Scenario, seed int64) []estimateTurn {
	key := fmt.Sprintf("%s/%d", sc.Name, seed)
	playedMu.Lock()
	defer playedMu.Unlock()
	if t, ok := played[key]; ok {
		return t
	}
	tok := func(chars int) int { return int(math.Ceil(float64(chars) / estimateCharsPerToken)) }
	ws := sc.NewWorkspace()
	context := len(sc.DeveloperMessage(seed)) + len(sc.Task) + len(toolsJSON(sc))
	fresh := context
	var steps []scenario.Step
	var turns []estimateTurn
	for range maxTurns {
		act := sc.Next(seed, steps)
		out := len(act.Text)
		for _, c := range act.Calls {
			out += len(c.Arguments) + len(c.Name)
		}
		turns = append(turns, estimateTurn{context: tok(context), fresh: tok(fresh), output: tok(out), calls: len(act.Calls) > 0})
		if act.Done || len(act.Calls) == 0 {
			break
		}
		fresh = 0
		for _, c := range act.Calls {
			o, err := ws.Call(c.Name, c.Arguments)
			if err != nil {
				o = "error: " + err.Error()
			}
			steps = append(steps, scenario.Step{Call: c, Output: o})
			fresh += len(o)
		}
		context += out + fresh
	}
	played[key] = turns
	return turns
}

// Estimate is how long a normalized race should take from its start to its
// end: each lane's turns as the race models them, summed over the lanes
// when they never overlap (one after another, or taking turns), the
// longest lane when they run together; times the repeats. A workload
// race's is its least duration (MinDuration).
func Estimate(cfg Config) time.Duration {
	if cfg.WorkloadSummary != nil {
		return MinDuration(cfg)
	}
	sc, ok := scenario.Lookup(cfg.Scenario)
	if !ok {
		return 0
	}
	turns := playScenario(sc, max(cfg.Seed, 1))
	prof := inference.ProfileFor(cfg.Model())
	var all, longest time.Duration
	for _, lane := range cfg.Lanes {
		d := estimateLane(lane, cfg, prof, turns)
		all += d
		longest = max(longest, d)
	}
	if cfg.Order() == OrderTogether {
		all = longest
	}
	return all * time.Duration(max(cfg.Repeats, 1))
}

// estimateLane is one lane's turns as the race models them.
func estimateLane(lane string, cfg Config, prof inference.Profile, turns []estimateTurn) time.Duration {
	st := cfg.Stack
	pre := lane == LaneHTTP // /baseline/v1: the engine before the sprint
	d := cfg.RTT()          // the connection
	if lane == LaneWS {
		d += cfg.RTT() + prof.BaseTTFT // the warm-up
	}
	for i, t := range turns {
		d += cfg.RTT() + prof.BaseTTFT
		if prof.PrefillTPS > 0 {
			d += time.Duration(float64(t.fresh) / prof.PrefillTPS * float64(time.Second))
		}
		if tps := api.ModelDecodeTPS(cfg.Model()); tps > 0 && prof.DecodeTPS > 0 {
			d += time.Duration(float64(t.output) / tps * float64(time.Second))
		}
		classified := t.context
		switch lane {
		case LaneWS, LanePrototype:
			classified = t.fresh // only the new items, after a parent in memory
		case LaneHTTPChained:
			if i > 0 {
				d += st.StageCost(apistack.Work{Stage: api.StageStackStateLoad, Bytes: int(float64(t.context-t.fresh) * estimateCharsPerToken)})
			}
		}
		d += st.StageCost(apistack.Work{Stage: api.StageStackClassify, Tokens: classified, PreSprint: pre})
		d += st.StageCost(apistack.Work{Stage: api.StageStackBilling, PreSprint: pre})
		if pre {
			d += st.StageCost(apistack.Work{Stage: api.StageStackSprintHops, PreSprint: true})
			d += st.StageCost(apistack.Work{Stage: api.StageStackConfigHop, PreSprint: true})
		}
		if t.calls {
			d += cfg.ToolTime()
		}
	}
	return d
}

// EstimateWords says an estimate as the page shows it before a race:
// "about 25 s" (to the nearest 5 s under two minutes), "about 3 min".
func EstimateWords(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < 2*time.Minute:
		s := max(5, int(math.Round(d.Seconds()/5))*5)
		return fmt.Sprintf("about %d s", s)
	}
	return fmt.Sprintf("about %d min", int(math.Round(d.Minutes())))
}
