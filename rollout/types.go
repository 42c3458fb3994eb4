package rollout

import (
	"strconv"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/workload"
)

// Lane names. Each is one way of talking to the engine (docs/decisions.md,
// "The race's lanes").
const (
	LaneHTTP          = "http"           // stateless full input, store:false, /baseline/v1
	LaneHTTPOptimized = "http-optimized" // stateless full input, store:false, /v1 (request-level caches on)
	LaneHTTPChained   = "http-chained"   // previous_response_id, store:true, /v1
	LaneWS            = "ws"             // one WebSocket, warmup, previous_response_id, store:false, /v1
	// LanePrototype is the seed's first design, opt-in and experimental: one
	// WebSocket with the legacy beta header, one long-running response that
	// pauses after each function call and resumes with response.append,
	// store:false, /v1. Each of its turns is a segment of that response.
	LanePrototype = "prototype"
)

// AllLanes in display order.
var AllLanes = []string{LaneHTTP, LaneHTTPOptimized, LaneHTTPChained, LaneWS, LanePrototype}

// DefaultLanes are the lanes a race runs when it names none: every lane
// but the experimental prototype, which is opt-in.
var DefaultLanes = []string{LaneHTTP, LaneHTTPOptimized, LaneHTTPChained, LaneWS}

// Statuses of runs and lanes.
const (
	StatusQueued      = "queued"
	StatusRunning     = "running"
	StatusPassed      = "passed"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	StatusCancelled   = "cancelled"
)

// Config is everything needed to run (and rerun) a race. It is stored with
// the run. JSON field names are the run API's (docs/decisions.md, "The run
// API's names are the stored config's").
type Config struct {
	Scenario   string   `json:"scenario"`
	Profile    string   `json:"profile"`
	RTTms      float64  `json:"rtt_ms"`
	ToolTimeMs float64  `json:"tool_time_ms"`
	Lanes      []string `json:"lanes"`
	Seed       int64    `json:"seed,omitempty"`
	Sequential bool     `json:"sequential"`
	// TakeTurns runs the lanes at once, but one step (a request and its
	// tools) at a time across the race, the lane furthest behind on its own
	// clock first: none shares the CPU with another, and each lane's times
	// are on its own clock (turns.go). Not with Sequential.
	TakeTurns bool `json:"take_turns,omitempty"`
	Repeats   int  `json:"repeats,omitempty"`
	// BandwidthKbps limits the proxy's throughput per direction (0 = no limit).
	BandwidthKbps int `json:"bandwidth_kbps,omitempty"`
	// TLS sends the lanes through TLS to the engine, so new connections pay
	// for real handshakes.
	TLS bool `json:"tls,omitempty"`
	// Stack is the modelled API stack every lane asks for (X-Agentloop-Stack
	// on each HTTP request, on the WebSocket's upgrade). The run API takes a
	// preset's name or an object of parameters; Normalize makes it lean
	// when unset.
	Stack apistack.Stack `json:"stack,omitzero"`
	// DecodeTPS, when set, decodes at this rate (tokens/s per stream): the
	// lanes send model "custom-<tps>", which runs spark's profile, so it
	// needs profile spark (which keeps spark's prefill and base time to first
	// token). A whole number from 1 to 100000.
	DecodeTPS float64 `json:"decode_tps,omitempty"`
	// Drills is the race's fault drill schedule: each is armed for every
	// repeat of its lane, scoped to it (drills.go).
	Drills []LaneDrill `json:"drills,omitempty"`
	// Workload, when set, is replayed instead of a scenario (Scenario is
	// then WorkloadScenario); docs/workload.md. It is how a race is asked
	// for (the run API's inline workload, the CLI's file); the runner
	// stores it under its content's id (WorkloadID) and drops it, so a
	// stored run, a live snapshot and a run list never hold it. The race
	// loads it by id when it runs.
	Workload *workload.Workload `json:"workload,omitempty"`
	// WorkloadID is the stored workload's id (its permalink is
	// /api/workloads/{id}); the run API fills Workload from it.
	WorkloadID string `json:"workload_id,omitempty"`
	// WorkloadSummary is the raced workload in a few numbers, set by
	// Normalize: what a run keeps of it besides its id. A value a request
	// gives is replaced.
	WorkloadSummary *workload.Summary `json:"workload_summary,omitempty"`
	// FixedToolTime replays a workload with ToolTimeMs between every two
	// turns instead of its recorded tool times.
	FixedToolTime bool `json:"fixed_tool_time,omitempty"`
	// Reasoning, when set, runs every lane as a reasoning client
	// (reasoning.go); nil: no lane reasons.
	Reasoning *RaceReasoning `json:"reasoning,omitempty"`
	// CompactThreshold, when set, makes every lane ask for compaction
	// once a prompt passes this many tokens (context_management; a
	// workload race only, window.go).
	CompactThreshold int `json:"compact_threshold,omitempty"`
}

