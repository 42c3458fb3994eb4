package sqlite

import (
	"context"
	"database/sql"

	"agentloop/store"
	"agentloop/store/internal/sqlstore"
)

// writeLedger commits rows in one transaction; the group-commit writer
// calls it. It is not tied to a caller: busy_timeout bounds the wait.
func (db *DB) writeLedger(rows []store.LedgerRow) error {
	ctx := context.Background()
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, sqlstore.InsertLedger)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, sqlstore.LedgerArgs(r)...); err != nil {
				return err
			}
		}
		return nil
	})
}
