package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"agentloop/store"
)

// SaveResponse stores r durably, together with its ledger row, in one
// transaction. Items with Key != 0 are reused (an ancestor stored them); the
// others get new keys, which are written back into r only once the
// transaction has committed. A reused key whose item has meanwhile been
// removed (all responses listing it were deleted) is stored again under a new
// key.
func (s *Store) SaveResponse(ctx context.Context, r *store.Response, ledger store.LedgerRow) error {
	if r.ID == "" {
		return errors.New("store: save response: empty id")
	}
	if r.InputStart < 0 || r.InputStart > len(r.Context) {
		return fmt.Errorf("store: save response %s: input start %d outside context of %d items", r.ID, r.InputStart, len(r.Context))
	}
	if ledger.ResponseID == "" {
		ledger.ResponseID = r.ID
	}
	contextKeys := make([]int64, len(r.Context))
	outputKeys := make([]int64, len(r.Output))
	if err := s.c.SaveResponse(ctx, r, ledger, contextKeys, outputKeys); err != nil {
		// Keys come from a sequence, so the response's id is the only
		// unique value a save can repeat.
		if s.c.Dialect.IsUniqueViolation(err) {
			return fmt.Errorf("%w: response %s", store.ErrExists, r.ID)
		}
		return fmt.Errorf("store: save response %s: %w", r.ID, err)
	}
	for i := range r.Context {
		r.Context[i].Key = contextKeys[i]
	}
	for i := range r.Output {
		r.Output[i].Key = outputKeys[i]
	}
	return nil
}

// DeleteResponse deletes a stored response. Stored children keep working:
// each owns its full context key list. Of the items the response listed,
// those no other response lists are removed; the rest stay.
func (s *Store) DeleteResponse(ctx context.Context, id string) error {
	err := s.c.Write(ctx, func(c Conn) error { return s.c.DeleteResponse(ctx, c, id) })
	return wrap("delete response "+id, err)
}

// FindOutputItem finds an output item the engine created, by its wire id
// (for item_reference). If several share the id, the newest wins.
func (s *Store) FindOutputItem(ctx context.Context, itemID string) (store.Item, error) {
	var it store.Item
	err := s.c.Reader.QueryRow(ctx, s.c.SQL.FindOutputItem, itemID).Scan(&it.Key, &it.ItemID, &it.Type, &it.JSON)
	if s.isNoRows(err) {
		return store.Item{}, fmt.Errorf("%w: output item %q", store.ErrNotFound, itemID)
	}
	if err != nil {
		return store.Item{}, fmt.Errorf("store: find output item %q: %w", itemID, s.c.Dialect.Classify(err))
	}
	return it, nil
}

// InputItems lists a response's own input (Context[InputStart:]) a page at a
// time. after is the wire id of the last item of the previous page ("" for the
// first page); limit is clamped to 1..100 (0 means 20); order is "asc" or
// "desc" ("" means "desc"). If several input items share the after id, the
// cursor is the last of them in the listing order, so paging always ends.
func (s *Store) InputItems(ctx context.Context, id string, after string, limit int, order string) (items []store.Item, hasMore bool, err error) {
	switch {
	case limit == 0:
		limit = 20
	case limit < 1:
		limit = 1
	case limit > 100:
		limit = 100
	}
	var dir string
	switch order {
	case "asc":
		dir = "ASC"
	case "desc", "":
		dir = "DESC"
	default:
		return nil, false, fmt.Errorf("store: input items of %s: order %q is neither asc nor desc", id, order)
	}

	err = s.c.Read(ctx, func(c Conn) error {
		keys := s.c.Dialect.NewKeyList()
		var inputStart int64
		err := c.QueryRow(ctx, s.q(`SELECT context_keys, input_start FROM responses WHERE id = ?`), id).Scan(keys, &inputStart)
		if s.isNoRows(err) {
			return notFound("response " + id)
		}
		if err != nil {
			return err
		}
		// The page lies within positions [lo, hi] of the context list.
		lo, hi := inputStart, MaxPos
		if after != "" {
			// The last occurrence in listing order: the highest position
			// for asc, the lowest for desc.
			pick := "MAX"
			if dir == "DESC" {
				pick = "MIN"
			}
			var cursor *int64
			if err := c.QueryRow(ctx, fmt.Sprintf(s.c.SQL.InputCursor, pick), keys, inputStart, after).Scan(&cursor); err != nil {
				return err
			}
			if cursor == nil {
				return fmt.Errorf("%w: item %q in the input of response %s", store.ErrNotFound, after, id)
			}
			if dir == "ASC" {
				lo = *cursor + 1
			} else {
				hi = *cursor - 1
			}
		}
		items, err = s.ListedItems(ctx, c, keys, lo, hi, dir, limit+1)
		return err
	})
	if err != nil {
		return nil, false, wrap("input items of "+id, err)
	}
	if len(items) > limit {
		return items[:limit], true, nil
	}
	return items, false, nil
}

