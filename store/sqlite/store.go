package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentloop/store"
	"agentloop/store/internal/ledger"
	"agentloop/store/internal/sqlstore"

	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DB is the agentloop database. It is safe for concurrent use.
type DB struct {
	*records

	// w has exactly one connection: SQLite allows one writer at a time, so
	// writers queue in Go (context-aware) instead of spinning in busy_timeout.
	w *sql.DB
	// r serves reads; in WAL mode they never block the writer.
	r   *sql.DB
	log *slog.Logger

	ledger *ledger.Writer

	closeOnce sync.Once
	closeErr  error
}

// options are the knobs tests turn; Open uses defaultOptions.
type options struct {
	busyTimeout time.Duration
	readers     int
	ledger      ledger.Options
}

func defaultOptions() options {
	return options{busyTimeout: 5 * time.Second, readers: 4, ledger: ledger.Defaults()}
}

// Open opens (creating it on first run) the database file at path, applies
// pending migrations and starts the ledger writer.
func Open(ctx context.Context, path string, log *slog.Logger) (*DB, error) {
	db, err := open(ctx, path, log, defaultOptions())
	return db, classify(err)
}

func open(ctx context.Context, path string, log *slog.Logger, o options) (*DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if path == "" {
		return nil, errors.New("store: open: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
	}

	w, err := sql.Open("sqlite", dataSourceName(path, o.busyTimeout, true))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		// Some file systems cannot do WAL; everything still works, but
		// readers then block the writer.
		log.Warn("store: database is not in WAL mode", "path", path, "journal_mode", mode)
	}
	if err := incrementalVacuum(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := migrate(ctx, w, log); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}

	r, err := sql.Open("sqlite", dataSourceName(path, o.busyTimeout, false))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(o.readers)
	r.SetMaxIdleConns(o.readers)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(0)
	if err := r.PingContext(ctx); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}

	db := &DB{w: w, r: r, log: log}
	db.ledger = ledger.New(db.writeLedger, log, o.ledger)
	db.records = sqlstore.New(sqlstore.Config{
		Dialect: dialect, SQL: queries, Reader: conn{r},
		Read: db.readConn, Write: db.writeConn,
		SaveResponse: db.saveResponse, DeleteResponse: deleteResponse,
		AfterSweep: db.reclaimPages, IntegrityChecks: integrityChecks, Ledger: db.ledger,
	})
	return db, nil
}

// dataSourceName builds the modernc DSN. busy_timeout comes first so the
// pragmas after it wait for locks instead of failing. The writer begins
// IMMEDIATE transactions so a busy database fails at BEGIN, never at a later
// lock upgrade that busy_timeout cannot retry; readers are query_only so a
// stray write through them fails loudly.
func dataSourceName(path string, busy time.Duration, writer bool) string {
	var b strings.Builder
	b.WriteString("file:")
	b.WriteString((&url.URL{Path: path}).EscapedPath())
	b.WriteString("?_pragma=busy_timeout(")
	b.WriteString(strconv.FormatInt(busy.Milliseconds(), 10))
	b.WriteString(")")
	if writer {
		// Before journal_mode: a new file takes it before its header is
		// written; incrementalVacuum converts an older file once.
		b.WriteString("&_pragma=auto_vacuum(INCREMENTAL)")
	}
	b.WriteString("&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)")
	if writer {
		b.WriteString("&_txlock=immediate")
	} else {
		b.WriteString("&_pragma=query_only(1)")
	}
	return b.String()
}

// Ping checks that the database answers, for a readiness probe.
func (db *DB) Ping(ctx context.Context) error { return db.r.PingContext(ctx) }

// Close flushes the ledger writer, then closes both pools.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		var errs []error
		if err := db.ledger.Close(); err != nil {
			errs = append(errs, err)
		}
		// Refreshes planner statistics where SQLite thinks it pays; cheap.
		if _, err := db.w.Exec("PRAGMA optimize"); err != nil {
			db.log.Warn("store: PRAGMA optimize at close", "err", err)
		}
		if err := db.r.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store: close readers: %w", err))
		}
		if err := db.w.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store: close writer: %w", err))
		}
		db.closeErr = errors.Join(errs...)
	})
	return db.closeErr
}

