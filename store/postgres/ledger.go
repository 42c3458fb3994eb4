package postgres

import (
	"context"
	"time"

	"agentloop/store"
	"agentloop/store/internal/sqlstore"

	"github.com/jackc/pgx/v5"
)

// ledgerWriteTimeout bounds one commit of the ledger writer, which no
// caller's context does: a server that stops answering (a network
// partition, not a refused connection) fails the batch, which is retried,
// instead of holding the writer.
const ledgerWriteTimeout = 30 * time.Second

// writeLedger commits rows in one transaction with COPY, one round trip;
// the group-commit writer calls it.
func (db *DB) writeLedger(rows []store.LedgerRow) error {
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWriteTimeout)
	defer cancel()
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"usage_ledger"}, sqlstore.LedgerColumns,
			pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) { return sqlstore.LedgerArgs(rows[i]), nil }))
		return err
	})
}
