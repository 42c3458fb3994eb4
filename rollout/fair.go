package rollout

// FairRepeats is how many times a workload race runs each lane when its
// request leaves repeats out: enough for a median and a range.
const FairRepeats = 3

// FairDefaults fills the fields a workload race's request left out (given
// says whether the request named a field) so that the race is fair by
// default: lanes one after another (unless it asks for lanes that take
// turns), so that none shares the CPU with another, and FairRepeats repeats, so that the result shows a median and
// the range across them. A value the request gave is kept as it is (and
// validated by Normalize); a scenario race keeps its own defaults.
func FairDefaults(cfg *Config, given func(field string) bool) {
	if cfg.Workload == nil && cfg.WorkloadID == "" {
		return
	}
	// Lanes that take turns never overlap either: a request for them
	// keeps its order.
	if !given("sequential") && !cfg.TakeTurns {
		cfg.Sequential = true
	}
	if !given("repeats") {
		cfg.Repeats = FairRepeats
	}
}
