package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"agentloop/store"
	"agentloop/store/internal/ledger"
)

func ledgerRow(i int) store.LedgerRow {
	return store.LedgerRow{ResponseID: fmt.Sprintf("resp_%d", i), CreatedAt: int64(1700000000 + i), Model: "agentloop-small",
		Transport: "ws", Engine: "agentloop", InputTokens: 100 + i, CachedTokens: i, OutputTokens: 7, Stored: i%2 == 0}
}

func testLedgerGroupCommit(t *testing.T, h Harness) {
	cases := []struct {
		name     string
		writers  int
		perEach  int
		capacity int
		maxBatch int
	}{
		{"one writer", 1, 500, 1024, 4096},
		// A tiny queue makes appenders wait for room: back-pressure, no loss.
		{"concurrent writers, tiny queue", 8, 100, 4, 4096},
		{"batches split by size", 4, 100, 64, 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := h.Open(t, Options{Ledger: ledger.Options{Capacity: c.capacity, MaxBatch: c.maxBatch}})
			var wg sync.WaitGroup
			for w := range c.writers {
				wg.Go(func() {
					for i := range c.perEach {
						db.AppendLedger(ledgerRow(w*c.perEach + i))
					}
				})
			}
			wg.Wait()
			if err := db.FlushLedger(context.Background()); err != nil {
				t.Fatal(err)
			}
			rows, err := db.LedgerRows(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			want := c.writers * c.perEach
			if len(rows) != want {
				t.Fatalf("%d durable rows after flush, want %d", len(rows), want)
			}
			seen := map[string]bool{}
			for _, r := range rows {
				seen[r.ResponseID] = true
			}
			if len(seen) != want {
				t.Errorf("%d distinct rows, want %d", len(seen), want)
			}
		})
	}
}

func testLedgerRowRoundTrip(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	want := []store.LedgerRow{ledgerRow(1), ledgerRow(2), ledgerRow(1)}
	for _, r := range want {
		db.AppendLedger(r)
	}
	if err := db.FlushLedger(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := db.LedgerRows(ctx, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[2] {
		t.Errorf("rows of resp_1 = %+v, want %+v", got, []store.LedgerRow{want[0], want[2]})
	}
}

// Rows become durable on their own, without a flush: the test waits for
// the state, with a generous deadline, not for a moment.
func testLedgerCommitsWithoutFlush(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	db.AppendLedger(ledgerRow(1))
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := db.LedgerRows(context.Background(), "resp_1")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("ledger row never became durable without a flush")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close commits what is queued: after a reopen every row is there, and a
// stored response's row with it.
func testLedgerDurableAcrossCloseAndReopen(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	if err := db.SaveResponse(ctx, &store.Response{ID: "resp_stored", Snapshot: []byte(`{}`)}, store.LedgerRow{Model: "m", Stored: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		db.AppendLedger(ledgerRow(i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// After close the ledger refuses politely.
	db.AppendLedger(ledgerRow(999))
	if err := db.FlushLedger(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("flush after close: got %v, want store.ErrClosed", err)
	}

	again := db.Reopen(t)
	rows, err := again.LedgerRows(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 301 {
		t.Errorf("%d rows after close and reopen, want 301", len(rows))
	}
	if _, err := again.GetResponse(ctx, "resp_stored"); err != nil {
		t.Errorf("stored response after reopen: %v", err)
	}
}

// While the database is locked the batch is kept and retried, not dropped.
func testLedgerRetriesWhileLocked(t *testing.T, h Harness) {
	db := h.Open(t, Options{LockTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	release := db.Lock(t)
	for i := range 10 {
		db.AppendLedger(ledgerRow(i))
	}
	err := db.FlushLedger(ctx)
	if !errors.Is(err, store.ErrBusy) {
		t.Fatalf("flush while locked: got %v, want store.ErrBusy", err)
	}
	release()
	db.AppendLedger(ledgerRow(10))
	if err := db.FlushLedger(ctx); err != nil {
		t.Fatalf("flush after unlock: %v", err)
	}
	rows, err := db.LedgerRows(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 11 {
		t.Errorf("%d rows, want 11: rows were lost while the database was locked", len(rows))
	}
}

func testFlushLedgerHonoursContext(t *testing.T, h Harness) {
	db := h.Open(t, Options{LockTimeout: 500 * time.Millisecond})
	db.Lock(t)
	db.AppendLedger(ledgerRow(1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.FlushLedger(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}
