package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"
	"time"

	"agentloop/store/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// steps returns the embedded migrations in version order.
func steps() ([]migrations.Migration, error) { return migrations.Load(migrationFiles, "migrations") }

// migrate applies the pending migrations, each in its own transaction
// together with its schema_migrations row, so a crash leaves every step
// either applied and recorded or not at all.
func migrate(ctx context.Context, w *sql.DB, log *slog.Logger) error {
	ms, err := steps()
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
	if err := migrations.CheckSchema(ms, newest); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range ms {
		applied, err := applyMigration(ctx, w, m)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", m.Name, err)
		}
		if applied {
			log.Info("store: applied migration", "version", m.Version, "name", m.Name)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, w *sql.DB, m migrations.Migration) (applied bool, err error) {
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
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().Unix()); err != nil {
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
