package postgres

import (
	"context"
	"errors"
	"fmt"

	"agentloop/store"
	"agentloop/store/internal/sqlstore"

	"github.com/jackc/pgx/v5"
)

// insertLedger is the shared ledger insert in PostgreSQL's placeholders.
var insertLedger = dialect.Rebind(sqlstore.InsertLedger)

// saveResponse stores r with its ledger row in one transaction for
// sqlstore's SaveResponse: new items get keys from the items sequence,
// all in one batch, one round trip.
func (db *DB) saveResponse(ctx context.Context, r *store.Response, ledger store.LedgerRow, contextKeys, outputKeys []int64) error {
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		stale, err := countReuse(ctx, tx, r.Context, r.Output)
		if err != nil {
			return err
		}
		n := sqlstore.NewItems(r, stale)
		newKeys, err := allocateKeys(ctx, tx, n)
		if err != nil {
			return err
		}
		// The new items' columns, as arrays for one insert.
		ids, types, jsons, output := make([]string, 0, n), make([]string, 0, n), make([][]byte, 0, n), make([]bool, 0, n)
		err = sqlstore.AssignKeys(r, stale, contextKeys, outputKeys, func(it store.Item, isOutput bool) (int64, error) {
			key := newKeys[len(ids)]
			ids, types = append(ids, it.ItemID), append(types, it.Type)
			jsons, output = append(jsons, sqlstore.NonNil(it.JSON)), append(output, isOutput)
			return key, nil
		})
		if err != nil {
			return err
		}

		b := &pgx.Batch{}
		if len(newKeys) > 0 {
			b.Queue(`INSERT INTO items (key, item_id, type, json, is_output) OVERRIDING SYSTEM VALUE
				SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[], $5::boolean[])`, newKeys, ids, types, jsons, output)
			b.Queue(`INSERT INTO item_refs (key, refs) SELECT unnest($1::bigint[]), 1`, newKeys)
		}
		b.Queue(`INSERT INTO responses
			(id, created_at, model, previous_response_id, snapshot, tools, context_keys, output_keys, input_start, rendered_tokens)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			r.ID, r.CreatedAt, r.Model, r.PreviousResponseID, sqlstore.NonNil(r.Snapshot), r.Tools,
			contextKeys, outputKeys, r.InputStart, r.RenderedTokens)
		b.Queue(insertLedger, sqlstore.LedgerArgs(ledger)...)
		return tx.SendBatch(ctx, b).Close()
	})
}

// countReuse adds one reference to every distinct reused key (Key != 0),
// locking their rows in key order so concurrent saves never deadlock, and
// returns those whose items no longer exist, each mapped to 0 until
// SaveResponse stores the item again.
func countReuse(ctx context.Context, tx pgx.Tx, lists ...[]store.Item) (map[int64]int64, error) {
	reused, stale := sqlstore.ReusedKeys(lists...)
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

// deleteResponse deletes one response in c, and the items no other
// response lists. Reference rows are locked in key order, as countReuse
// locks them.
func deleteResponse(ctx context.Context, c sqlstore.Conn, id string) error {
	var contextKeys, outputKeys []int64
	err := c.QueryRow(ctx, `DELETE FROM responses WHERE id = $1 RETURNING context_keys, output_keys`, id).
		Scan(&contextKeys, &outputKeys)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: response %s", store.ErrNotFound, id)
	}
	if err != nil {
		return err
	}
	// IN: a key listed twice is counted once.
	rows, err := c.Query(ctx, `UPDATE item_refs SET refs = refs - 1 WHERE key IN
		(SELECT key FROM item_refs WHERE key = ANY($1) OR key = ANY($2) ORDER BY key FOR UPDATE)
		RETURNING key, refs`, contextKeys, outputKeys)
	if err != nil {
		return err
	}
	defer rows.Close()
	var unlisted []int64
	for rows.Next() {
		var key int64
		var refs int
		if err := rows.Scan(&key, &refs); err != nil {
			return err
		}
		if refs == 0 {
			unlisted = append(unlisted, key)
		}
	}
	if err := rows.Err(); err != nil || len(unlisted) == 0 {
		return err
	}
	// item_refs rows go with their items (ON DELETE CASCADE).
	_, err = c.Exec(ctx, `DELETE FROM items WHERE key = ANY($1)`, unlisted)
	return err
}
