package postgres

import (
	"context"
	"errors"
	"fmt"

	"agentloop/store"

	"github.com/jackc/pgx/v5"
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

	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		stale, err := countReuse(ctx, tx, r.Context, r.Output)
		if err != nil {
			return err
		}
		// Which items get a new row: those never stored, and those whose
		// key went stale (each stale key once).
		var fresh []*store.Item
		var output []bool
		pending := map[int64]bool{}
		for _, list := range []struct {
			items  []store.Item
			output bool
		}{{r.Context, false}, {r.Output, true}} {
			for i := range list.items {
				it := &list.items[i]
				if it.Key != 0 {
					if _, isStale := stale[it.Key]; !isStale || pending[it.Key] {
						continue
					}
					pending[it.Key] = true
				}
				fresh = append(fresh, it)
				output = append(output, list.output)
			}
		}
		newKeys, err := allocateKeys(ctx, tx, len(fresh))
		if err != nil {
			return err
		}
		// The keys each fresh item gets, in order, then each stale key's
		// replacement.
		assigned := map[*store.Item]int64{}
		for i, it := range fresh {
			assigned[it] = newKeys[i]
			if it.Key != 0 {
				stale[it.Key] = newKeys[i]
			}
		}
		fill := func(items []store.Item, keys []int64) {
			for i := range items {
				it := &items[i]
				switch k, ok := assigned[it]; {
				case ok:
					keys[i] = k
				case stale[it.Key] != 0:
					keys[i] = stale[it.Key]
				default:
					keys[i] = it.Key
				}
			}
		}
		fill(r.Context, contextKeys)
		fill(r.Output, outputKeys)

		b := &pgx.Batch{}
		if len(fresh) > 0 {
			ids, types, jsons := make([]string, len(fresh)), make([]string, len(fresh)), make([][]byte, len(fresh))
			for i, it := range fresh {
				ids[i], types[i], jsons[i] = it.ItemID, it.Type, nonNil(it.JSON)
			}
			b.Queue(`INSERT INTO items (key, item_id, type, json, is_output) OVERRIDING SYSTEM VALUE
				SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[], $5::boolean[])`, newKeys, ids, types, jsons, output)
			b.Queue(`INSERT INTO item_refs (key, refs) SELECT unnest($1::bigint[]), 1`, newKeys)
		}
		b.Queue(`INSERT INTO responses
			(id, created_at, model, previous_response_id, snapshot, tools, context_keys, output_keys, input_start, rendered_tokens)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			r.ID, r.CreatedAt, r.Model, r.PreviousResponseID, nonNil(r.Snapshot), r.Tools,
			contextKeys, outputKeys, r.InputStart, r.RenderedTokens)
		b.Queue(insertLedgerSQL, ledgerArgs(ledger)...)
		err = tx.SendBatch(ctx, b).Close()
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: response %s", store.ErrExists, r.ID)
		}
		return err
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

// countReuse adds one reference to every distinct reused key (Key != 0),
// locking their rows in key order so concurrent saves never deadlock, and
// returns those whose items no longer exist, each mapped to 0 until
// SaveResponse stores the item again.
func countReuse(ctx context.Context, tx pgx.Tx, lists ...[]store.Item) (map[int64]int64, error) {
	stale := map[int64]int64{}
	var reused []int64
	for _, items := range lists {
		for _, it := range items {
			if it.Key == 0 {
				continue
			}
			if _, dup := stale[it.Key]; !dup {
				stale[it.Key] = 0
				reused = append(reused, it.Key)
			}
		}
	}
	if len(reused) == 0 {
		return stale, nil
	}
	rows, err := tx.Query(ctx, `UPDATE item_refs SET refs = refs + 1 WHERE key IN
		(SELECT key FROM item_refs WHERE key = ANY($1) ORDER BY key FOR UPDATE) RETURNING key`, reused)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	for _, k := range found {
		delete(stale, k)
	}
	return stale, nil
}

// allocateKeys takes n new item keys from the items sequence, which never
// hands one out twice.
func allocateKeys(ctx context.Context, tx pgx.Tx, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT nextval(pg_get_serial_sequence('items', 'key')) FROM generate_series(1, $1)`, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// getResponseSQL reads a response and every item it lists, in order, in one
// statement: one round trip, one snapshot. Each row is one listed item (its
// position, key and columns; NULL item columns for a key with no item);
// the response's columns ride on the first row only, and a response that
// lists nothing comes back as one row with a NULL position.
const getResponseSQL = `SELECT k.pos, r.created_at, r.model, r.previous_response_id,
		CASE WHEN COALESCE(k.pos, 1) = 1 THEN r.snapshot END,
		CASE WHEN COALESCE(k.pos, 1) = 1 THEN r.tools END,
		r.input_start, r.rendered_tokens, cardinality(r.context_keys),
		k.key, i.item_id, i.type, i.json
	FROM responses AS r
	LEFT JOIN LATERAL unnest(r.context_keys || r.output_keys) WITH ORDINALITY AS k(key, pos) ON true
	LEFT JOIN items AS i ON i.key = k.key
	WHERE r.id = $1
	ORDER BY k.pos`

// GetResponse loads a stored response with its full context and output.
func (db *DB) GetResponse(ctx context.Context, id string) (*store.Response, error) {
	r := &store.Response{ID: id}
	rows, err := db.pool.Query(ctx, getResponseSQL, id)
	if err != nil {
		return nil, fmt.Errorf("store: get response %s: %w", id, classify(err))
	}
	defer rows.Close()
	found := false
	var contextLen int
	for rows.Next() {
		var (
			pos              *int64
			snapshot, tools  []byte
			key              *int64
			itemID, itemType *string
			item             []byte
		)
		if err := rows.Scan(&pos, &r.CreatedAt, &r.Model, &r.PreviousResponseID, &snapshot, &tools,
			&r.InputStart, &r.RenderedTokens, &contextLen, &key, &itemID, &itemType, &item); err != nil {
			return nil, fmt.Errorf("store: get response %s: %w", id, classify(err))
		}
		if !found {
			found = true
			r.Snapshot, r.Tools = snapshot, tools
		}
		if pos == nil {
			continue
		}
		if itemType == nil {
			// Reference counting should make this impossible.
			return nil, fmt.Errorf("store: get response %s: item %d is listed but not stored", id, *key)
		}
		it := store.Item{Key: *key, ItemID: *itemID, Type: *itemType, JSON: item}
		if int(*pos) <= contextLen {
			r.Context = append(r.Context, it)
		} else {
			r.Output = append(r.Output, it)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: get response %s: %w", id, classify(err))
	}
	if !found {
		return nil, fmt.Errorf("%w: response %s", store.ErrNotFound, id)
	}
	return r, nil
}

// DeleteResponse deletes a stored response. Stored children keep working:
// each owns its full context key list. Of the items the response listed,
// those no other response lists are removed; the rest stay.
func (db *DB) DeleteResponse(ctx context.Context, id string) error {
	err := db.writeTx(ctx, func(tx pgx.Tx) error { return deleteResponse(ctx, tx, id) })
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("store: delete response %s: %w", id, err)
	}
	return nil
}

// deleteResponse deletes one response in tx, and the items no other
// response lists. Reference rows are locked in key order, as countReuse
// locks them.
func deleteResponse(ctx context.Context, tx pgx.Tx, id string) error {
	var contextKeys, outputKeys []int64
	err := tx.QueryRow(ctx, `DELETE FROM responses WHERE id = $1 RETURNING context_keys, output_keys`, id).
		Scan(&contextKeys, &outputKeys)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: response %s", store.ErrNotFound, id)
	}
	if err != nil {
		return err
	}
	// IN: a key listed twice is counted once.
	rows, err := tx.Query(ctx, `UPDATE item_refs SET refs = refs - 1 WHERE key IN
		(SELECT key FROM item_refs WHERE key = ANY($1) OR key = ANY($2) ORDER BY key FOR UPDATE)
		RETURNING key, refs`, contextKeys, outputKeys)
	if err != nil {
		return err
	}
	var unlisted []int64
	var key int64
	var refs int
	_, err = pgx.ForEachRow(rows, []any{&key, &refs}, func() error {
		if refs == 0 {
			unlisted = append(unlisted, key)
		}
		return nil
	})
	if err != nil || len(unlisted) == 0 {
		return err
	}
	// item_refs rows go with their items (ON DELETE CASCADE).
	_, err = tx.Exec(ctx, `DELETE FROM items WHERE key = ANY($1)`, unlisted)
	return err
}

// FindOutputItem finds an output item the engine created, by its wire id
// (for item_reference). If several share the id, the newest wins.
func (db *DB) FindOutputItem(ctx context.Context, itemID string) (store.Item, error) {
	var it store.Item
	err := db.pool.QueryRow(ctx, `SELECT key, item_id, type, json FROM items
		WHERE item_id = $1 AND is_output ORDER BY key DESC LIMIT 1`, itemID).
		Scan(&it.Key, &it.ItemID, &it.Type, &it.JSON)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Item{}, fmt.Errorf("%w: output item %q", store.ErrNotFound, itemID)
	}
	if err != nil {
		return store.Item{}, fmt.Errorf("store: find output item %q: %w", itemID, classify(err))
	}
	return it, nil
}

