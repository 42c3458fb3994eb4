package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/store"
)

// ledgerMsg is a row to write or, when flushed is set, a flush marker: the
// channel is FIFO, so once the writer reaches the marker everything appended
// before it is in the batch.
type ledgerMsg struct {
	row     store.LedgerRow
	flushed chan error
}

// ledgerWriter is the group-commit writer for store:false ledger rows: rows
// wait up to a linger interval and are committed together in one transaction,
// so the hot path never waits for SQLite.
type ledgerWriter struct {
	db       *DB
	ch       chan ledgerMsg
	linger   time.Duration
	maxBatch int

	// mu guards closed against sends racing the channel's close: senders
	// hold it shared for the length of the send.
	mu      sync.RWMutex
	closed  bool
	closing atomic.Bool
	done    chan struct{}
	err     error // the final flush's error, read after done
}

func newLedgerWriter(db *DB, o options) *ledgerWriter {
	l := &ledgerWriter{
		db:       db,
		ch:       make(chan ledgerMsg, o.ledgerCapacity),
		linger:   o.ledgerLinger,
		maxBatch: o.ledgerMaxBatch,
		done:     make(chan struct{}),
	}
	go l.run()
	return l
}

// AppendLedger queues a ledger row for the group-commit writer; the row is
// durable within about 100 ms. It never waits for SQLite, but when the queue
// is full it waits for room rather than drop the row.
func (db *DB) AppendLedger(row store.LedgerRow) {
	l := db.ledger
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		db.log.Error("store: ledger row appended after close, dropped", "response_id", row.ResponseID)
		return
	}
	l.ch <- ledgerMsg{row: row}
}

// FlushLedger waits until every row appended before the call is durable.
func (db *DB) FlushLedger(ctx context.Context) error {
	l := db.ledger
	flushed := make(chan error, 1)
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return fmt.Errorf("store: flush ledger: %w", store.ErrClosed)
	}
	select {
	case l.ch <- ledgerMsg{flushed: flushed}:
		l.mu.RUnlock()
	case <-ctx.Done():
		l.mu.RUnlock()
		return fmt.Errorf("store: flush ledger: %w", ctx.Err())
	}
	select {
	case err := <-flushed:
		return err
	case <-ctx.Done():
		return fmt.Errorf("store: flush ledger: %w", ctx.Err())
	}
}

// close stops accepting rows and commits what is queued.
func (l *ledgerWriter) close() error {
	// Tell a writer stuck retrying a full batch to keep draining, so senders
	// blocked on a full queue can finish and close can take the lock.
	l.closing.Store(true)
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.ch)
	}
	l.mu.Unlock()
	<-l.done
	return l.err
}

func (l *ledgerWriter) run() {
	defer close(l.done)
	var (
		batch   []store.LedgerRow
		waiters []chan error
		timer   = time.NewTimer(time.Hour)
		armed   bool
		failing bool
	)
	timer.Stop()
	arm := func(d time.Duration) {
		if !armed {
			timer.Reset(d)
			armed = true
		}
	}
	commit := func() {
		if armed {
			timer.Stop()
			armed = false
		}
		err := l.write(batch)
		if err == nil {
			batch = batch[:0]
			failing = false
		} else {
			failing = true
			l.db.log.Error("store: ledger commit failed, will retry", "rows", len(batch), "err", err)
			arm(100 * time.Millisecond)
		}
		for _, w := range waiters {
			w <- err
		}
		waiters = waiters[:0]
	}
	for {
		in := l.ch
		// While commits fail and the batch is full, stop reading: the queue
		// fills and AppendLedger waits, which is back-pressure, not loss.
		if failing && len(batch) >= l.maxBatch && !l.closing.Load() {
			in = nil
		}
		select {
		case m, ok := <-in:
			if !ok {
				l.err = l.write(batch)
				if l.err != nil {
					l.db.log.Error("store: ledger rows lost at close", "rows", len(batch), "err", l.err)
				}
				for _, w := range waiters {
					w <- l.err
				}
				return
			}
			if m.flushed != nil {
				waiters = append(waiters, m.flushed)
				commit()
				continue
			}
			batch = append(batch, m.row)
			if len(batch) >= l.maxBatch && !failing {
				commit()
			} else {
				arm(l.linger)
			}
		case <-timer.C:
			armed = false
			commit()
		}
	}
}

// write commits rows in one transaction.
func (l *ledgerWriter) write(rows []store.LedgerRow) error {
	if len(rows) == 0 {
		return nil
	}
	// Not tied to a caller: busy_timeout bounds the wait.
	ctx := context.Background()
	err := l.db.writeTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, insertLedgerSQL)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, ledgerArgs(r)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: write %d ledger rows: %w", len(rows), err)
	}
	return nil
}

const insertLedgerSQL = `INSERT INTO usage_ledger
	(response_id, created_at, model, transport, engine, input_tokens, cached_tokens, output_tokens, stored)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

func ledgerArgs(r store.LedgerRow) []any {
	return []any{r.ResponseID, r.CreatedAt, r.Model, r.Transport, r.Engine,
		r.InputTokens, r.CachedTokens, r.OutputTokens, r.Stored}
}

func insertLedgerRow(ctx context.Context, tx *sql.Tx, r store.LedgerRow) error {
	_, err := tx.ExecContext(ctx, insertLedgerSQL, ledgerArgs(r)...)
	return err
}

// LedgerRows returns the ledger rows of a response in the order written, or
// every row when responseID is empty.
func (db *DB) LedgerRows(ctx context.Context, responseID string) ([]store.LedgerRow, error) {
	const cols = `SELECT response_id, created_at, model, transport, engine, input_tokens, cached_tokens, output_tokens, stored FROM usage_ledger`
	var (
		rows *sql.Rows
		err  error
	)
	if responseID == "" {
		rows, err = db.r.QueryContext(ctx, cols+` ORDER BY seq`)
	} else {
		rows, err = db.r.QueryContext(ctx, cols+` WHERE response_id = ? ORDER BY seq`, responseID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: ledger rows %q: %w", responseID, classify(err))
	}
	defer rows.Close()
	var out []store.LedgerRow
	for rows.Next() {
		var r store.LedgerRow
		if err := rows.Scan(&r.ResponseID, &r.CreatedAt, &r.Model, &r.Transport, &r.Engine,
			&r.InputTokens, &r.CachedTokens, &r.OutputTokens, &r.Stored); err != nil {
			return nil, fmt.Errorf("store: ledger rows %q: %w", responseID, classify(err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: ledger rows %q: %w", responseID, classify(err))
	}
	return out, nil
}
