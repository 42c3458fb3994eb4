package check

import (
	"fmt"
	"strings"
	"time"

	"agentloop/api"
)

// The checks' stable ids.
const (
	ContinuationSendsNewItems        = "continuation-sends-new-items"
	RecoversPreviousResponseNotFound = "recovers-previous-response-not-found"
	ReconnectsAtConnectionLimit      = "reconnects-at-connection-limit"
	HonoursRetryAfter                = "honours-retry-after"
	HandlesConnectionLimitError      = "handles-connection-limit-error"
	FallsBackWhenUpgradeRefused      = "falls-back-when-upgrade-refused"
	SurvivesDropMidStream            = "survives-drop-mid-stream"
	ReadsWrappedErrorFrames          = "reads-wrapped-error-frames"
	OneResponseInFlight              = "one-response-in-flight"
	StoreFalseConsistency            = "store-false-consistency"
	ContinuesTheNewestResponse       = "continues-the-newest-response"
)

// Verdicts.
type Verdict string

const (
	Pass         Verdict = "pass"
	Fail         Verdict = "fail"
	NotExercised Verdict = "not_exercised"
)

// Check is one check of the gauntlet.
type Check struct {
	ID string
	// Passes says, in a sentence, what a client does to pass.
	Passes string
	// Drill is armed in the check's scope (nil: the check watches a run
	// without one). Its after_turns is the turn it fires on.
	Drill func(o Options) *api.DrillSpec
	// Grade reads the run.
	Grade func(r *Observed) Result
}

// Options are the gauntlet's settings that change what a check arms or
// accepts.
type Options struct {
	// FallbackDeadline is how soon after a refused upgrade the client
	// must have finished over HTTP (default 10 s).
	FallbackDeadline time.Duration
	// UpgradeStatus is the status refuse-upgrade answers with: 426
	// (default), 405 or 404.
	UpgradeStatus int
	// RetryAfter is the delay http-429 asks for (retry-after-ms).
	RetryAfter time.Duration
	// IdleLimit is after_ms of the idle connection limit.
	IdleLimit time.Duration
}

// WithDefaults is o with each setting left out at its default.
func (o Options) WithDefaults() Options {
	o.defaults()
	return o
}

func (o *Options) defaults() {
	if o.FallbackDeadline <= 0 {
		o.FallbackDeadline = 10 * time.Second
	}
	if o.UpgradeStatus == 0 {
		o.UpgradeStatus = 426
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 1200 * time.Millisecond
	}
	if o.IdleLimit <= 0 {
		o.IdleLimit = 1500 * time.Millisecond
	}
}

// drillTurn is the after_turns of the checks' drills: a response
// finishes first, so the drill hits a continuation.
const drillTurn = 1

// sessionTurns is K of a check's scope, and of the run the checks without
// a drill share: at least the drill's turn + 2, so the session goes on
// past the drill (docs/protocol.md, "Scopes").
const sessionTurns = drillTurn + 3

// ToolTurns is K of the check's scope: sessionTurns, or idleTurns for the
// idle-limit check.
func (c *Check) ToolTurns() int {
	if c.ID == ReconnectsAtConnectionLimit {
		return idleTurns
	}
	return sessionTurns
}

// idleTurns is K of the idle-limit check: enough turns that a client's
// session outlasts the limit (about 1.5 s); each turn runs the client's
// own tool.
const idleTurns = 12

