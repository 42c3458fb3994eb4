package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"agentloop/store"
)

func testResponseChainStoresItemsOnce(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	chain := saveChain(t, db)

	// Six distinct items: each response added one input and one output.
	if got := db.Count(t, "items"); got != 6 {
		t.Errorf("items = %d, want 6 (each stored once)", got)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
	seen := map[int64]bool{}
	for _, r := range chain {
		for _, it := range append(append([]store.Item{}, r.Context...), r.Output...) {
			if it.Key == 0 {
				t.Errorf("%s: item %q has no key after save", r.ID, it.ItemID)
			}
			seen[it.Key] = true
		}
	}
	if len(seen) != 6 {
		t.Errorf("%d distinct keys written back, want 6", len(seen))
	}
	for _, want := range chain {
		got, err := db.GetResponse(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameResponse(t, got, want)
	}
	// The chain's ledger rows went in with the responses.
	for _, r := range chain {
		rows, err := db.LedgerRows(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || !rows[0].Stored || rows[0].ResponseID != r.ID {
			t.Errorf("ledger of %s = %+v, want one stored row", r.ID, rows)
		}
	}
	if _, err := db.GetResponse(ctx, "resp_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing response: got %v, want store.ErrNotFound", err)
	}
}

func testChildSurvivesParentDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	steps := []struct {
		name      string
		deletes   []string
		readable  []int // indexes into the chain that must still read back intact
		gone      []string
		wantItems int
	}{
		// Parent deleted: the child owns its full context, so nothing shared goes.
		{"parent", []string{"resp_2"}, []int{0, 2}, []string{"resp_2"}, 6},
		{"root and parent", []string{"resp_1", "resp_2"}, []int{2}, []string{"resp_1", "resp_2"}, 6},
		// The leaf's own input and output are referenced by no one else.
		{"leaf", []string{"resp_3"}, []int{0, 1}, []string{"resp_3"}, 4},
		{"leaf then parent", []string{"resp_3", "resp_2"}, []int{0}, []string{"resp_2", "resp_3"}, 2},
		{"all", []string{"resp_2", "resp_1", "resp_3"}, nil, []string{"resp_1", "resp_2", "resp_3"}, 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			db := h.Open(t, Options{})
			chain := saveChain(t, db)
			for _, id := range s.deletes {
				if err := db.DeleteResponse(ctx, id); err != nil {
					t.Fatalf("delete %s: %v", id, err)
				}
			}
			for _, i := range s.readable {
				got, err := db.GetResponse(ctx, chain[i].ID)
				if err != nil {
					t.Fatalf("%s after deletes: %v", chain[i].ID, err)
				}
				sameResponse(t, got, chain[i])
			}
			for _, id := range s.gone {
				if _, err := db.GetResponse(ctx, id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("deleted %s: got %v, want store.ErrNotFound", id, err)
				}
				if err := db.DeleteResponse(ctx, id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("second delete of %s: got %v, want store.ErrNotFound", id, err)
				}
			}
			if got := db.Count(t, "items"); got != s.wantItems {
				t.Errorf("items = %d, want %d", got, s.wantItems)
			}
			if err := db.IntegrityCheck(ctx); err != nil {
				t.Error(err)
			}
			if got := db.Count(t, "item_refs"); got != s.wantItems {
				t.Errorf("item_refs = %d, want %d", got, s.wantItems)
			}
		})
	}
}

// A continuation whose ancestor was deleted meanwhile still saves: the keys
// it holds point at removed items, which are stored again.
func testSaveResponseRestoresDeletedItems(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	r1 := &store.Response{ID: "resp_1", Snapshot: []byte(`{}`), Context: []store.Item{Message("msg_u1", "user", "hi")},
		Output: []store.Item{Message("msg_a1", "assistant", "hello")}}
	if err := db.SaveResponse(ctx, r1, store.LedgerRow{}); err != nil {
		t.Fatal(err)
	}
	staleKey := r1.Output[0].Key
	if err := db.DeleteResponse(ctx, "resp_1"); err != nil {
		t.Fatal(err)
	}
	if got := db.Count(t, "items"); got != 0 {
		t.Fatalf("items after deleting the only response = %d, want 0", got)
	}
	r2 := Child("resp_2", r1, []store.Item{Message("msg_u2", "user", "again")}, nil)
	if err := db.SaveResponse(ctx, r2, store.LedgerRow{}); err != nil {
		t.Fatalf("save over deleted ancestor: %v", err)
	}
	if r2.Context[1].Key == staleKey {
		t.Errorf("a removed item's key %d was reused", staleKey)
	}
	got, err := db.GetResponse(ctx, "resp_2")
	if err != nil {
		t.Fatal(err)
	}
	sameResponse(t, got, r2)
}

