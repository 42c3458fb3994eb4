// Package storetest is the store contract as tests: one suite, Run, that
// every backend passes (store/sqlite always; store/postgres against a
// throwaway cluster). A backend's tests give Run a Harness: how to open an
// empty database, count rows, hold the write lock from another connection,
// make the storage full, and cut the database off.
//
// The suite covers atomic saves, items stored once, a child surviving its
// parent's delete, the ledger's group commit and durability across close
// and reopen, retention, login sessions, runs, the inspector's sessions,
// workloads, the seal key kept once, conversations and their paging,
// background responses (their states, events, cancel flag, queued cap and
// failure at a replica's stop), and the clear errors of a
// locked, full or unreachable database (store.ErrBusy, store.ErrFull,
// store.ErrUnavailable).
package storetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"agentloop/store"
	"agentloop/store/internal/ledger"
)

// Options are the knobs the suite turns when it opens a database.
type Options struct {
	// LockTimeout bounds a write's wait for a lock another connection
	// holds; zero keeps the backend's default.
	LockTimeout time.Duration
	// Ledger tunes the group-commit writer; zero fields keep the defaults.
	Ledger ledger.Options
}

// WithDefaults fills o's zero fields from the ledger's defaults (the
// backend keeps its own lock timeout default).
func (o Options) WithDefaults() Options {
	d := ledger.Defaults()
	if o.Ledger.Capacity == 0 {
		o.Ledger.Capacity = 1024
	}
	if o.Ledger.Linger == 0 {
		o.Ledger.Linger = d.Linger
	}
	if o.Ledger.MaxBatch == 0 {
		o.Ledger.MaxBatch = d.MaxBatch
	}
	return o
}

// Database is one empty database the suite works in, with the hooks that
// reach past the contract.
type Database struct {
	store.Backend
	// Reopen opens the same database again, after the suite closed it; the
	// harness closes the new one at cleanup.
	Reopen func(t testing.TB) store.Backend
	// Count returns the rows of a table (responses, items, item_refs,
	// usage_ledger, runs, lanes, turns, spans, login_sessions,
	// inspect_sessions, inspect_turns).
	Count func(t testing.TB, table string) int
	// Lock holds the write lock from another connection until release:
	// writes then wait the lock timeout and fail with store.ErrBusy, while
	// reads go on.
	Lock func(t testing.TB) (release func())
	// Fill makes the storage full: the next save of a large response
	// fails with store.ErrFull.
	Fill func(t testing.TB)
	// Cut makes the database unreachable for good; nil for an embedded
	// database, which cannot be.
	Cut func(t testing.TB)
}

// Harness opens databases of one backend.
type Harness struct {
	// Open returns a new, empty database, closed at the test's cleanup
	// unless the test closed it first (closing twice must be harmless).
	Open func(t testing.TB, o Options) *Database
	// OpenUnreachable opens a database whose server does not answer and
	// returns Open's error; nil for an embedded backend.
	OpenUnreachable func(t testing.TB) error
}

// Run runs the whole contract against h's backend, each test in a database
// of its own.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"ResponseChainStoresItemsOnce", testResponseChainStoresItemsOnce},
		{"ChildSurvivesParentDelete", testChildSurvivesParentDelete},
		{"SaveResponseRestoresDeletedItems", testSaveResponseRestoresDeletedItems},
		{"SaveResponseIsAtomic", testSaveResponseIsAtomic},
		{"SaveResponseRejectsBadInputStart", testSaveResponseRejectsBadInputStart},
		{"FindOutputItem", testFindOutputItem},
		{"InputItems", testInputItems},
		{"InputItemsDuplicateIDs", testInputItemsDuplicateIDs},
		{"InputItemsLimits", testInputItemsLimits},
		{"LedgerGroupCommit", testLedgerGroupCommit},
		{"LedgerRowRoundTrip", testLedgerRowRoundTrip},
		{"LedgerCommitsWithoutFlush", testLedgerCommitsWithoutFlush},
		{"LedgerDurableAcrossCloseAndReopen", testLedgerDurableAcrossCloseAndReopen},
		{"LedgerRetriesWhileLocked", testLedgerRetriesWhileLocked},
		{"FlushLedgerHonoursContext", testFlushLedgerHonoursContext},
		{"SweepDeletesOldResponsesAndRunsInBatches", testSweep},
		{"LoginSessions", testLoginSessions},
		{"RunLifecycle", testRunLifecycle},
		{"RunsMissing", testRunsMissing},
		{"UpdateRunRejectsUnknownStatus", testUpdateRunRejectsUnknownStatus},
		{"ListRuns", testListRuns},
		{"MarkInterrupted", testMarkInterrupted},
		{"SaveTurnIsAtomic", testSaveTurnIsAtomic},
		{"InspectSessionsRoundTripAndUpsert", testInspectSessionsRoundTripAndUpsert},
		{"ListInspectSessionsNewestFirst", testListInspectSessionsNewestFirst},
		{"SweepDeletesIdleInspectSessionsWithTheirTurns", testSweepDeletesIdleInspectSessionsWithTheirTurns},
		{"Workloads", testWorkloads},
		{"WorkloadReferences", testWorkloadReferences},
		{"CheckReports", testCheckReports},
		{"Conversations", testConversations},
		{"ConversationPaging", testConversationPaging},
		{"SweepDeletesIdleConversations", testSweepDeletesIdleConversations},
		{"BackgroundLifecycle", testBackgroundLifecycle},
		{"BackgroundQueuedCap", testBackgroundQueuedCap},
		{"MarkBackgroundFailed", testMarkBackgroundFailed},
		{"SweepDeletesFinishedBackground", testSweepDeletesFinishedBackground},
		{"SealKey", testSealKey},
		{"LockedDatabase", testLockedDatabase},
		{"FullDatabase", testFullDatabase},
		{"UnreachableDatabase", testUnreachableDatabase},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each test has a database of its own.
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