// Model is the model name the lanes send: the profile, or custom-<tps>
// when DecodeTPS is set.
func (c Config) Model() string {
	if c.DecodeTPS > 0 {
		return api.CustomModelPrefix + strconv.FormatInt(int64(c.DecodeTPS), 10)
	}
	return c.Profile
}

// The lane orders of a race (Config.Order).
const (
	OrderTogether   = "together"
	OrderSequential = "one after another"
	OrderTakeTurns  = "taking turns"
)

// Order says how the race's lanes run: OrderTogether, OrderSequential or
// OrderTakeTurns.
func (c Config) Order() string {
	switch {
	case c.Sequential:
		return OrderSequential
	case c.TakeTurns:
		return OrderTakeTurns
	}
	return OrderTogether
}

// Overlaps says whether the race's lanes run at the same time, sharing the
// CPU: together, with more than one lane.
func (c Config) Overlaps() bool { return c.Order() == OrderTogether && len(c.Lanes) > 1 }

// RTT and ToolTime as durations.
func (c Config) RTT() time.Duration { return time.Duration(c.RTTms * float64(time.Millisecond)) }
func (c Config) ToolTime() time.Duration {
	return time.Duration(c.ToolTimeMs * float64(time.Millisecond))
}

// Stage names of a turn's waterfall, in order: the waterfall groups of
// api (api.WaterfallGroups). Engine spans are grouped by api.SpanGroup;
// connect and network come from the client and the proxy; tool is the
// client's tool execution (measured) plus --tool-time (modelled).
const (
	StageConnect  = api.GroupConnect
	StageOverhead = api.GroupOverhead
	StageAPIStack = api.GroupAPIStack
	StagePrefill  = api.GroupQueuePrefill
	StageDecode   = api.GroupDecode
	StageTool     = api.GroupTool
	StageNetwork  = api.GroupNetwork
	// StageRecovery is time a fault cost the turn: the client's failed
	// attempts and its waits before retrying (measured), and the time a
	// drill held the stream (stall, slow-first-token; modelled).
	StageRecovery = api.GroupRecovery
)

// StageTime is one part of a turn.
type StageTime struct {
	Name       string `json:"name"`
	DurationNS int64  `json:"duration_ns"`
	Kind       string `json:"kind"` // "measured" or "modelled"
}

// Turn is the client's record of one model response and the tool work after
// it, merged with the engine's trace for the same response.
type Turn struct {
	Lane       string `json:"lane"`
	Repeat     int    `json:"repeat"`
	Index      int    `json:"index"`
	ResponseID string `json:"response_id"`
	// Offsets from the lane's start, in ns.
	SentNS       int64 `json:"sent_ns"`
	FirstEventNS int64 `json:"first_event_ns"`
	FirstTokenNS int64 `json:"first_token_ns"`
	LastTokenNS  int64 `json:"last_token_ns"`
	DoneNS       int64 `json:"done_ns"`
	ToolNS       int64 `json:"tool_ns"`    // tool execution after this response (measured + modelled)
	ConnectNS    int64 `json:"connect_ns"` // connection set-up paid by this request, if any
	// RecoveryNS is the time of the turn's failed attempts and the waits
	// after them (Recoveries), from SentNS, before the attempt that worked.
	RecoveryNS int64      `json:"recovery_ns,omitempty"`
	Recoveries []Recovery `json:"recoveries,omitempty"`
	// Drills are the fault drills that fired during the turn.
	Drills []string `json:"drills,omitempty"`
	// Unix ns when the request was sent (to merge with the engine's trace).
	SentUnixNS    int64       `json:"sent_unix_ns"`
	BytesSent     int64       `json:"bytes_sent"`
	BytesReceived int64       `json:"bytes_received"`
	InputTokens   int         `json:"input_tokens"`
	CachedTokens  int         `json:"cached_tokens"`
	OutputTokens  int         `json:"output_tokens"`
	Stages        []StageTime `json:"stages"`
	// OverheadNS is the engine's measured API overhead (parse..safety + finalize).
	OverheadNS int64  `json:"overhead_ns"`
	Calls      []Call `json:"calls,omitempty"`
	Text       string `json:"text,omitempty"` // assistant text of this response
	Error      string `json:"error,omitempty"`

	// StackWork is the work of each modelled stack stage of the turn, from
	// the engine's trace, so the run can be re-costed under another stack
	// (RunRecord.Recosted).
	StackWork []apistack.Work `json:"stack_work,omitempty"`

	// ReasoningTokens are the reasoning tokens among OutputTokens (a race
	// with Config.Reasoning).
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Call is one tool call of a turn with its real output.
type Call struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Output    string `json:"output"`
}

