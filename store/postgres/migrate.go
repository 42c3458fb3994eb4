package postgres

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"time"

	"agentloop/store/internal/migrations"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// steps returns the embedded migrations in version order.
func steps() ([]migrations.Migration, error) { return migrations.Load(migrationFiles, "migrations") }

// migrationLock is the advisory lock key replicas take while migrating, so
// two processes starting together apply each step once.
const migrationLock = 0x6167656e746c6f6f // "agentloo"

// migrate applies the pending migrations in one transaction, together with
// their schema_migrations rows, under an advisory lock: a crash leaves
// every step either applied and recorded or not at all, and replicas
// starting at once wait for each other.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	ms, err := steps()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var applied []migrations.Migration
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at BIGINT  NOT NULL
		)`); err != nil {
			return err
		}
		var newest int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&newest); err != nil {
			return err
		}
		if err := migrations.CheckSchema(ms, newest); err != nil {
			return err
		}
		for _, m := range ms {
			if m.Version <= newest {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.Version, m.Name, time.Now().Unix()); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			applied = append(applied, m)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range applied {
		log.Info("store: applied migration", "version", m.Version, "name", m.Name)
	}
	return nil
}