// Message is a message item with the given wire id.
func Message(id, role, text string) store.Item {
	return store.Item{ItemID: id, Type: "message",
		JSON: fmt.Appendf(nil, `{"type":"message","id":%q,"role":%q,"content":[{"type":"input_text","text":%q}]}`, id, role, text)}
}

// FunctionCall is a function_call item with the given wire id.
func FunctionCall(id, name string) store.Item {
	return store.Item{ItemID: id, Type: "function_call",
		JSON: fmt.Appendf(nil, `{"type":"function_call","id":%q,"call_id":"call_%s","name":%q,"arguments":"{}"}`, id, id, name)}
}

// Child builds the continuation of parent: its context and output inherited
// (keys kept, so they are reused), then input.
func Child(id string, parent *store.Response, input []store.Item, output []store.Item) *store.Response {
	ctx := append(append(append([]store.Item{}, parent.Context...), parent.Output...), input...)
	return &store.Response{
		ID: id, CreatedAt: parent.CreatedAt + 1, Model: parent.Model, PreviousResponseID: parent.ID,
		Snapshot: fmt.Appendf(nil, `{"id":%q,"object":"response"}`, id), Tools: []byte(`[]`),
		Context: ctx, InputStart: len(ctx) - len(input), Output: output, RenderedTokens: 10 * len(ctx),
	}
}

// saveChain stores resp_1 → resp_2 → resp_3, each adding one input and one
// output item.
func saveChain(t *testing.T, db store.Backend) []*store.Response {
	t.Helper()
	ctx := context.Background()
	r1 := &store.Response{ID: "resp_1", CreatedAt: 1700000000, Model: "agentloop-small",
		Snapshot: []byte(`{"id":"resp_1","object":"response"}`), Tools: []byte(`[{"type":"function","name":"read"}]`),
		Context: []store.Item{Message("msg_u1", "user", "list files")}, Output: []store.Item{FunctionCall("fc_1", "ls")}, RenderedTokens: 7}
	if err := db.SaveResponse(ctx, r1, store.LedgerRow{Model: r1.Model, Transport: "http", Engine: "test", Stored: true}); err != nil {
		t.Fatal(err)
	}
	r2 := Child("resp_2", r1, []store.Item{{ItemID: "fco_1", Type: "function_call_output", JSON: []byte(`{"type":"function_call_output","call_id":"call_fc_1","output":"a.go"}`)}},
		[]store.Item{Message("msg_a2", "assistant", "one file")})
	if err := db.SaveResponse(ctx, r2, store.LedgerRow{Model: r2.Model, Transport: "http", Stored: true}); err != nil {
		t.Fatal(err)
	}
	r3 := Child("resp_3", r2, []store.Item{Message("msg_u3", "user", "thanks")}, []store.Item{Message("msg_a3", "assistant", "welcome")})
	if err := db.SaveResponse(ctx, r3, store.LedgerRow{Model: r3.Model, Transport: "http", Stored: true}); err != nil {
		t.Fatal(err)
	}
	return []*store.Response{r1, r2, r3}
}

func sameItems(t *testing.T, what string, got, want []store.Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d items, want %d", what, len(got), len(want))
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Key != w.Key || g.ItemID != w.ItemID || g.Type != w.Type || !bytes.Equal(g.JSON, w.JSON) {
			t.Errorf("%s[%d] = {%d %q %q %s}, want {%d %q %q %s}", what, i, g.Key, g.ItemID, g.Type, g.JSON, w.Key, w.ItemID, w.Type, w.JSON)
		}
	}
}

func sameResponse(t *testing.T, got, want *store.Response) {
	t.Helper()
	if got.ID != want.ID || got.CreatedAt != want.CreatedAt || got.Model != want.Model ||
		got.PreviousResponseID != want.PreviousResponseID || got.InputStart != want.InputStart ||
		got.RenderedTokens != want.RenderedTokens || !bytes.Equal(got.Snapshot, want.Snapshot) || !bytes.Equal(got.Tools, want.Tools) {
		t.Errorf("response %s: got %+v, want %+v", want.ID, *got, *want)
	}
	sameItems(t, want.ID+" context", got.Context, want.Context)
	sameItems(t, want.ID+" output", got.Output, want.Output)
}
