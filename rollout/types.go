package rollout

import (
	"time"

	"agentloop/api"
)

// Lane names. Each is one way of talking to the engine (DECISIONS.md).
const (
	LaneHTTP          = "http"           // stateless full input, store:false, /baseline/v1
	LaneHTTPOptimized = "http-optimized" // stateless full input, store:false, /v1 (request-level caches on)
	LaneHTTPChained   = "http-chained"   // previous_response_id, store:true, /v1
	LaneWS            = "ws"             // one WebSocket, warmup, previous_response_id, store:false, /v1
	LanePrototype     = "prototype"
)

// AllLanes in display order.
var AllLanes = []string{LaneHTTP, LaneHTTPOptimized, LaneHTTPChained, LaneWS}

// Statuses of runs and lanes.
const (
	StatusQueued      = "queued"
	StatusRunning     = "running"
	StatusPassed      = "passed"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// Config is everything needed to run (and rerun) a race. It is stored with
// the run. JSON field names are the run API's (DECISIONS.md).
type Config struct {
	Scenario   string   `json:"scenario"`
	Profile    string   `json:"profile"`
	RTTms      float64  `json:"rtt_ms"`
	ToolTimeMs float64  `json:"tool_time_ms"`
	Lanes      []string `json:"lanes"`
	Seed       int64    `json:"seed"`
	Sequential bool     `json:"sequential"`
	Repeats    int      `json:"repeats"`
	// BandwidthKbps limits the proxy's throughput per direction (0 = no limit).
	BandwidthKbps int `json:"bandwidth_kbps,omitempty"`
	// TLS sends the lanes through TLS to the engine, so new connections pay
	// for real handshakes.
	TLS       bool      `json:"tls,omitempty"`
	Stack     api.Stack `json:"stack"`
	DecodeTPS float64   `json:"decode_tps,omitempty"`
}

// RTT and ToolTime as durations.
func (c Config) RTT() time.Duration { return time.Duration(c.RTTms * float64(time.Millisecond)) }
func (c Config) ToolTime() time.Duration {
	return time.Duration(c.ToolTimeMs * float64(time.Millisecond))
}

// Stage names of a turn's waterfall, in order. Engine stages are grouped:
// overhead = parse..safety + finalize (measured), queue/prefill and decode
// (modelled). connect and network come from the client and the proxy; tool is
// the client's tool execution (measured) plus --tool-time (modelled).
const (
	StageConnect  = "connect"
	StageOverhead = "overhead"
	StagePrefill  = "queue_prefill"
	StageDecode   = "decode"
	StageTool     = "tool"
	StageNetwork  = "network"
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
	Lane          string           `json:"lane"`
	Status        string           `json:"status"`
	TotalNS       int64            `json:"total_ns"`
	Turns         int              `json:"turns"`
	InputTokens   int              `json:"input_tokens"`
	CachedTokens  int              `json:"cached_tokens"`
	OutputTokens  int              `json:"output_tokens"`
	CachedShare   float64          `json:"cached_share"`
	BytesSent     int64            `json:"bytes_sent"`
	BytesReceived int64            `json:"bytes_received"`
	MedianOverNS  int64            `json:"median_overhead_ns"`
	StageNS       map[string]int64 `json:"stage_ns"`
	Error         string           `json:"error,omitempty"`
}

// Summary is the end of a race: each lane's summary (median over repeats)
// and speedups: the share of time saved against http and http-optimized.
type Summary struct {
	Lanes            []LaneSummary      `json:"lanes"`
	SavedVsHTTP      map[string]float64 `json:"saved_vs_http"`           // 0.4 = finished 40% sooner
	SavedVsOptimized map[string]float64 `json:"saved_vs_http_optimized"` // same against http-optimized
	Sequential       bool               `json:"sequential"`
	Repeats          int                `json:"repeats"`
}

// Snapshot is what the live feed pushes (at most 20 Hz).
type Snapshot struct {
	RunID     string         `json:"run_id"`
	Status    string         `json:"status"`
	ElapsedNS int64          `json:"elapsed_ns"`
	Config    Config         `json:"config"`
	Lanes     []LaneSnapshot `json:"lanes"`
	Summary   *Summary       `json:"summary,omitempty"`
}

// Final reports whether s is the race's last snapshot: the run has ended
// (passed, failed or interrupted).
func (s Snapshot) Final() bool {
	return s.Status == StatusPassed || s.Status == StatusFailed || s.Status == StatusInterrupted
}

// LaneSnapshot is a lane's live state.
type LaneSnapshot struct {
	Lane         string  `json:"lane"`
	Status       string  `json:"status"`
	Repeat       int     `json:"repeat"`
	Turn         int     `json:"turn"`
	ElapsedNS    int64   `json:"elapsed_ns"`
	Tokens       int     `json:"tokens"` // output tokens so far
	TokensPerSec float64 `json:"tokens_per_sec"`
	Turns        []Turn  `json:"turns"` // finished turns of the current repeat
	Error        string  `json:"error,omitempty"`
}