// MaxPos is past the last position of any key list.
const MaxPos = int64(1) << 62

// ListedItems loads the items key list keys names at positions lo..hi, in
// dir ("ASC" or "DESC") order, at most limit of them (-1: all). An item
// listed but not stored is an error: reference counting should make it
// impossible.
func (s *Store) ListedItems(ctx context.Context, c Conn, keys any, lo, hi int64, dir string, limit int) ([]store.Item, error) {
	q := s.c.SQL.ListedItems
	// A whole list in order needs no sort: the backend walks the array in
	// order, which the loop below verifies rather than trusts.
	sorted := dir == "ASC" && limit < 0
	args := []any{keys, lo, hi}
	if !sorted {
		q += fmt.Sprintf(s.c.SQL.ListedOrder, dir)
		args = append(args, limit)
	}
	// One set of scan targets for every row: a Scan through an interface
	// would otherwise allocate them, and its arguments, row by row.
	var (
		it               store.Item
		pos              int64
		itemID, itemType nullString
		prevPos          = int64(-1)
	)
	dest := []any{&pos, &it.Key, &itemID, &itemType, &it.JSON}
	rows, err := c.Query(ctx, q, args...)
	return collect(rows, err, func(row Row) (store.Item, error) {
		it = store.Item{}
		if err := row.Scan(dest...); err != nil {
			return it, err
		}
		if !itemType.valid {
			return it, fmt.Errorf("item %d is listed but not stored", it.Key)
		}
		if sorted && pos <= prevPos {
			return it, fmt.Errorf("key list read out of order at position %d", pos)
		}
		prevPos = pos
		it.ItemID, it.Type = itemID.s, itemType.s
		return it, nil
	})
}

// ReusedKeys returns the distinct keys (Key != 0) of the items in lists,
// in first-seen order: the items a save reuses from its ancestors. listed
// maps each of them to 0, for a backend to prune to the stale ones.
func ReusedKeys(lists ...[]store.Item) (keys []int64, listed map[int64]int64) {
	listed = map[int64]int64{}
	for _, items := range lists {
		for _, it := range items {
			if _, dup := listed[it.Key]; it.Key != 0 && !dup {
				listed[it.Key] = 0
				keys = append(keys, it.Key)
			}
		}
	}
	return keys, listed
}

// AssignKeys puts the key of every item of r, in order, in contextKeys and
// outputKeys. A reused key (Key != 0) stays, unless stale lists it: its
// item was removed since, so the first item that lists it gets a new key
// and the others that list it the same one. Every other item gets a new
// key from newKey, which stores it. stale maps the stale keys of r to 0
// (see NewItems) and ends mapping each to its replacement.
func AssignKeys(r *store.Response, stale map[int64]int64, contextKeys, outputKeys []int64, newKey func(it store.Item, output bool) (int64, error)) error {
	assign := func(items []store.Item, keys []int64, output bool) error {
		for i, it := range items {
			if it.Key != 0 {
				replacement, isStale := stale[it.Key]
				if !isStale {
					keys[i] = it.Key
					continue
				}
				if replacement != 0 {
					keys[i] = replacement
					continue
				}
			}
			k, err := newKey(it, output)
			if err != nil {
				return err
			}
			keys[i] = k
			if it.Key != 0 {
				stale[it.Key] = k
			}
		}
		return nil
	}
	if err := assign(r.Context, contextKeys, false); err != nil {
		return err
	}
	return assign(r.Output, outputKeys, true)
}

// NewItems is how many new keys AssignKeys asks for: one per item never
// stored, and one per stale key (stale holds only keys r lists).
func NewItems(r *store.Response, stale map[int64]int64) int {
	n := len(stale)
	for _, items := range [][]store.Item{r.Context, r.Output} {
		for _, it := range items {
			if it.Key == 0 {
				n++
			}
		}
	}
	return n
}

// nullString scans a text column that may be NULL. Both drivers call
// its Scan (it is a database/sql Scanner), which spares database/sql the
// reflection and the allocations of scanning into a *string.
type nullString struct {
	s     string
	valid bool
}

func (n *nullString) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n = nullString{}
	case string:
		*n = nullString{s: v, valid: true}
	case []byte:
		*n = nullString{s: string(v), valid: true}
	default:
		return fmt.Errorf("cannot scan %T into a string", src)
	}
	return nil
}

// NonNil keeps NOT NULL blob columns satisfied when a caller passes nil.
func NonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