func testSaveResponseIsAtomic(t *testing.T, h Harness) {
	ctx := context.Background()
	cases := []struct {
		name string
		// make returns a response whose save must fail after its new items
		// were inserted.
		make    func(chain []*store.Response) *store.Response
		wantErr error
	}{
		{"duplicate id", func(chain []*store.Response) *store.Response {
			return Child("resp_2", chain[2], []store.Item{Message("msg_new", "user", "x")}, []store.Item{Message("msg_out", "assistant", "y")})
		}, store.ErrExists},
		{"context cancelled before the save", func(chain []*store.Response) *store.Response {
			return Child("resp_4", chain[2], []store.Item{Message("msg_new", "user", "x")}, nil)
		}, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := h.Open(t, Options{})
			chain := saveChain(t, db)
			before := map[string]int{}
			tables := []string{"responses", "items", "item_refs", "usage_ledger"}
			for _, tb := range tables {
				before[tb] = db.Count(t, tb)
			}
			r := c.make(chain)
			saveCtx := ctx
			if c.wantErr == context.Canceled {
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				saveCtx = cctx
			}
			err := db.SaveResponse(saveCtx, r, store.LedgerRow{Model: "m"})
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("got %v, want %v", err, c.wantErr)
			}
			for _, tb := range tables {
				if got := db.Count(t, tb); got != before[tb] {
					t.Errorf("%s: %d rows after a failed save, want %d", tb, got, before[tb])
				}
			}
			for _, it := range r.Context[r.InputStart:] {
				if it.Key != 0 {
					t.Errorf("item %q got key %d from a failed save", it.ItemID, it.Key)
				}
			}
			got, err := db.GetResponse(ctx, "resp_2")
			if err != nil {
				t.Fatal(err)
			}
			sameResponse(t, got, chain[1])
		})
	}
}

func testSaveResponseRejectsBadInputStart(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	for _, start := range []int{-1, 2} {
		r := &store.Response{ID: "resp_x", Snapshot: []byte(`{}`), Context: []store.Item{Message("m", "user", "x")}, InputStart: start}
		if err := db.SaveResponse(context.Background(), r, store.LedgerRow{}); err == nil {
			t.Errorf("input start %d accepted for a context of 1", start)
		}
	}
	if got := db.Count(t, "items"); got != 0 {
		t.Errorf("items = %d after rejected saves", got)
	}
}

