package rollout

import (
	"fmt"
	"time"

	"agentloop/api"
)

// checkWork refuses a workload race whose work passes MaxRaceTurns.
func checkWork(cfg *Config) *api.Error {
	if cfg.WorkloadSummary == nil {
		return nil
	}
	turns := len(cfg.Lanes) * cfg.Repeats * cfg.WorkloadSummary.Turns
	if turns > MaxRaceTurns {
		return api.BadRequest("repeats", api.CodeInvalidValue,
			"The race would run %d turns (%d lanes × %d repeats × %d turns of the workload); a race runs at most %d turns in all (max_race_turns). Use fewer lanes or repeats, or a shorter workload.",
			turns, len(cfg.Lanes), cfg.Repeats, cfg.WorkloadSummary.Turns, MaxRaceTurns)
	}
	return nil
}

// MinDuration is the least time a normalized workload race can take: per
// lane and repeat, the tool time it waits between turns (recorded, or the
// race's with FixedToolTime), a round trip per turn and the output's decode
// time at the race's rate, none of which a faster engine removes; times the
// repeats, and times the lanes when they run one after another or take
// turns (lanes together wait at the same time). 0 for a scenario race.
func MinDuration(cfg Config) time.Duration {
	s := cfg.WorkloadSummary
	if s == nil || s.Turns == 0 {
		return 0
	}
	toolMs := s.ToolTimeMs
	if cfg.FixedToolTime {
		toolMs = cfg.ToolTimeMs * float64(s.Turns-1)
	}
	perLane := time.Duration(toolMs*float64(time.Millisecond)) + time.Duration(s.Turns)*cfg.RTT()
	tps := cfg.DecodeTPS
	if tps == 0 {
		tps = api.ModelDecodeTPS(cfg.Profile)
	}
	if tps > 0 {
		perLane += time.Duration(float64(s.OutputTokens) / tps * float64(time.Second))
	}
	total := perLane * time.Duration(cfg.Repeats)
	if cfg.Order() != OrderTogether {
		total *= time.Duration(len(cfg.Lanes))
	}
	return total
}

// checkDuration refuses a race that cannot end within limit, the time a
// runner gives each race (Runner.TimeLimit): it would hold a race slot
// until the limit cut it off, and record nothing whole.
func checkDuration(cfg Config, limit time.Duration) *api.Error {
	if limit <= 0 {
		return nil
	}
	if d := MinDuration(cfg); d > limit {
		how := "fewer repeats or lanes"
		if cfg.Order() != OrderTogether {
			how += ", lanes together"
		}
		if !cfg.FixedToolTime {
			how += ", or fixed_tool_time with a shorter tool_time_ms"
		}
		return api.BadRequest("workload", api.CodeInvalidValue,
			"The race would take at least %s (the workload's tool times, a round trip per turn and its decode time, over %d repeats%s), beyond this server's run time limit of %s (min_duration). Use %s.",
			FormatNS(d.Round(time.Second).Nanoseconds()), cfg.Repeats, map[bool]string{true: fmt.Sprintf(" and %d lanes %s", len(cfg.Lanes), cfg.Order())}[cfg.Order() != OrderTogether],
			FormatNS(limit.Nanoseconds()), how)
	}
	return nil
}
