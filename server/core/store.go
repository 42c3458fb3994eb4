package core

import (
	"context"

	"agentloop/store"
)

// Store is what the engine needs from persistence, in the types of the
// driver-free store package. Every backend implements it (checked in app).
type Store interface {
	SaveResponse(ctx context.Context, r *store.Response, ledger store.LedgerRow) error
	GetResponse(ctx context.Context, id string) (*store.Response, error)
	DeleteResponse(ctx context.Context, id string) error
	FindOutputItem(ctx context.Context, itemID string) (store.Item, error)
	InputItems(ctx context.Context, id, after string, limit int, order string) ([]store.Item, bool, error)
	AppendLedger(row store.LedgerRow)
}