// LaneSummary sums up one lane of one repeat (or the median over repeats).
type LaneSummary struct {
	Lane string `json:"lane"`
	// Label names the lane on screen (LaneLabel), and Shown is its row of
	// the result table, phrased (summary lanes only): both are set when the
	// summary is built or read, never by a page.
	Label   string     `json:"label,omitempty"`
	Shown   *LaneShown `json:"shown,omitempty"`
	Status  string     `json:"status"`
	TotalNS int64      `json:"total_ns"`
	// MinTotalNS and MaxTotalNS are the spread of TotalNS over the
	// repeats; with repeats, TotalNS is the median repeat's.
	MinTotalNS    int64            `json:"min_total_ns,omitempty"`
	MaxTotalNS    int64            `json:"max_total_ns,omitempty"`
	Turns         int              `json:"turns"`
	InputTokens   int              `json:"input_tokens"`
	CachedTokens  int              `json:"cached_tokens"`
	OutputTokens  int              `json:"output_tokens"`
	CachedShare   float64          `json:"cached_share"`
	BytesSent     int64            `json:"bytes_sent"`
	BytesReceived int64            `json:"bytes_received"`
	MedianOverNS  int64            `json:"median_overhead_ns"`
	StageNS       map[string]int64 `json:"stage_ns"`
	// OverheadPerTurnNS is the engine's measured API overhead (parse..safety
	// + finalize) per turn, the mean over the lane's turns; StackPerTurnNS
	// the modelled API stack (the stack_* spans) per turn.
	OverheadPerTurnNS int64 `json:"overhead_per_turn_ns"`
	StackPerTurnNS    int64 `json:"stack_per_turn_ns"`
	// APICPUNS is the engine's CPU time of API work for the whole rollout:
	// the measured overhead spans summed over every response of the lane
	// (the WebSocket's warm-up included).
	APICPUNS int64 `json:"api_cpu_ns"`
	// RolloutsPerCore is how many such rollouts one core's API work could
	// serve concurrently: TotalNS / APICPUNS (0 when nothing was measured).
	RolloutsPerCore float64 `json:"rollouts_per_core"`
	// TopStages are the lane's two biggest stages, each with its share of
	// the lane's total time.
	TopStages []StageShare `json:"top_stages,omitempty"`
	Error     string       `json:"error,omitempty"`

	// RepeatTotalsNS is each repeat's TotalNS, in repeat order: re-costing
	// shifts each repeat's total by its own turns' change.
	RepeatTotalsNS []int64 `json:"repeat_totals_ns,omitempty"`
}

// StageShare is one stage's time in a lane and its share of the lane's
// total time (0.5 = half).
type StageShare struct {
	Name  string  `json:"name"`
	NS    int64   `json:"ns"`
	Share float64 `json:"share"`
}

// WhatItWouldTake answers "how much more API overhead per turn would
// optimized HTTP need for WebSocket to finish Target sooner here?": the x of
// (T_opt + n·x − T_ws) / (T_opt + n·x) = Target, with n the turns of
// http-optimized. ExtraPerTurnNS ≤ 0 means WebSocket already saves at least
// Target. It sits beside what http-optimized measured per turn (overhead)
// and what the modelled stack added per turn.
type WhatItWouldTake struct {
	Target            float64 `json:"target"`
	Turns             int     `json:"turns"`
	ExtraPerTurnNS    int64   `json:"extra_per_turn_ns"`
	OverheadPerTurnNS int64   `json:"overhead_per_turn_ns"`
	// MedianOverheadNS is http-optimized's median API overhead per turn,
	// the figure its row of the result table shows.
	MedianOverheadNS int64 `json:"median_overhead_ns,omitempty"`
	StackPerTurnNS   int64 `json:"stack_per_turn_ns"`
	OptimizedTotalNS int64 `json:"http_optimized_total_ns"`
	WebSocketTotalNS int64 `json:"ws_total_ns"`
	Already          bool  `json:"already,omitempty"` // ws already saves at least Target
}

