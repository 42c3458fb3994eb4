package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentloop/store"
)

// CreateConversation stores c with its first items, in one transaction;
// each item's Key becomes its position (0, 1, ...).
func (s *Store) CreateConversation(ctx context.Context, c *store.Conversation, items []store.Item) error {
	if c.ID == "" {
		return errors.New("store: create conversation: empty id")
	}
	err := s.c.Write(ctx, func(conn Conn) error {
		if _, err := conn.Exec(ctx, s.q(`INSERT INTO conversations (id, created_at, updated_at, metadata) VALUES (?, ?, ?, ?)`),
			c.ID, c.CreatedAt, time.Now().UnixNano(), c.Metadata); err != nil {
			return err
		}
		return s.insertConversationItems(ctx, conn, c.ID, 0, items)
	})
	if err != nil && s.c.Dialect.IsUniqueViolation(err) {
		return fmt.Errorf("%w: conversation %s", store.ErrExists, c.ID)
	}
	if err == nil {
		setPositions(items, 0)
	}
	return wrap("create conversation "+c.ID, err)
}

// insertConversationItems adds items at positions from, from+1, ...
func (s *Store) insertConversationItems(ctx context.Context, conn Conn, id string, from int64, items []store.Item) error {
	if len(items) == 0 {
		return nil
	}
	stmts := make([]Stmt, len(items))
	for i, it := range items {
		stmts[i] = Stmt{SQL: s.q(`INSERT INTO conversation_items (conversation_id, position, item_id, type, json) VALUES (?, ?, ?, ?, ?)`),
			Args: []any{id, from + int64(i), it.ItemID, it.Type, it.JSON}}
	}
	return conn.Batch(ctx, stmts)
}

func setPositions(items []store.Item, from int64) {
	for i := range items {
		items[i].Key = from + int64(i)
	}
}