func testFindOutputItem(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	chain := saveChain(t, db)
	// A later response whose output reuses an id: the newest wins.
	again := FunctionCall("fc_1", "cat")
	r4 := Child("resp_4", chain[2], []store.Item{Message("msg_in", "user", "only input")}, []store.Item{again})
	if err := db.SaveResponse(ctx, r4, store.LedgerRow{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		id      string
		want    *store.Item
		missing bool
	}{
		{"msg_a2", &chain[1].Output[0], false},
		{"fc_1", &r4.Output[0], false},
		{"msg_in", nil, true}, // an input item, not something the engine created
		{"msg_u1", nil, true}, // likewise
		{"fc_404", nil, true}, // never stored
		{"", nil, true},       // empty ids never match
	}
	for _, c := range cases {
		got, err := db.FindOutputItem(ctx, c.id)
		if c.missing {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%q: got %+v, %v; want store.ErrNotFound", c.id, got, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.id, err)
		}
		sameItems(t, c.id, []store.Item{got}, []store.Item{*c.want})
	}
}

func testInputItems(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	parent := &store.Response{ID: "resp_p", Snapshot: []byte(`{}`), Context: []store.Item{Message("in_p", "user", "parent")},
		Output: []store.Item{Message("out_p", "assistant", "ok")}}
	if err := db.SaveResponse(ctx, parent, store.LedgerRow{}); err != nil {
		t.Fatal(err)
	}
	var own []store.Item
	for i := range 5 {
		own = append(own, Message(fmt.Sprintf("in%d", i), "user", "x"))
	}
	r := Child("resp_c", parent, own, nil)
	if err := db.SaveResponse(ctx, r, store.LedgerRow{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, after, order string
		limit              int
		want               string // item ids, comma-separated
		more               bool
		err                error
	}{
		{"asc first page", "", "asc", 2, "in0,in1", true, nil},
		{"asc second page", "in1", "asc", 2, "in2,in3", true, nil},
		{"asc last page", "in3", "asc", 2, "in4", false, nil},
		{"asc exact fit", "in2", "asc", 2, "in3,in4", false, nil},
		{"asc after last", "in4", "asc", 2, "", false, nil},
		{"desc default order", "", "", 0, "in4,in3,in2,in1,in0", false, nil},
		{"desc page", "in3", "desc", 2, "in2,in1", true, nil},
		{"desc last page", "in1", "desc", 5, "in0", false, nil},
		{"inherited item is no cursor", "in_p", "asc", 2, "", false, store.ErrNotFound},
		{"unknown cursor", "in9", "desc", 2, "", false, store.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			items, more, err := db.InputItems(ctx, "resp_c", c.after, c.limit, c.order)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("got %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, it := range items {
				ids = append(ids, it.ItemID)
			}
			if got := strings.Join(ids, ","); got != c.want || more != c.more {
				t.Errorf("got %q more=%v, want %q more=%v", got, more, c.want, c.more)
			}
		})
	}
	if _, _, err := db.InputItems(ctx, "resp_missing", "", 10, "asc"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing response: got %v, want store.ErrNotFound", err)
	}
	if _, _, err := db.InputItems(ctx, "resp_c", "", 10, "sideways"); err == nil {
		t.Error("order \"sideways\" accepted")
	}
}

// Clients may send the same id twice; the cursor then resolves to the last
// occurrence in listing order, so paging moves forward.
func testInputItemsDuplicateIDs(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	input := []store.Item{Message("a", "user", "1"), Message("b", "user", "2"), Message("a", "user", "3"), Message("c", "user", "4")}
	if err := db.SaveResponse(ctx, &store.Response{ID: "resp_dup", Snapshot: []byte(`{}`), Context: input}, store.LedgerRow{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		order, want string
	}{
		{"asc", `{"type":"message","id":"c","role":"user","content":[{"type":"input_text","text":"4"}]}`},
		{"desc", ""},
	}
	for _, c := range cases {
		items, more, err := db.InputItems(ctx, "resp_dup", "a", 10, c.order)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, string(it.JSON))
		}
		if strings.Join(got, "|") != c.want || more {
			t.Errorf("%s after a: got %q more=%v, want %q", c.order, got, more, c.want)
		}
	}
}

func testInputItemsLimits(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	var input []store.Item
	for i := range 130 {
		input = append(input, Message(fmt.Sprintf("in%03d", i), "user", "x"))
	}
	if err := db.SaveResponse(ctx, &store.Response{ID: "resp_big", Snapshot: []byte(`{}`), Context: input}, store.LedgerRow{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		limit, want int
		first       string
	}{
		{0, 20, "in129"},
		{-5, 1, "in129"},
		{1000, 100, "in129"},
		{100, 100, "in129"},
	}
	for _, c := range cases {
		items, more, err := db.InputItems(ctx, "resp_big", "", c.limit, "desc")
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != c.want || !more || items[0].ItemID != c.first {
			t.Errorf("limit %d: %d items (first %q) more=%v, want %d (first %q) more=true", c.limit, len(items), items[0].ItemID, more, c.want, c.first)
		}
	}
	// Paging through everything visits each item once.
	var seen []string
	after := ""
	for {
		items, more, err := db.InputItems(ctx, "resp_big", after, 7, "asc")
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			seen = append(seen, it.ItemID)
		}
		if !more {
			break
		}
		after = items[len(items)-1].ItemID
	}
	if len(seen) != 130 || seen[0] != "in000" || seen[129] != "in129" {
		t.Errorf("paged %d items (%v … %v), want 130 in order", len(seen), seen[:1], seen[len(seen)-1:])
	}
}