// All is the gauntlet, in the README's order.
var All = []*Check{
	{ID: ContinuationSendsNewItems, Passes: "on a WebSocket continuation sends only the items after the previous response",
		Grade: gradeContinuation},
	{ID: RecoversPreviousResponseNotFound, Passes: "after the cache is evicted, starts a new chain with its full context (no retry of the same id, no give-up), and finishes the task",
		Drill: func(Options) *api.DrillSpec {
			return &api.DrillSpec{Drill: api.DrillEvictCache, AfterTurns: drillTurn}
		}, Grade: gradeRecovers},
	{ID: ReconnectsAtConnectionLimit, Passes: "when the server closes its connection at the time limit, reconnects and continues with full context",
		Drill: func(o Options) *api.DrillSpec {
			return &api.DrillSpec{Drill: api.DrillConnectionLimit, AfterMS: o.IdleLimit.Milliseconds()}
		}, Grade: gradeReconnects},
	{ID: HonoursRetryAfter, Passes: "after a 429, waits at least the exact delay the drill set (retry-after-ms, not the rounded Retry-After) before retrying",
		Drill: func(o Options) *api.DrillSpec {
			return &api.DrillSpec{Drill: api.DrillHTTP429, AfterTurns: drillTurn, DurationMS: o.RetryAfter.Milliseconds()}
		}, Grade: gradeRetryAfter},
	{ID: HandlesConnectionLimitError, Passes: "when a response.create is answered with websocket_connection_limit_reached, opens a new connection and continues",
		Drill: func(Options) *api.DrillSpec {
			return &api.DrillSpec{Drill: api.DrillConnectionLimit, AfterTurns: drillTurn}
		}, Grade: gradeConnectionLimitError},
	{ID: FallsBackWhenUpgradeRefused, Passes: "when the upgrade is refused, falls back to HTTP and finishes within the deadline",
		Drill: func(o Options) *api.DrillSpec {
			return &api.DrillSpec{Drill: api.DrillRefuseUpgrade, Times: 1000, Status: o.UpgradeStatus}
		}, Grade: gradeFallback},
	{ID: SurvivesDropMidStream, Passes: "after a connection drops mid-response, finishes the task without resending the request whose output had started unless it starts a fresh chain",
		Drill: func(Options) *api.DrillSpec {
			return &api.DrillSpec{Drill: api.DrillDropMidStream, AfterTurns: drillTurn}
		}, Grade: gradeDrop},
	{ID: ReadsWrappedErrorFrames, Passes: "acts on an error frame in the wrapped shape (nested error.code and status): after previous_response_not_found it never sends the same previous_response_id again",
		Drill: func(Options) *api.DrillSpec {
			return &api.DrillSpec{Drill: api.DrillEvictCache, AfterTurns: drillTurn}
		}, Grade: gradeWrapped},
	{ID: OneResponseInFlight, Passes: "never sends a continuation naming a response that is still in flight",
		Grade: gradeInFlight},
	{ID: StoreFalseConsistency, Passes: "never chains over HTTP to a response it created with store:false",
		Grade: gradeStoreFalse},
	// A client that kept one "last response id" per connection resumed an
	// older branch after its tool results; the hosted API answers that
	// continuation without complaint, with the newer turns silently lost.
	{ID: ContinuesTheNewestResponse, Passes: "never continues a response that already has a continuation (an older branch of its own conversation)",
		Grade: gradeNewest},
}

// IDs lists the checks' ids in order.
func IDs() []string {
	out := make([]string, len(All))
	for i, c := range All {
		out[i] = c.ID
	}
	return out
}

// Select returns the checks a comma-separated list names, in the
// gauntlet's order; empty or "all": every check.
func Select(list string) ([]*Check, error) {
	list = strings.TrimSpace(list)
	if list == "" || list == "all" {
		return All, nil
	}
	want := map[string]bool{}
	for _, id := range strings.Split(list, ",") {
		id = strings.TrimSpace(id)
		if Lookup(id) == nil {
			return nil, fmt.Errorf("unknown check %q; the checks are %s", id, strings.Join(IDs(), ", "))
		}
		want[id] = true
	}
	var out []*Check
	for _, c := range All {
		if want[c.ID] {
			out = append(out, c)
		}
	}
	return out, nil
}

// Lookup finds a check by id.
func Lookup(id string) *Check {
	for _, c := range All {
		if c.ID == id {
			return c
		}
	}
	return nil
}
