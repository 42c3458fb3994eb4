package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"agentloop/store"
)

// SaveResponse stores r durably, together with its ledger row, in one
// transaction. Items with Key != 0 are reused (an ancestor stored them); the
// others get new keys, which are written back into r only once the
// transaction has committed. A reused key whose item has meanwhile been
// removed (all responses listing it were deleted) is stored again under a new
// key.
func (db *DB) SaveResponse(ctx context.Context, r *store.Response, ledger store.LedgerRow) error {
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

	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		stale, err := countReuse(ctx, tx, r.Context, r.Output)
		if err != nil {
			return err
		}
		insert, err := tx.PrepareContext(ctx, `INSERT INTO items (item_id, type, json, is_output) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer insert.Close()
		var added []int64
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
				res, err := insert.ExecContext(ctx, it.ItemID, it.Type, nonNil(it.JSON), output)
				if err != nil {
					return err
				}
				if keys[i], err = res.LastInsertId(); err != nil {
					return err
				}
				added = append(added, keys[i])
				if it.Key != 0 {
					stale[it.Key] = keys[i]
				}
			}
			return nil
		}
		if err := assign(r.Context, contextKeys, false); err != nil {
			return err
		}
		if err := assign(r.Output, outputKeys, true); err != nil {
			return err
		}
		if len(added) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO item_refs (key, refs) SELECT value, 1 FROM json_each(?)`, keyList(added)); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO responses
			(id, created_at, model, previous_response_id, snapshot, tools, context_keys, output_keys, input_start, rendered_tokens)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.CreatedAt, r.Model, r.PreviousResponseID, nonNil(r.Snapshot), r.Tools,
			keyList(contextKeys), keyList(outputKeys), r.InputStart, r.RenderedTokens)
		if err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("%w: response %s", store.ErrExists, r.ID)
			}
			return err
		}
		return insertLedgerRow(ctx, tx, ledger)
	})
	if err != nil {
		if errors.Is(err, store.ErrExists) {
			return err
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

// countReuse adds one reference to every distinct reused key (Key != 0) and
// returns those whose items no longer exist, each mapped to 0 until
// SaveResponse stores the item again.
func countReuse(ctx context.Context, tx *sql.Tx, lists ...[]store.Item) (map[int64]int64, error) {
	stale := map[int64]int64{}
	distinct := map[int64]struct{}{}
	var reused []int64
	for _, items := range lists {
		for _, it := range items {
			if it.Key == 0 {
				continue
			}
			if _, dup := distinct[it.Key]; !dup {
				distinct[it.Key] = struct{}{}
				reused = append(reused, it.Key)
			}
		}
	}
	if len(reused) == 0 {
		return stale, nil
	}
	list := keyList(reused)
	res, err := tx.ExecContext(ctx, `UPDATE item_refs SET refs = refs + 1 WHERE key IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == int64(len(reused)) {
		return stale, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT j.value FROM json_each(?) AS j
		WHERE NOT EXISTS (SELECT 1 FROM item_refs WHERE key = j.value)`, list)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		stale[k] = 0
	}
	return stale, rows.Err()
}

// GetResponse loads a stored response with its full context and output.
func (db *DB) GetResponse(ctx context.Context, id string) (*store.Response, error) {
	r := &store.Response{ID: id}
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		var contextKeys, outputKeys string
		err := tx.QueryRowContext(ctx, `SELECT created_at, model, previous_response_id, snapshot, tools,
			context_keys, output_keys, input_start, rendered_tokens
			FROM responses WHERE id = ?`, id).
			Scan(&r.CreatedAt, &r.Model, &r.PreviousResponseID, &r.Snapshot, &r.Tools,
				&contextKeys, &outputKeys, &r.InputStart, &r.RenderedTokens)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: response %s", store.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		if r.Context, err = listedItems(ctx, tx, contextKeys, 0, maxPos, "ASC", -1); err != nil {
			return err
		}
		r.Output, err = listedItems(ctx, tx, outputKeys, 0, maxPos, "ASC", -1)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("store: get response %s: %w", id, err)
	}
	return r, nil
}

const maxPos = int64(1) << 62

// listedItems loads the items a key list names at positions lo..hi, in dir
// ("ASC" or "DESC") order, at most limit of them (-1: all).
func listedItems(ctx context.Context, tx *sql.Tx, keys string, lo, hi int64, dir string, limit int) ([]store.Item, error) {
	q := `SELECT j.key, j.value, i.item_id, i.type, i.json
		FROM json_each(?) AS j LEFT JOIN items AS i ON i.key = j.value
		WHERE j.key BETWEEN ? AND ?`
	// A whole list in order needs no sort: json_each walks the array in
	// order, which the loop below verifies rather than trusts.
	sorted := dir == "ASC" && limit < 0
	args := []any{keys, lo, hi}
	if !sorted {
		q += ` ORDER BY j.key ` + dir + ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		items   []store.Item
		prevPos = int64(-1)
	)
	for rows.Next() {
		var (
			it       store.Item
			pos      int64
			itemID   sql.NullString
			itemType sql.NullString
		)
		if err := rows.Scan(&pos, &it.Key, &itemID, &itemType, &it.JSON); err != nil {
			return nil, err
		}
		if !itemType.Valid {
			// Reference counting should make this impossible.
			return nil, fmt.Errorf("item %d is listed but not stored", it.Key)
		}
		if sorted && pos <= prevPos {
			return nil, fmt.Errorf("key list read out of order at position %d", pos)
		}
		prevPos = pos
		it.ItemID, it.Type = itemID.String, itemType.String
		items = append(items, it)
	}
	return items, rows.Err()
}