// GetConversation returns a conversation; store.ErrNotFound when there is
// none.
func (s *Store) GetConversation(ctx context.Context, id string) (*store.Conversation, error) {
	c := &store.Conversation{ID: id}
	err := s.c.Reader.QueryRow(ctx, s.q(`SELECT created_at, metadata FROM conversations WHERE id = ?`), id).Scan(&c.CreatedAt, &c.Metadata)
	if s.isNoRows(err) {
		return nil, notFound("conversation " + id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get conversation %s: %w", id, s.c.Dialect.Classify(err))
	}
	return c, nil
}

// UpdateConversation replaces a conversation's metadata and returns it.
func (s *Store) UpdateConversation(ctx context.Context, id string, metadata []byte) (*store.Conversation, error) {
	c := &store.Conversation{ID: id, Metadata: metadata}
	err := s.c.Write(ctx, func(conn Conn) error {
		n, err := conn.Exec(ctx, s.q(`UPDATE conversations SET metadata = ?, updated_at = ? WHERE id = ?`), metadata, time.Now().UnixNano(), id)
		if err := expectOne(n, err, "conversation "+id); err != nil {
			return err
		}
		return conn.QueryRow(ctx, s.q(`SELECT created_at FROM conversations WHERE id = ?`), id).Scan(&c.CreatedAt)
	})
	if err != nil {
		return nil, wrap("update conversation "+id, err)
	}
	return c, nil
}

// DeleteConversation deletes a conversation and its items.
func (s *Store) DeleteConversation(ctx context.Context, id string) error {
	err := s.c.Write(ctx, func(conn Conn) error {
		n, err := conn.Exec(ctx, s.q(`DELETE FROM conversations WHERE id = ?`), id)
		return expectOne(n, err, "conversation "+id)
	})
	return wrap("delete conversation "+id, err)
}

// AppendConversationItems adds items after a conversation's last, in one
// transaction; each item's Key becomes its position.
func (s *Store) AppendConversationItems(ctx context.Context, id string, items []store.Item) error {
	var from int64
	err := s.c.Write(ctx, func(conn Conn) error {
		n, err := conn.Exec(ctx, s.q(`UPDATE conversations SET updated_at = ? WHERE id = ?`), time.Now().UnixNano(), id)
		if err := expectOne(n, err, "conversation "+id); err != nil {
			return err
		}
		if err := conn.QueryRow(ctx, s.q(`SELECT COALESCE(MAX(position) + 1, 0) FROM conversation_items WHERE conversation_id = ?`), id).Scan(&from); err != nil {
			return err
		}
		return s.insertConversationItems(ctx, conn, id, from, items)
	})
	if err == nil {
		setPositions(items, from)
	}
	return wrap("append to conversation "+id, err)
}

// ConversationItems lists a conversation's items a page at a time (see
// store.ConversationPage). If several items share the after id, the
// cursor is the last of them in the listing order, so paging always ends.
func (s *Store) ConversationItems(ctx context.Context, id string, p store.ConversationPage) (items []store.Item, hasMore bool, err error) {
	limit := p.Limit
	if limit != -1 {
		limit = clamp(limit, 20, 100)
	}
	var dir string
	switch p.Order {
	case "asc":
		dir = "ASC"
	case "desc", "":
		dir = "DESC"
	default:
		return nil, false, fmt.Errorf("store: items of conversation %s: order %q is neither asc nor desc", id, p.Order)
	}
	err = s.c.Read(ctx, func(conn Conn) error {
		var one int
		err := conn.QueryRow(ctx, s.q(`SELECT 1 FROM conversations WHERE id = ?`), id).Scan(&one)
		if s.isNoRows(err) {
			return notFound("conversation " + id)
		}
		if err != nil {
			return err
		}
		lo, hi := int64(-1), MaxPos
		if p.After != "" {
			pick := "MAX"
			if dir == "DESC" {
				pick = "MIN"
			}
			var cursor *int64
			if err := conn.QueryRow(ctx, s.q(`SELECT `+pick+`(position) FROM conversation_items WHERE conversation_id = ? AND item_id = ?`),
				id, p.After).Scan(&cursor); err != nil {
				return err
			}
			if cursor == nil {
				return fmt.Errorf("%w: item %q in conversation %s", store.ErrNotFound, p.After, id)
			}
			if dir == "ASC" {
				lo = *cursor
			} else {
				hi = *cursor
			}
		}
		q := `SELECT position, item_id, type, json FROM conversation_items WHERE conversation_id = ? AND position > ? AND position < ?
			ORDER BY position ` + dir
		args := []any{id, lo, hi}
		if limit != -1 {
			q += ` LIMIT ?`
			args = append(args, limit+1)
		}
		rows, err := conn.Query(ctx, s.q(q), args...)
		items, err = collect(rows, err, func(row Row) (store.Item, error) {
			var it store.Item
			err := row.Scan(&it.Key, &it.ItemID, &it.Type, &it.JSON)
			return it, err
		})
		return err
	})
	if err != nil {
		return nil, false, wrap("items of conversation "+id, err)
	}
	if limit != -1 && len(items) > limit {
		return items[:limit], true, nil
	}
	return items, false, nil
}

// GetConversationItem returns a conversation's item by its wire id (the
// newest, if several share it).
func (s *Store) GetConversationItem(ctx context.Context, id, itemID string) (store.Item, error) {
	var it store.Item
	err := s.c.Reader.QueryRow(ctx, s.q(`SELECT position, item_id, type, json FROM conversation_items
		WHERE conversation_id = ? AND item_id = ? ORDER BY position DESC LIMIT 1`), id, itemID).Scan(&it.Key, &it.ItemID, &it.Type, &it.JSON)
	if s.isNoRows(err) {
		return store.Item{}, notFound("item " + itemID + " in conversation " + id)
	}
	if err != nil {
		return store.Item{}, fmt.Errorf("store: get item %s of conversation %s: %w", itemID, id, s.c.Dialect.Classify(err))
	}
	return it, nil
}

// DeleteConversationItem deletes a conversation's items with a wire id.
func (s *Store) DeleteConversationItem(ctx context.Context, id, itemID string) error {
	err := s.c.Write(ctx, func(conn Conn) error {
		n, err := conn.Exec(ctx, s.q(`DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?`), id, itemID)
		if err := expectOne(n, err, "item "+itemID+" in conversation "+id); err != nil {
			return err
		}
		_, err = conn.Exec(ctx, s.q(`UPDATE conversations SET updated_at = ? WHERE id = ?`), time.Now().UnixNano(), id)
		return err
	})
	return wrap("delete item of conversation "+id, err)
}
