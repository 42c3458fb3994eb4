package storetest

import (
	"bytes"
	"context"
	"sync"
	"testing"
)

// testSealKey: the first key asked for is stored and every later ask gets
// it, whatever key it offers: after a reopen, and when many ask at once
// (replicas starting together); a sweep keeps it.
func testSealKey(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	first := bytes.Repeat([]byte{1}, 32)
	got, err := db.SealKey(ctx, first)
	if err != nil || !bytes.Equal(got, first) {
		t.Fatalf("first SealKey = %x, %v; want the fresh key %x", got, err, first)
	}
	if got, err := db.SealKey(ctx, bytes.Repeat([]byte{2}, 32)); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("second SealKey = %x, %v; want the stored key %x", got, err, first)
	}
	if _, err := db.SealKey(ctx, nil); err == nil {
		t.Fatal("SealKey with no fresh key succeeded")
	}

	var wg sync.WaitGroup
	keys := make([][]byte, 8)
	errs := make([]error, len(keys))
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = db.SealKey(ctx, bytes.Repeat([]byte{byte(10 + i)}, 32)) })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil || !bytes.Equal(keys[i], first) {
			t.Fatalf("concurrent SealKey %d = %x, %v; want %x", i, keys[i], errs[i], first)
		}
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again := db.Reopen(t)
	if got, err := again.SealKey(ctx, bytes.Repeat([]byte{3}, 32)); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("SealKey after reopening = %x, %v; want the stored key %x", got, err, first)
	}
}