const maxPos = int64(1) << 62

// listedItems loads the items a key list names at positions lo..hi
// (0-based), in dir ("ASC" or "DESC") order, at most limit of them.
func listedItems(ctx context.Context, tx pgx.Tx, keys []int64, lo, hi int64, dir string, limit int) ([]store.Item, error) {
	rows, err := tx.Query(ctx, `SELECT k.key, i.item_id, i.type, i.json
		FROM unnest($1::bigint[]) WITH ORDINALITY AS k(key, pos) LEFT JOIN items AS i ON i.key = k.key
		WHERE k.pos - 1 BETWEEN $2 AND $3
		ORDER BY k.pos `+dir+` LIMIT $4`, keys, lo, hi, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var items []store.Item
	for rows.Next() {
		var (
			it               store.Item
			itemID, itemType *string
		)
		if err := rows.Scan(&it.Key, &itemID, &itemType, &it.JSON); err != nil {
			return nil, err
		}
		if itemType == nil {
			return nil, fmt.Errorf("item %d is listed but not stored", it.Key)
		}
		it.ItemID, it.Type = *itemID, *itemType
		items = append(items, it)
	}
	return items, rows.Err()
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

	err = db.readTx(ctx, func(tx pgx.Tx) error {
		var (
			contextKeys []int64
			inputStart  int64
		)
		err := tx.QueryRow(ctx, `SELECT context_keys, input_start FROM responses WHERE id = $1`, id).
			Scan(&contextKeys, &inputStart)
		if errors.Is(err, pgx.ErrNoRows) {
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
			var cursor *int64
			err := tx.QueryRow(ctx, `SELECT `+pick+`(k.pos - 1)
				FROM unnest($1::bigint[]) WITH ORDINALITY AS k(key, pos) JOIN items AS i ON i.key = k.key
				WHERE k.pos - 1 >= $2 AND i.item_id = $3`, contextKeys, inputStart, after).Scan(&cursor)
			if err != nil {
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

// nonNil keeps NOT NULL bytea columns satisfied when a caller passes nil.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
