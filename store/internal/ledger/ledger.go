// Package ledger is the group-commit writer of store:false usage ledger
// rows, shared by the store backends: rows wait up to a linger interval
// and are committed together by the backend's write function, so the hot
// path never waits for the database. It knows no database: the backend
// passes the function that commits a batch in one transaction.
package ledger

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/store"
)

// Options tune the writer.
type Options struct {
	// Capacity is the queue's length; past it Append waits for room.
	Capacity int
	// Linger is how long the first row of a batch waits for others.
	Linger time.Duration
	// MaxBatch commits a batch as soon as it holds this many rows.
	MaxBatch int
}

// DurabilityWindow is how soon an appended row is durable with Defaults:
// half the window lingers for other rows, the rest is left for the commit.
// Every claim of the ledger's durability cites it.
const DurabilityWindow = 100 * time.Millisecond

// Defaults keep rows durable within DurabilityWindow.
func Defaults() Options {
	return Options{Capacity: 65536, Linger: DurabilityWindow / 2, MaxBatch: 4096}
}

// retryEvery is how soon a failed batch is tried again.
const retryEvery = 100 * time.Millisecond

// msg is a row to write or, when flushed is set, a flush marker: the
// channel is FIFO, so once the writer reaches the marker everything appended
// before it is in the batch.
type msg struct {
	row     store.LedgerRow
	flushed chan error
}

// Writer commits appended rows in groups. It is safe for concurrent use.
type Writer struct {
	write    func([]store.LedgerRow) error
	log      *slog.Logger
	ch       chan msg
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

// New starts a writer that commits each batch with write (one transaction,
// all rows or none; it must return an error rather than commit part).
func New(write func([]store.LedgerRow) error, log *slog.Logger, o Options) *Writer {
	w := &Writer{
		write:    write,
		log:      log,
		ch:       make(chan msg, o.Capacity),
		linger:   o.Linger,
		maxBatch: o.MaxBatch,
		done:     make(chan struct{}),
	}
	go w.run()
	return w
}

// Append queues a row; with Defaults it is durable within DurabilityWindow. It never waits
// for the database, but when the queue is full it waits for room rather
// than drop the row.
func (w *Writer) Append(row store.LedgerRow) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.log.Error("store: ledger row appended after close, dropped", "response_id", row.ResponseID)
		return
	}
	w.ch <- msg{row: row}
}

// Flush waits until every row appended before the call is durable.
func (w *Writer) Flush(ctx context.Context) error {
	flushed := make(chan error, 1)
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return fmt.Errorf("store: flush ledger: %w", store.ErrClosed)
	}
	select {
	case w.ch <- msg{flushed: flushed}:
		w.mu.RUnlock()
	case <-ctx.Done():
		w.mu.RUnlock()
		return fmt.Errorf("store: flush ledger: %w", ctx.Err())
	}
	select {
	case err := <-flushed:
		return err
	case <-ctx.Done():
		return fmt.Errorf("store: flush ledger: %w", ctx.Err())
	}
}

// Close stops accepting rows and commits what is queued.
func (w *Writer) Close() error {
	// Tell a writer stuck retrying a full batch to keep draining, so senders
	// blocked on a full queue can finish and Close can take the lock.
	w.closing.Store(true)
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.mu.Unlock()
	<-w.done
	return w.err
}

func (w *Writer) run() {
	defer close(w.done)
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
		err := w.commit(batch)
		if err == nil {
			batch = batch[:0]
			failing = false
		} else {
			failing = true
			w.log.Error("store: ledger commit failed, will retry", "rows", len(batch), "err", err)
			arm(retryEvery)
		}
		for _, c := range waiters {
			c <- err
		}
		waiters = waiters[:0]
	}
	for {
		in := w.ch
		// While commits fail and the batch is full, stop reading: the queue
		// fills and Append waits, which is back-pressure, not loss.
		if failing && len(batch) >= w.maxBatch && !w.closing.Load() {
			in = nil
		}
		select {
		case m, ok := <-in:
			if !ok {
				w.err = w.commit(batch)
				if w.err != nil {
					w.log.Error("store: ledger rows lost at close", "rows", len(batch), "err", w.err)
				}
				for _, c := range waiters {
					c <- w.err
				}
				return
			}
			if m.flushed != nil {
				waiters = append(waiters, m.flushed)
				commit()
				continue
			}
			batch = append(batch, m.row)
			if len(batch) >= w.maxBatch && !failing {
				commit()
			} else {
				arm(w.linger)
			}
		case <-timer.C:
			armed = false
			commit()
		}
	}
}

// commit writes rows through the backend, unless there are none.
func (w *Writer) commit(rows []store.LedgerRow) error {
	if len(rows) == 0 {
		return nil
	}
	if err := w.write(rows); err != nil {
		return fmt.Errorf("store: write %d ledger rows: %w", len(rows), err)
	}
	return nil
}
