package api

// Fault drills (README.md, "Test your client's recovery"): faults the engine injects only when
// armed, to test how a client recovers. The names are the wire names of
// POST /api/drills and serve --drill.
const (
	DrillEvictCache      = "evict-cache"
	DrillConnectionLimit = "connection-limit"
	DrillRefuseUpgrade   = "refuse-upgrade"
	DrillDropMidStream   = "drop-mid-stream"
	DrillStall           = "stall"
	DrillHTTP429         = "http-429"
	DrillHTTP503         = "http-503"
	DrillSlowFirstToken  = "slow-first-token"
)

// DrillNames lists every drill, in the README's order.
var DrillNames = []string{DrillEvictCache, DrillConnectionLimit, DrillRefuseUpgrade, DrillDropMidStream,
	DrillStall, DrillHTTP429, DrillHTTP503, DrillSlowFirstToken}

// SpanDrill is the span of the time a drill held a response back (stall,
// slow-first-token); its Note names the drill.
const SpanDrill = "drill"

// HeaderDrill names, on an HTTP error a drill caused, the drill.
const HeaderDrill = "X-Agentloop-Drill"

// HeaderScope names the scope a request belongs to for scoped drills; a
// WebSocket's upgrade request names it for the whole connection. Without
// it, a request's scope is its prompt_cache_key.
const HeaderScope = "X-Agentloop-Scope"

// DrillSpec arms a drill: POST /api/drills's body and serve --drill.
type DrillSpec struct {
	Drill string `json:"drill"`
	// AfterTurns is how many responses the engine finishes in a session
	// before the drill fires there (for refuse-upgrade: upgrade attempts).
	AfterTurns int `json:"after_turns"`
	// Times is how often the drill fires at most (default 1).
	Times int `json:"times"`
	// DurationMS is how long stall and slow-first-token hold the stream.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// AfterMS is connection-limit's time form: a connection of the
	// drill's scope reaches its limit this many milliseconds after it
	// opened, instead of at a create after after_turns.
	AfterMS int64 `json:"after_ms,omitempty"`
	// Scope, when set, limits the drill to requests of that scope (see
	// HeaderScope).
	Scope string `json:"scope,omitempty"`
	// Status is the status refuse-upgrade answers the handshake with:
	// 426 (the default), or 405 or 404 as some gateways answer.
	Status int `json:"status,omitempty"`
}

// Drill is an armed drill as GET /api/drills lists it.
type Drill struct {
	ID     string `json:"id"`
	Object string `json:"object"` // "drill"
	DrillSpec
	ArmedAt int64         `json:"armed_at"` // Unix seconds
	Fired   int           `json:"fired"`
	Firings []DrillFiring `json:"firings"`
}

// DrillFiring is one time a drill fired: the response it hit (empty when
// it refused the request before it became one), the session, and when.
type DrillFiring struct {
	ResponseID string `json:"response_id,omitempty"`
	Session    string `json:"session,omitempty"`
	// Upgrade marks a refused WebSocket upgrade (refuse-upgrade).
	Upgrade  bool  `json:"upgrade,omitempty"`
	AtUnixNS int64 `json:"at_unix_ns"`
}
