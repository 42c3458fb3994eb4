package store

import "time"

// Conversation is a stored conversation (the Conversations API,
// docs/protocol.md "Conversations"): its metadata, and its items in the
// order they were added, each kept as the wire JSON it is listed as.
type Conversation struct {
	ID        string
	CreatedAt int64  // unix seconds
	Metadata  []byte // a JSON object
}

// ConversationPage asks for a page of a conversation's items: after is
// the wire id of the last item of the previous page ("" for the first),
// Limit is clamped to 1..100 (0 means 20, -1 means every item), Order is
// "asc" or "desc" ("" means "desc").
type ConversationPage struct {
	After string
	Limit int
	Order string
}

// Background is the state of a background response (docs/protocol.md,
// "Background responses"), kept in the store so that any replica answers
// a poll or a cancel: the replica running it, the client it counts
// against, its status and snapshot, and its cancel flag.
type Background struct {
	ID        string
	CreatedAt time.Time
	Replica   string // the replica that runs it
	Client    string // who created it: the queued cap counts per client
	Status    string // queued, in_progress, then a terminal status
	// CancelRequested is set by a cancel on any replica; the replica
	// running it sees it at its next heartbeat.
	CancelRequested bool
	Heartbeat       time.Time // the running replica's last sign of life
	Snapshot        []byte    // the Response JSON as a poll answers it
	// FailedSnapshot is what Snapshot becomes, whole, if its replica stops
	// before the response ends (MarkBackgroundFailed).
	FailedSnapshot []byte
}

// BackgroundStatuses are a background response's statuses; the first two
// are open, the rest terminal.
var BackgroundStatuses = []string{"queued", "in_progress", "completed", "incomplete", "failed", "cancelled"}

// Open says whether a background status is not yet terminal.
func (b *Background) Open() bool { return b.Status == "queued" || b.Status == "in_progress" }

// BackgroundEvent is one streamed event of a background response, kept so
// that a stream resumes after any sequence number, on any replica.
type BackgroundEvent struct {
	Seq  int
	Type string
	Data []byte // the event's JSON
}