// integrityChecks run PRAGMA integrity_check (which must say "ok") and
// PRAGMA foreign_key_check, and verify that every item's reference count
// matches the responses that list it.
var integrityChecks = []sqlstore.IntegrityCheck{
	{Query: `PRAGMA integrity_check`, Problem: func(row sqlstore.Row) (string, error) {
		var line string
		if err := row.Scan(&line); err != nil || line == "ok" {
			return "", err
		}
		return line, nil
	}},
	{Query: `PRAGMA foreign_key_check`, Problem: func(row sqlstore.Row) (string, error) {
		var table, parent string
		var rowid sql.NullInt64
		var fk int
		if err := row.Scan(&table, &rowid, &parent, &fk); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s row %d: missing %s", table, rowid.Int64, parent), nil
	}},
	{Query: refCountCheck, Problem: func(row sqlstore.Row) (string, error) {
		var key, listed, counted int64
		if err := row.Scan(&key, &listed, &counted); err != nil {
			return "", err
		}
		return fmt.Sprintf("item %d: listed by %d responses, counted %d", key, listed, counted), nil
	}},
}

// refCountCheck lists items whose reference count disagrees with the key
// lists of the stored responses (-1: no count, or no item, at all).
const refCountCheck = `WITH
	listed(key, seq) AS (
		SELECT j.value, r.seq FROM responses AS r, json_each(r.context_keys) AS j
		UNION
		SELECT j.value, r.seq FROM responses AS r, json_each(r.output_keys) AS j),
	listings(key, n) AS (SELECT key, COUNT(*) FROM listed GROUP BY key)
SELECT l.key, l.n, COALESCE(x.refs, -1) FROM listings AS l LEFT JOIN item_refs AS x ON x.key = l.key
	WHERE x.refs IS NOT l.n
UNION ALL
SELECT x.key, 0, x.refs FROM item_refs AS x WHERE x.key NOT IN (SELECT key FROM listings)
UNION ALL
SELECT i.key, 0, -1 FROM items AS i WHERE i.key NOT IN (SELECT key FROM item_refs)
UNION ALL
SELECT l.key, l.n, -1 FROM listings AS l WHERE l.key NOT IN (SELECT key FROM items)`

// classify marks a driver error with the store's sentinel for it, so callers
// tell a locked database (store.ErrBusy: SQLITE_BUSY or SQLITE_LOCKED, i.e.
// another connection held the lock past busy_timeout) from a full one
// (store.ErrFull: SQLITE_FULL, the disk or max_page_count) with errors.Is
// and without the driver. The driver's error stays in the chain and the
// message is unchanged. Every error of a call that reached SQLite passes
// through here.
func classify(err error) error { return sqlstore.Classify(err, errorKinds) }

// errorKinds tell the driver errors apart, first match wins.
var errorKinds = []sqlstore.ErrorKind{
	{Kind: store.ErrBusy, Is: isBusy},
	{Kind: store.ErrFull, Is: isFull},
}

func isBusy(err error) bool {
	switch primaryCode(err) {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

func isFull(err error) bool {
	return primaryCode(err) == sqlite3.SQLITE_FULL
}

// primaryCode returns the primary SQLite result code in err, or 0. modernc
// turns extended result codes on, so the low byte is the primary code.
func primaryCode(err error) int {
	if c := extendedCode(err); c != 0 {
		return c & 0xff
	}
	return 0
}

func extendedCode(err error) int {
	var se *driver.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

func isUniqueViolation(err error) bool {
	switch extendedCode(err) {
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		return true
	}
	return false
}

func isForeignKeyViolation(err error) bool {
	return extendedCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// writeTx runs fn in one IMMEDIATE transaction on the writer connection;
// its error is classified.
func (db *DB) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return classify(err)
	}
	return classify(tx.Commit())
}

// readTx runs fn in one read transaction, so multi-query reads see one
// snapshot; its error is classified.
func (db *DB) readTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return classify(err)
	}
	return classify(tx.Commit())
}