// Summary is the end of a race: each lane's summary (median over repeats)
// and speedups: the share of time saved against http and http-optimized.
type Summary struct {
	Lanes            []LaneSummary      `json:"lanes"`
	SavedVsHTTP      map[string]float64 `json:"saved_vs_http"`           // 0.4 = finished 40% sooner
	SavedVsOptimized map[string]float64 `json:"saved_vs_http_optimized"` // same against http-optimized
	Sequential       bool               `json:"sequential"`
	TakeTurns        bool               `json:"take_turns,omitempty"`
	Repeats          int                `json:"repeats"`
	// ElapsedNS is the race's wall time, from its start to its end, every
	// lane and repeat included: the race view's "Elapsed", live and
	// stored alike.
	ElapsedNS int64 `json:"elapsed_ns,omitempty"`
	// Medians says, with repeats, that each lane shows its median repeat
	// and its spread (Show phrases it).
	Medians string `json:"medians,omitempty"`
	// TimeWent says in one sentence where each lane's time went: its two
	// biggest stages, e.g. "ws: queue+prefill 52%, tool 22%".
	TimeWent string `json:"time_went,omitempty"`
	// WhatItWouldTake is set when the race ran http-optimized and ws and
	// both passed.
	WhatItWouldTake *WhatItWouldTake `json:"what_it_would_take,omitempty"`

	// The race's sentences, built once in Go (headline.go) and shown as they
	// are by every page, the CLI and the run API. Headline compares
	// WebSocket with optimized HTTP in plain words, then says what part was
	// measured and what part is modelled, naming the preset and its
	// reading; Split says which waterfall groups the
	// saving came from (SplitParts, which sum exactly to it); StackDoc links
	// to the stack's explanation; WhatItTakes phrases WhatItWouldTake.
	Headline   string      `json:"headline,omitempty"`
	Split      string      `json:"split,omitempty"`
	SplitParts []SplitPart `json:"split_parts,omitempty"`
	// NoiseNS is the machine's noise the split folded small parts under
	// (the SplitNoise part).
	NoiseNS  int64           `json:"noise_threshold_ns,omitempty"`
	Readings []ReadingSaving `json:"readings,omitempty"`
	// Range is the headline's comparison across the readings, or why the
	// race has none: it follows the headline in the details.
	Range string `json:"range,omitempty"`
	// Load is how busy other processes kept the machine during the race
	// (nil where it was not read); Busy warns, from it, when that was
	// enough to move the measured part, and says how it is judged.
	Load        *MachineLoad `json:"load,omitempty"`
	Busy        string       `json:"busy,omitempty"`
	StackDoc    string       `json:"stack_doc,omitempty"`
	WhatItTakes string       `json:"what_it_takes,omitempty"`
}

// Snapshot is what the live feed pushes (at most 20 Hz).
type Snapshot struct {
	RunID     string `json:"run_id"`
	Status    string `json:"status"`
	ElapsedNS int64  `json:"elapsed_ns"`
	// ClockNS is the race clock every runner is drawn at, within the
	// current repeat: lanes taking turns, the smallest own clock among the
	// lanes still running (it never goes back within a repeat); lanes
	// together, the wall clock; one after another, the running lane's own
	// clock. With no lane running, the largest own clock of the repeat. A
	// lane's own clock counts only its own work (LaneSnapshot.ElapsedNS is
	// on it), never its waits for its turn.
	ClockNS int64          `json:"clock_ns"`
	Config  Config         `json:"config"`
	Lanes   []LaneSnapshot `json:"lanes"`
	Summary *Summary       `json:"summary,omitempty"`
	// WaitingBehind is, for a queued race, the run it waits behind.
	WaitingBehind string `json:"waiting_behind,omitempty"`
}

// Final reports whether s is the race's last snapshot: the run has ended
// (passed, failed, interrupted or cancelled).
func (s Snapshot) Final() bool {
	return Ended(s.Status)
}

// Ended says whether a run or lane status is a final one.
func Ended(status string) bool {
	return status == StatusPassed || status == StatusFailed || status == StatusInterrupted || status == StatusCancelled
}

// LaneSnapshot is a lane's live state.
type LaneSnapshot struct {
	Lane         string  `json:"lane"`
	Label        string  `json:"label"` // LaneLabel(Lane)
	Status       string  `json:"status"`
	Repeat       int     `json:"repeat"`
	Turn         int     `json:"turn"`
	ElapsedNS    int64   `json:"elapsed_ns"`
	Tokens       int     `json:"tokens"` // output tokens so far
	TokensPerSec float64 `json:"tokens_per_sec"`
	Turns        []Turn  `json:"turns"` // finished turns of the current repeat
	Error        string  `json:"error,omitempty"`
}
