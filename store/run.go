package store

import "time"

// Run statuses.
const (
	RunQueued      = "queued"
	RunRunning     = "running"
	RunPassed      = "passed"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
)

// Run is one race. Config and Summary are opaque JSON owned by rollout:
// small, since a run names the workload it raced (WorkloadID) and never
// holds it, so lists read them whole.
type Run struct {
	ID        string
	CreatedAt time.Time
	Scenario  string
	Profile   string
	Status    string // queued|running|passed|failed|interrupted
	Config    []byte
	Summary   []byte
	UpdatedAt time.Time
	// StartedAt is when the run first became running (UpdateRun), zero
	// while it waits, and for a run stored before it was kept; with
	// UpdatedAt it says when the run really ran, without its turns.
	StartedAt time.Time
	// WorkloadID is the stored workload the run raced (Workload), "" for
	// a scenario; retention keeps a workload a kept run names.
	WorkloadID string
	// Replica is the id of the process that runs the race; with replicas
	// sharing a store, only it marks the run interrupted after a restart.
	Replica string
}

// Lane is one transport's side of a run.
type Lane struct {
	RunID, Name, Status string
	Summary             []byte
}

// Turn is one request/response round of a lane.
type Turn struct {
	RunID, Lane   string
	Repeat, Index int
	ResponseID    string
	Timings       []byte // client timings JSON
	Request       []byte // what was sent
	Output        []byte // items returned plus tool outputs
}

// Span is one timed stage of a turn.
type Span struct {
	RunID, Lane          string
	Repeat, TurnIndex    int
	ResponseID           string
	Name, Kind           string
	StartNS, DurationNS  int64
	Items, Tokens, Bytes int64
}

// RunFilter selects runs for ListRuns. Zero fields do not filter; Since is
// inclusive, Until exclusive; Limit defaults to 50 and is capped at 1000.
type RunFilter struct {
	Scenario, Profile string
	Since, Until      time.Time
	Limit             int
}
