package store

import (
	"context"
	"time"
)

// Backend is everything a store backend implements: what the engine, the
// race runner, the playground and the logins each need (they declare their
// own smaller interfaces), and the upkeep the app runs (retention, the
// integrity check, closing). store/storetest checks a backend against it.
type Backend interface {
	// Stored responses and their items.
	SaveResponse(ctx context.Context, r *Response, ledger LedgerRow) error
	GetResponse(ctx context.Context, id string) (*Response, error)
	DeleteResponse(ctx context.Context, id string) error
	FindOutputItem(ctx context.Context, itemID string) (Item, error)
	InputItems(ctx context.Context, id, after string, limit int, order string) ([]Item, bool, error)

	// The usage ledger: AppendLedger queues a store:false row, durable
	// within the ledger's DurabilityWindow (store/internal/ledger) and at Close.
	AppendLedger(row LedgerRow)
	FlushLedger(ctx context.Context) error
	LedgerRows(ctx context.Context, responseID string) ([]LedgerRow, error)

	// Runs of races.
	CreateRun(ctx context.Context, r *Run) error
	UpdateRun(ctx context.Context, id, status string, summary []byte) error
	SaveLane(ctx context.Context, l *Lane) error
	SaveTurn(ctx context.Context, t *Turn, spans []Span) error
	GetRun(ctx context.Context, id string) (*Run, []Lane, error)
	RunTurns(ctx context.Context, runID string) ([]Turn, []Span, error)
	// ListRuns returns the runs f selects, newest first, and their lanes
	// (by run, in the order each run's lanes were first saved), in two
	// queries whatever the number of runs.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, []Lane, error)
	DeleteRun(ctx context.Context, id string) error
	// MarkInterrupted is called at start-up: the queued and running runs
	// of this replica, and those of any replica created before
	// staleBefore, become interrupted with their lanes.
	MarkInterrupted(ctx context.Context, replica string, staleBefore time.Time) (int, error)

	// Browser logins.
	CreateSession(ctx context.Context, s Session) error
	GetSession(ctx context.Context, id string) (Session, error)
	DeleteSession(ctx context.Context, id string) error
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)

	// The inspector's client sessions and their turns.
	SaveInspect(ctx context.Context, sessions []InspectSession, turns []InspectTurn) error
	ListInspectSessions(ctx context.Context, limit int) ([]InspectSession, error)
	LoadInspectSession(ctx context.Context, id string) (*InspectSession, []InspectTurn, error)

	// Workloads (docs/workload.md): stored once under their content's id
	// (saving the same id again refreshes its time), read by id, listed
	// newest first, deleted by id (ErrInUse while a run names it) or by
	// the sweep, which keeps every workload a kept record names.
	SaveWorkload(ctx context.Context, w *Workload) error
	GetWorkload(ctx context.Context, id string) (*Workload, error)
	ListWorkloads(ctx context.Context, limit int) ([]Workload, error)
	DeleteWorkload(ctx context.Context, id string) error

	// Report cards of `agentloop check` (README "Grade your client"):
	// saved once under their id, read by id, listed newest first without
	// their JSON, swept like runs.
	SaveCheckReport(ctx context.Context, r *CheckReport) error
	GetCheckReport(ctx context.Context, id string) (*CheckReport, error)
	ListCheckReports(ctx context.Context, limit int) ([]CheckReport, error)

	// Conversations (docs/protocol.md "Conversations"): created with their
	// first items, items appended in order (each item's Key becomes its
	// position), listed a page at a time, read and deleted by wire id.
	CreateConversation(ctx context.Context, c *Conversation, items []Item) error
	GetConversation(ctx context.Context, id string) (*Conversation, error)
	UpdateConversation(ctx context.Context, id string, metadata []byte) (*Conversation, error)
	DeleteConversation(ctx context.Context, id string) error
	AppendConversationItems(ctx context.Context, id string, items []Item) error
	ConversationItems(ctx context.Context, id string, p ConversationPage) ([]Item, bool, error)
	GetConversationItem(ctx context.Context, id, itemID string) (Item, error)
	DeleteConversationItem(ctx context.Context, id, itemID string) error

	// Background responses (docs/protocol.md "Background responses"):
	// their state, cancel flag and events, so any replica answers a poll,
	// a cancel or a resumed stream. CreateBackground refuses a client's
	// response past maxQueued queued ones with ErrTooMany; UpdateBackground
	// moves only an open response; MarkBackgroundFailed is called at
	// start-up (this replica's) and by a live replica (any whose heartbeat
	// is older than staleBefore).
	CreateBackground(ctx context.Context, b *Background, maxQueued int) error
	GetBackground(ctx context.Context, id string) (*Background, error)
	UpdateBackground(ctx context.Context, id, status string, snapshot, failedSnapshot []byte) error
	AppendBackgroundEvents(ctx context.Context, id string, events []BackgroundEvent) error
	BackgroundEvents(ctx context.Context, id string, after, limit int) ([]BackgroundEvent, error)
	RequestCancel(ctx context.Context, id string) (*Background, error)
	BackgroundHeartbeat(ctx context.Context, replica string, ids []string, now time.Time) (cancelled []string, err error)
	MarkBackgroundFailed(ctx context.Context, replica string, staleBefore time.Time) (int, error)
	DeleteBackground(ctx context.Context, id string) error

	// SealKey returns the key that seals the server's blobs (package
	// seal), storing fresh when none is stored yet: generated once, by the
	// first server to ask, and the same for every server sharing the
	// database.
	SealKey(ctx context.Context, fresh []byte) ([]byte, error)

	// Upkeep.
	Ping(ctx context.Context) error // the database answers (readiness)
	Sweep(ctx context.Context, cutoff time.Time) (Swept, error)
	IntegrityCheck(ctx context.Context) error
	Close() error
}

// Swept counts what a retention sweep deleted.
type Swept struct {
	Responses, Runs int
	Sessions        int // the inspector's client sessions, with their turns
	Traces          int // traces kept in the store (PostgreSQL, for replicas)
	Workloads       int
	Conversations   int // idle since the cutoff, with their items
	Background      int // background responses, with their events
	CheckReports    int // report cards of agentloop check
}

// RetentionBatch is how many rows one sweep transaction deletes at most, so
// a sweep never holds the database for long.
const RetentionBatch = 100
