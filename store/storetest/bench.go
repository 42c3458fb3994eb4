package storetest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"agentloop/store"
)

// BenchmarkSaveResponse measures a stored save on the chained-HTTP path.
// context=N: a child of a stored parent whose context has N items, adding two
// inputs and one output. chain=N: the turns of agent loops N turns long, each
// turn continuing the previous one (the context grows by three items a turn).
func BenchmarkSaveResponse(b *testing.B, h Harness) {
	for _, size := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("context=%d", size), func(b *testing.B) {
			db := h.Open(b, Options{})
			ctx := context.Background()
			var history []store.Item
			for i := range size {
				history = append(history, Message(fmt.Sprintf("msg_%d", i), "user", strings.Repeat("lorem ipsum ", 20)))
			}
			parent := &store.Response{ID: "resp_parent", Snapshot: []byte(`{}`), Context: history}
			if err := db.SaveResponse(ctx, parent, store.LedgerRow{}); err != nil {
				b.Fatal(err)
			}
			snapshot := bytes.Repeat([]byte("x"), 4096)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r := Child(fmt.Sprintf("resp_%d", i), parent,
					[]store.Item{FunctionCall(fmt.Sprintf("fc_%d", i), "ls"), Message(fmt.Sprintf("msg_in_%d", i), "user", "go on")},
					[]store.Item{Message(fmt.Sprintf("msg_out_%d", i), "assistant", "done")})
				r.Snapshot = snapshot
				if err := db.SaveResponse(ctx, r, store.LedgerRow{Model: "m", Transport: "http", Stored: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, turns := range []int{20, 100} {
		b.Run(fmt.Sprintf("chain=%d", turns), func(b *testing.B) {
			db := h.Open(b, Options{})
			ctx := context.Background()
			snapshot := bytes.Repeat([]byte("x"), 4096)
			var parent *store.Response
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%turns == 0 {
					parent = &store.Response{ID: fmt.Sprintf("resp_%d", i), Snapshot: snapshot,
						Context: []store.Item{Message(fmt.Sprintf("msg_sys_%d", i), "system", strings.Repeat("rules ", 100))}}
					if err := db.SaveResponse(ctx, parent, store.LedgerRow{}); err != nil {
						b.Fatal(err)
					}
					continue
				}
				r := Child(fmt.Sprintf("resp_%d", i), parent,
					[]store.Item{FunctionCall(fmt.Sprintf("fco_%d", i), "ls"), Message(fmt.Sprintf("msg_in_%d", i), "user", strings.Repeat("output ", 50))},
					[]store.Item{FunctionCall(fmt.Sprintf("fc_%d", i), "cat")})
				r.Snapshot = snapshot
				if err := db.SaveResponse(ctx, r, store.LedgerRow{Model: "m", Transport: "http", Stored: true}); err != nil {
					b.Fatal(err)
				}
				parent = r
			}
		})
	}
}

func BenchmarkGetResponse(b *testing.B, h Harness) {
	for _, size := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("context=%d", size), func(b *testing.B) {
			db := h.Open(b, Options{})
			ctx := context.Background()
			var history []store.Item
			for i := range size {
				history = append(history, Message(fmt.Sprintf("msg_%d", i), "user", strings.Repeat("lorem ipsum ", 20)))
			}
			if err := db.SaveResponse(ctx, &store.Response{ID: "resp_1", Snapshot: []byte(`{}`), Context: history}, store.LedgerRow{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := db.GetResponse(ctx, "resp_1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
