package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step, named NNNN_what.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_what.sql", name)
		}
		v, err := strconv.Atoi(prefix)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		body, err := fs.ReadFile(migrationFiles, "migrations/"+name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate applies the pending migrations, each in its own transaction
// together with its schema_migrations row, so a crash leaves every step
// either applied and recorded or not at all.
func migrate(ctx context.Context, w *sql.DB, log *slog.Logger) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var newest int
	if err := w.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if known := ms[len(ms)-1].version; newest > known {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", newest, known)
	}
	for _, m := range ms {
		applied, err := applyMigration(ctx, w, m)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
		if applied {
			log.Info("store: applied migration", "version", m.version, "name", m.name)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, w *sql.DB, m migration) (applied bool, err error) {
	// A step may rebuild a table, so foreign keys are off while it runs (on
	// the writer's one connection; the pragma is a no-op inside a
	// transaction), and checked before it commits.
	if _, err := w.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return false, err
	}
	defer w.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`)
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	// Checked inside the IMMEDIATE transaction, so two processes opening the
	// same file cannot both apply a step.
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().Unix()); err != nil {
		return false, err
	}
	rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return false, err
	}
	broken := rows.Next()
	rows.Close()
	if broken {
		return false, fmt.Errorf("the step leaves rows whose foreign keys point nowhere")
	}
	return true, tx.Commit()
}