// DeleteResponse deletes a stored response. Stored children keep working:
// each owns its full context key list. Of the items the response listed,
// those no other response lists are removed; the rest stay.
func (db *DB) DeleteResponse(ctx context.Context, id string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error { return deleteResponse(ctx, tx, id) })
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("store: delete response %s: %w", id, err)
	}
	return nil
}

// deleteResponse deletes one response in tx, and the items no other
// response lists.
func deleteResponse(ctx context.Context, tx *sql.Tx, id string) error {
	var contextKeys, outputKeys string
	err := tx.QueryRowContext(ctx, `SELECT context_keys, output_keys FROM responses WHERE id = ?`, id).
		Scan(&contextKeys, &outputKeys)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: response %s", store.ErrNotFound, id)
	}
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM responses WHERE id = ?`, id); err != nil {
		return err
	}
	// UNION: a key listed twice was counted once.
	const listed = `SELECT value FROM json_each(?1) UNION SELECT value FROM json_each(?2)`
	if _, err := tx.ExecContext(ctx, `UPDATE item_refs SET refs = refs - 1 WHERE key IN (`+listed+`)`,
		contextKeys, outputKeys); err != nil {
		return err
	}
	// item_refs rows go with their items (ON DELETE CASCADE).
	_, err = tx.ExecContext(ctx, `DELETE FROM items WHERE key IN (`+listed+`)
		AND (SELECT refs FROM item_refs WHERE item_refs.key = items.key) = 0`, contextKeys, outputKeys)
	return err
}

// FindOutputItem finds an output item the engine created, by its wire id
// (for item_reference). If several share the id, the newest wins.
func (db *DB) FindOutputItem(ctx context.Context, itemID string) (store.Item, error) {
	var it store.Item
	err := db.r.QueryRowContext(ctx, `SELECT key, item_id, type, json FROM items
		WHERE item_id = ? AND is_output = 1 ORDER BY key DESC LIMIT 1`, itemID).
		Scan(&it.Key, &it.ItemID, &it.Type, &it.JSON)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Item{}, fmt.Errorf("%w: output item %q", store.ErrNotFound, itemID)
	}
	if err != nil {
		return store.Item{}, fmt.Errorf("store: find output item %q: %w", itemID, classify(err))
	}
	return it, nil
}

// InputItems lists a response's own input (Context[InputStart:]) a page at a
// time. after is the wire id of the last item of the previous page ("" for the
// first page); limit is clamped to 1..100 (0 means 20); order is "asc" or
// "desc" ("" means "desc"). If several input items share the after id, the
// cursor is the last of them in the listing order, so paging always ends.
func (db *DB) InputItems(ctx context.Context, id string, after string, limit int, order string) (items []store.Item, hasMore bool, err error) {
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

	err = db.readTx(ctx, func(tx *sql.Tx) error {
		var (
			contextKeys string
			inputStart  int64
		)
		err := tx.QueryRowContext(ctx, `SELECT context_keys, input_start FROM responses WHERE id = ?`, id).
			Scan(&contextKeys, &inputStart)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: response %s", store.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		// The page lies within positions [lo, hi] of the context list.
		lo, hi := inputStart, maxPos
		if after != "" {
			// The last occurrence in listing order: the highest position
			// for asc, the lowest for desc.
			pick := "MAX"
			if dir == "DESC" {
				pick = "MIN"
			}
			var cursor sql.NullInt64
			err := tx.QueryRowContext(ctx, `SELECT `+pick+`(j.key)
				FROM json_each(?) AS j JOIN items AS i ON i.key = j.value
				WHERE j.key >= ? AND i.item_id = ?`, contextKeys, inputStart, after).Scan(&cursor)
			if err != nil {
				return err
			}
			if !cursor.Valid {
				return fmt.Errorf("%w: item %q in the input of response %s", store.ErrNotFound, after, id)
			}
			if dir == "ASC" {
				lo = cursor.Int64 + 1
			} else {
				hi = cursor.Int64 - 1
			}
		}
		items, err = listedItems(ctx, tx, contextKeys, lo, hi, dir, limit+1)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("store: input items of %s: %w", id, err)
	}
	if len(items) > limit {
		return items[:limit], true, nil
	}
	return items, false, nil
}

// keyList renders keys as a JSON array for json_each.
func keyList(keys []int64) string {
	b := make([]byte, 0, 2+len(keys)*8)
	b = append(b, '[')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, k, 10)
	}
	return string(append(b, ']'))
}

// nonNil keeps NOT NULL blob columns satisfied when a caller passes nil.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
