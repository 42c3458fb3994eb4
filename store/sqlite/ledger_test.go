package sqlite

import (
	"context"
	"testing"

	"agentloop/store"
)

func BenchmarkAppendLedger(b *testing.B) {
	db, _ := openTest(b, func(o *options) { o.ledger.Capacity = 65536 })
	row := store.LedgerRow{ResponseID: "resp_1", CreatedAt: 1700000001, Model: "agentloop-small", Transport: "ws", Engine: "agentloop", InputTokens: 101, CachedTokens: 1, OutputTokens: 7}
	b.ReportAllocs()
	for b.Loop() {
		db.AppendLedger(row)
	}
	b.StopTimer()
	if err := db.FlushLedger(context.Background()); err != nil {
		b.Fatal(err)
	}
}
