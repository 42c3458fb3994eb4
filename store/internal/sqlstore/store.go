package sqlstore

import (
	"context"
	"errors"
	"time"

	"agentloop/store"
	"agentloop/store/internal/ledger"
)

// Store implements the parts of store.Backend both backends share. A
// backend embeds it, so its methods are the backend's.
type Store struct{ c Config }

// Config is what a backend gives New.
type Config struct {
	Dialect Dialect
	// SQL is the backend's text for the statements that differ.
	SQL SQL
	// Reader runs single statements outside a transaction.
	Reader Conn
	// Read runs a read-only transaction on one snapshot; Write a write
	// transaction.
	Read, Write TxFunc
	// SaveResponse stores r and its ledger row in one transaction, putting
	// the key of each item of r.Context and r.Output in contextKeys and
	// outputKeys; Store.SaveResponse checks r before and writes the keys
	// back after.
	SaveResponse func(ctx context.Context, r *store.Response, ledger store.LedgerRow, contextKeys, outputKeys []int64) error
	// DeleteResponse deletes response id in c, and the items no other
	// response lists; store.ErrNotFound when there is none.
	DeleteResponse func(ctx context.Context, c Conn, id string) error
	// Sweeps are the backend's own retention sweeps, run after the shared
	// ones.
	Sweeps []Sweep
	// AfterSweep, if set, runs after a Sweep that deleted anything.
	AfterSweep func(ctx context.Context) error
	// IntegrityChecks are the backend's queries for IntegrityCheck.
	IntegrityChecks []IntegrityCheck
	// Ledger is the backend's group-commit ledger writer.
	Ledger *ledger.Writer
}

// SQL holds the statements whose text differs between the backends
// beyond placeholders, in the backend's own placeholders (not rebound);
// $n below is the n-th argument.
type SQL struct {
	// FindOutputItem selects key, item_id, type, json of the newest output
	// item with the wire id $1, by the partial index on output items.
	FindOutputItem string
	// InputCursor selects the %s (MAX or MIN) position of the items of key
	// list $1 at or after position $2 whose wire id is $3.
	InputCursor string
	// ListedItems selects position, key, item_id, type and json of the
	// items of key list $1 at positions $2 to $3 (0-based). ListedOrder,
	// appended to page it, orders by position in the direction %s and
	// limits to $4 rows.
	ListedItems, ListedOrder string
	// InsertSpans inserts the spans of a turn.
	InsertSpans func(t *store.Turn, spans []store.Span) []Stmt
}

// New returns the shared store over a backend.
func New(c Config) *Store {
	return &Store{c: c}
}

// unixNano reads a time stored as Unix nanoseconds.
func unixNano(ns int64) time.Time { return time.Unix(0, ns) }

// isNoRows says a QueryRow found nothing.
func (s *Store) isNoRows(err error) bool { return errors.Is(err, s.c.Dialect.NoRows) }

// q rebinds shared SQL for the backend.
func (s *Store) q(query string) string { return s.c.Dialect.Rebind(query) }
