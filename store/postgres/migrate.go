package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step, named NNNN_what.sql. The versions
// are PostgreSQL's own: they need not match SQLite's.
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

// migrationLock is the advisory lock key replicas take while migrating, so
// two processes starting together apply each step once.
const migrationLock = 0x6167656e746c6f6f // "agentloo"

// migrate applies the pending migrations in one transaction, together with
// their schema_migrations rows, under an advisory lock: a crash leaves
// every step either applied and recorded or not at all, and replicas
// starting at once wait for each other.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var applied []migration
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
		if known := ms[len(ms)-1].version; newest > known {
			return fmt.Errorf("database schema version %d is newer than this binary's %d", newest, known)
		}
		for _, m := range ms {
			if m.version <= newest {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, time.Now().Unix()); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			applied = append(applied, m)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range applied {
		log.Info("store: applied migration", "version", m.version, "name", m.name)
	}
	return nil
}
