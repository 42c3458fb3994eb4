package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// reclaimPages returns the pages a sweep freed to the file system, a
// few hundred per statement, never with a full VACUUM.
func (db *DB) reclaimPages(ctx context.Context) error {
	if _, err := db.w.ExecContext(ctx, `PRAGMA incremental_vacuum(512)`); err != nil {
		return fmt.Errorf("store: incremental vacuum: %w", classify(err))
	}
	return nil
}

// incrementalVacuum makes the file give freed pages back on request
// (PRAGMA incremental_vacuum) instead of never. A new file takes the mode
// before its first table; an older one is rebuilt once with VACUUM.
func incrementalVacuum(ctx context.Context, w *sql.DB) error {
	var mode int
	if err := w.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return err
	}
	const incremental = 2
	if mode == incremental {
		return nil
	}
	if _, err := w.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
		return err
	}
	var tables int
	if err := w.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&tables); err != nil {
		return err
	}
	if tables > 0 {
		_, err := w.ExecContext(ctx, `VACUUM`)
		return err
	}
	return nil
}
