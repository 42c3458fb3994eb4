package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentloop/store"
	"agentloop/store/internal/ledger"
	"agentloop/store/internal/sqlstore"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is the agentloop database in PostgreSQL. It is safe for concurrent use.
type DB struct {
	*records

	pool   *pgxpool.Pool
	log    *slog.Logger
	ledger *ledger.Writer

	closeOnce sync.Once
	closeErr  error
}

// options are the knobs tests turn; Open uses defaultOptions.
type options struct {
	// lockTimeout bounds a statement's wait for a lock (lock_timeout), as
	// busy_timeout does for SQLite; past it the call fails with ErrBusy.
	lockTimeout time.Duration
	// connectTimeout bounds a connection attempt when the URL sets none.
	connectTimeout time.Duration
	ledger         ledger.Options
}

func defaultOptions() options {
	return options{lockTimeout: 5 * time.Second, connectTimeout: 5 * time.Second, ledger: ledger.Defaults()}
}

// IsURL says dsn names a PostgreSQL database (postgres:// or
// postgresql://) rather than a SQLite file.
func IsURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open connects to the database at dsn (a postgres:// URL), applies
// pending migrations and starts the ledger writer.
func Open(ctx context.Context, dsn string, log *slog.Logger) (*DB, error) {
	return open(ctx, dsn, log, defaultOptions())
}

func open(ctx context.Context, dsn string, log *slog.Logger, o options) (*DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parser's message may quote the URL, password and all.
		return nil, errors.New("store: open: the PostgreSQL URL does not parse")
	}
	where := redacted(cfg)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = o.connectTimeout
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(o.lockTimeout.Milliseconds(), 10)
	cfg.ConnConfig.RuntimeParams["application_name"] = "agentloop"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", where, classify(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: open %s: %w", where, classify(err))
	}
	if err := migrate(ctx, pool, log); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: open %s: %w", where, classify(err))
	}
	db := &DB{pool: pool, log: log}
	db.ledger = ledger.New(db.writeLedger, log, o.ledger)
	db.records = sqlstore.New(sqlstore.Config{
		Dialect: dialect, SQL: queries, Reader: conn{pool},
		Read: db.readConn, Write: db.writeConn,
		SaveResponse: db.saveResponse, DeleteResponse: deleteResponse,
		Sweeps: []sqlstore.Sweep{traceSweep}, IntegrityChecks: integrityChecks, Ledger: db.ledger,
	})
	return db, nil
}

// redacted names the database without its password, for errors and logs.
func redacted(cfg *pgxpool.Config) string {
	host := cfg.ConnConfig.Host
	if !strings.HasPrefix(host, "/") {
		host = net.JoinHostPort(host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	}
	return fmt.Sprintf("postgres database %q at %s", cfg.ConnConfig.Database, host)
}

// Close flushes the ledger writer, then closes the pool.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.closeErr = db.ledger.Close()
		db.pool.Close()
	})
	return db.closeErr
}

// Ping checks that the database answers, for a readiness probe.
func (db *DB) Ping(ctx context.Context) error { return classify(db.pool.Ping(ctx)) }

// integrityChecks verify that every item's reference count matches the
// responses that list it, and that every listed item exists (foreign keys
// PostgreSQL enforces itself).
var integrityChecks = []sqlstore.IntegrityCheck{{Query: refCountCheck, Problem: func(row sqlstore.Row) (string, error) {
	var key, listed, counted int64
	var stored bool
	if err := row.Scan(&key, &listed, &counted, &stored); err != nil {
		return "", err
	}
	if !stored {
		return fmt.Sprintf("item %d: listed by %d responses, missing items", key, listed), nil
	}
	return fmt.Sprintf("item %d: listed by %d responses, counted %d", key, listed, counted), nil
}}}

// refCountCheck lists items whose reference count disagrees with the key
// lists of the stored responses (-1: no count), and listed keys with no
// item.
const refCountCheck = `WITH
	listed AS (
		SELECT DISTINCT k.key, r.seq FROM responses AS r, unnest(r.context_keys || r.output_keys) AS k(key)),
	listings AS (SELECT key, COUNT(*) AS n FROM listed GROUP BY key)
SELECT COALESCE(l.key, x.key, i.key), COALESCE(l.n, 0), COALESCE(x.refs, -1), i.key IS NOT NULL
	FROM listings AS l
	FULL JOIN item_refs AS x ON x.key = l.key
	FULL JOIN items AS i ON i.key = COALESCE(l.key, x.key)
	WHERE x.refs IS DISTINCT FROM l.n OR x.key IS NULL OR i.key IS NULL`

// classify marks a driver error with the store's sentinel for it, so callers
// tell a locked database (store.ErrBusy) from a full one (store.ErrFull) and
// an unreachable one (store.ErrUnavailable) with errors.Is and without the
// driver. The driver's error stays in the chain and the message is
// unchanged. Every error of a call that reached PostgreSQL passes through
// here.
func classify(err error) error { return sqlstore.Classify(err, errorKinds) }

// errorKinds tell the driver errors apart, first match wins.
var errorKinds = []sqlstore.ErrorKind{
	{Kind: store.ErrBusy, Is: isBusy},
	{Kind: store.ErrFull, Is: isFull},
	{Kind: store.ErrUnavailable, Is: isUnavailable},
}

// SQLSTATE codes the backend tells apart.
const (
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeLockNotAvailable     = "55P03" // lock_timeout, NOWAIT
	codeDiskFull             = "53100"
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeAdminShutdown        = "57P01"
	codeCrashShutdown        = "57P02"
	codeCannotConnectNow     = "57P03"
)

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func isBusy(err error) bool {
	switch sqlState(err) {
	case codeSerializationFailure, codeDeadlockDetected, codeLockNotAvailable:
		return true
	}
	return false
}

func isFull(err error) bool { return sqlState(err) == codeDiskFull }

// isUnavailable says the server could not be reached or went away: a
// failed connection attempt (unless the server answered that the
// credentials or the database name are wrong, which retrying won't fix),
// a connection exception (class 08), a shutdown, or a broken socket.
func isUnavailable(err error) bool {
	code := sqlState(err)
	switch {
	case code == codeAdminShutdown, code == codeCrashShutdown, code == codeCannotConnectNow, strings.HasPrefix(code, "08"):
		return true
	case strings.HasPrefix(code, "28"), code == "3D000": // invalid authorization, no such database
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	// pgconn reports a connection it already closed (after a fatal error)
	// with an unexported error; its text is the only handle.
	return code == "" && strings.Contains(err.Error(), "conn closed")
}

func isUniqueViolation(err error) bool     { return sqlState(err) == codeUniqueViolation }
func isForeignKeyViolation(err error) bool { return sqlState(err) == codeForeignKeyViolation }

// writeAttempts is how often a write transaction runs when PostgreSQL
// aborts it for a deadlock or a serialization failure, which a retry
// resolves; a lock timeout is not retried.
const writeAttempts = 3

// writeTx runs fn in one read-committed transaction; its error is
// classified. fn may run again after a deadlock, so it must not keep state
// from an attempt that failed.
func (db *DB) writeTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for range writeAttempts {
		err = db.tryWrite(ctx, fn)
		switch sqlState(err) {
		case codeDeadlockDetected, codeSerializationFailure:
			continue
		}
		break
	}
	return classify(err)
}

func (db *DB) tryWrite(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// readTx runs fn in one repeatable-read, read-only transaction, so
// multi-query reads see one snapshot; its error is classified.
func (db *DB) readTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return classify(err)
	}
	return classify(tx.Commit(ctx))
}
