package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"agentloop/store"
)

// testConversations: a conversation is created with its first items,
// read, updated, appended to in order, and deleted with its items; a
// missing one is store.ErrNotFound everywhere.
func testConversations(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	first := []store.Item{Message("msg_1", "user", "hello"), Message("msg_2", "assistant", "hi")}
	c := &store.Conversation{ID: "conv_1", CreatedAt: 1700000000, Metadata: []byte(`{"topic":"demo"}`)}
	if err := db.CreateConversation(ctx, c, first); err != nil {
		t.Fatal(err)
	}
	if first[0].Key != 0 || first[1].Key != 1 {
		t.Errorf("positions = %d, %d; want 0, 1", first[0].Key, first[1].Key)
	}
	if err := db.CreateConversation(ctx, c, nil); !errors.Is(err, store.ErrExists) {
		t.Errorf("second create: %v, want ErrExists", err)
	}
	got, err := db.GetConversation(ctx, "conv_1")
	if err != nil || got.CreatedAt != c.CreatedAt || string(got.Metadata) != `{"topic":"demo"}` {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if got, err = db.UpdateConversation(ctx, "conv_1", []byte(`{"topic":"new"}`)); err != nil || string(got.Metadata) != `{"topic":"new"}` || got.CreatedAt != c.CreatedAt {
		t.Fatalf("update = %+v, %v", got, err)
	}
	more := []store.Item{Message("msg_3", "user", "again")}
	if err := db.AppendConversationItems(ctx, "conv_1", more); err != nil || more[0].Key != 2 {
		t.Fatalf("append: key %d, %v", more[0].Key, err)
	}
	all, _, err := db.ConversationItems(ctx, "conv_1", store.ConversationPage{Limit: -1, Order: "asc"})
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, "items", all, append(append([]store.Item{}, first...), more...))
	it, err := db.GetConversationItem(ctx, "conv_1", "msg_2")
	if err != nil || it.ItemID != "msg_2" || it.Key != 1 {
		t.Fatalf("get item = %+v, %v", it, err)
	}
	if err := db.DeleteConversationItem(ctx, "conv_1", "msg_2"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetConversationItem(ctx, "conv_1", "msg_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted item: %v, want ErrNotFound", err)
	}
	if err := db.DeleteConversationItem(ctx, "conv_1", "msg_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete twice: %v, want ErrNotFound", err)
	}
	if err := db.DeleteConversation(ctx, "conv_1"); err != nil {
		t.Fatal(err)
	}
	if n := db.Count(t, "conversation_items"); n != 0 {
		t.Errorf("%d items left after the conversation's delete", n)
	}
	for what, err := range map[string]error{
		"get":         func() error { _, err := db.GetConversation(ctx, "conv_1"); return err }(),
		"update":      func() error { _, err := db.UpdateConversation(ctx, "conv_1", []byte(`{}`)); return err }(),
		"delete":      db.DeleteConversation(ctx, "conv_1"),
		"append":      db.AppendConversationItems(ctx, "conv_1", []store.Item{Message("m", "user", "x")}),
		"list":        func() error { _, _, err := db.ConversationItems(ctx, "conv_1", store.ConversationPage{}); return err }(),
		"get item":    func() error { _, err := db.GetConversationItem(ctx, "conv_1", "msg_1"); return err }(),
		"delete item": db.DeleteConversationItem(ctx, "conv_1", "msg_1"),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of a deleted conversation: %v, want ErrNotFound", what, err)
		}
	}
}

// testConversationPaging: every page walk, in either order and at any
// page size, returns every item once, duplicated wire ids included.
func testConversationPaging(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	var items []store.Item
	for i := range 7 {
		id := fmt.Sprintf("msg_%d", i)
		if i == 5 {
			id = "msg_2" // a client may reuse an id
		}
		items = append(items, Message(id, "user", fmt.Sprint(i)))
	}
	if err := db.CreateConversation(ctx, &store.Conversation{ID: "conv_p", CreatedAt: 1, Metadata: []byte(`{}`)}, items); err != nil {
		t.Fatal(err)
	}
	for _, order := range []string{"asc", "desc"} {
		for _, limit := range []int{1, 2, 3, 100} {
			seen := map[int64]int{}
			after := ""
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatalf("%s/%d: paging does not end", order, limit)
				}
				page, more, err := db.ConversationItems(ctx, "conv_p", store.ConversationPage{After: after, Limit: limit, Order: order})
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page {
					seen[it.Key]++
				}
				if !more {
					break
				}
				after = page[len(page)-1].ItemID
			}
			// A reused id moves the cursor to its last listing: the walk
			// may skip between the two, never repeat.
			for k, n := range seen {
				if n != 1 {
					t.Errorf("%s/%d: item %d listed %d times", order, limit, k, n)
				}
			}
			if limit == 100 && len(seen) != len(items) {
				t.Errorf("%s/%d: %d items, want %d", order, limit, len(seen), len(items))
			}
		}
	}
	if _, _, err := db.ConversationItems(ctx, "conv_p", store.ConversationPage{After: "msg_none"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown cursor: %v, want ErrNotFound", err)
	}
}

// testSweepDeletesIdleConversations: retention deletes conversations idle
// since the cutoff, with their items, and keeps the others.
func testSweepDeletesIdleConversations(t *testing.T, h Harness) {
	db := h.Open(t, Options{})
	ctx := context.Background()
	if err := db.CreateConversation(ctx, &store.Conversation{ID: "conv_old", CreatedAt: 1, Metadata: []byte(`{}`)},
		[]store.Item{Message("m1", "user", "x")}); err != nil {
		t.Fatal(err)
	}
	// updated_at is the store's clock, in nanoseconds: the old
	// conversation was touched before the cutoff, the new one after.
	cutoff := time.Now()
	if err := db.CreateConversation(ctx, &store.Conversation{ID: "conv_new", CreatedAt: 2, Metadata: []byte(`{}`)}, nil); err != nil {
		t.Fatal(err)
	}
	swept, err := db.Sweep(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	if swept.Conversations != 1 {
		t.Errorf("swept %d conversations, want 1", swept.Conversations)
	}
	if _, err := db.GetConversation(ctx, "conv_new"); err != nil {
		t.Errorf("the new conversation: %v", err)
	}
	if n := db.Count(t, "conversation_items"); n != 0 {
		t.Errorf("%d items left", n)
	}
}
