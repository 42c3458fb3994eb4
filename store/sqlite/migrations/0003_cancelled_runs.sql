-- Runs may end cancelled. SQLite cannot change a CHECK constraint in place,
-- so the table is rebuilt (migrate turns foreign keys off around a step, so
-- that dropping the old table cascades to nothing).
CREATE TABLE runs_new (
    id         TEXT    PRIMARY KEY,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    scenario   TEXT    NOT NULL,
    profile    TEXT    NOT NULL,
    status     TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'passed', 'failed', 'interrupted', 'cancelled')),
    config     BLOB,
    summary    BLOB
);
INSERT INTO runs_new (id, created_at, updated_at, scenario, profile, status, config, summary)
    SELECT id, created_at, updated_at, scenario, profile, status, config, summary FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_created_at ON runs (created_at);
