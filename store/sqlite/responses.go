package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"agentloop/store"
	"agentloop/store/internal/sqlstore"
)

// saveResponse stores r with its ledger row in one transaction for
// sqlstore's SaveResponse: new items get keys from the items table's
// rowid, one insert each, then r's row lists them as JSON arrays.
func (db *DB) saveResponse(ctx context.Context, r *store.Response, ledger store.LedgerRow, contextKeys, outputKeys []int64) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error {
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
		err = sqlstore.AssignKeys(r, stale, contextKeys, outputKeys, func(it store.Item, output bool) (int64, error) {
			res, err := insert.ExecContext(ctx, it.ItemID, it.Type, sqlstore.NonNil(it.JSON), output)
			if err != nil {
				return 0, err
			}
			key, err := res.LastInsertId()
			added = append(added, key)
			return key, err
		})
		if err != nil {
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
			r.ID, r.CreatedAt, r.Model, r.PreviousResponseID, sqlstore.NonNil(r.Snapshot), r.Tools,
			keyList(contextKeys), keyList(outputKeys), r.InputStart, r.RenderedTokens)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, sqlstore.InsertLedger, sqlstore.LedgerArgs(ledger)...)
		return err
	})
}

// countReuse adds one reference to every distinct reused key (Key != 0) and
// returns those whose items no longer exist, each mapped to 0 until
// SaveResponse stores the item again.
func countReuse(ctx context.Context, tx *sql.Tx, lists ...[]store.Item) (map[int64]int64, error) {
	stale := map[int64]int64{}
	reused, _ := sqlstore.ReusedKeys(lists...)
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
	err := db.readConn(ctx, func(c sqlstore.Conn) error {
		var contextKeys, outputKeys string
		err := c.QueryRow(ctx, `SELECT created_at, model, previous_response_id, snapshot, tools,
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
		if r.Context, err = db.ListedItems(ctx, c, contextKeys, 0, sqlstore.MaxPos, "ASC", -1); err != nil {
			return err
		}
		r.Output, err = db.ListedItems(ctx, c, outputKeys, 0, sqlstore.MaxPos, "ASC", -1)
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

// deleteResponse deletes one response in c, and the items no other
// response lists.
func deleteResponse(ctx context.Context, c sqlstore.Conn, id string) error {
	var contextKeys, outputKeys string
	err := c.QueryRow(ctx, `SELECT context_keys, output_keys FROM responses WHERE id = ?`, id).
		Scan(&contextKeys, &outputKeys)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: response %s", store.ErrNotFound, id)
	}
	if err != nil {
		return err
	}
	if _, err := c.Exec(ctx, `DELETE FROM responses WHERE id = ?`, id); err != nil {
		return err
	}
	// UNION: a key listed twice was counted once.
	const listed = `SELECT value FROM json_each(?1) UNION SELECT value FROM json_each(?2)`
	if _, err := c.Exec(ctx, `UPDATE item_refs SET refs = refs - 1 WHERE key IN (`+listed+`)`,
		contextKeys, outputKeys); err != nil {
		return err
	}
	// item_refs rows go with their items (ON DELETE CASCADE).
	_, err = c.Exec(ctx, `DELETE FROM items WHERE key IN (`+listed+`)
		AND (SELECT refs FROM item_refs WHERE item_refs.key = items.key) = 0`, contextKeys, outputKeys)
	return err
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
