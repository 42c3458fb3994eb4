-- A run names the workload it raced and never holds it: lists read every
-- run's config, so a config stays a few hundred bytes.
ALTER TABLE runs ADD COLUMN workload_id TEXT NOT NULL DEFAULT '';
-- When the run first became running: with updated_at, when it really ran,
-- read without its turns (0: not yet, or stored before this step).
ALTER TABLE runs ADD COLUMN started_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_workload ON runs (workload_id) WHERE workload_id <> '';

-- Runs stored before this step hold their workload in their config. Each
-- keeps it as a stored workload: under the id the config names, or a new
-- one; then the config loses its copy.
UPDATE runs SET workload_id = json_extract(CAST(config AS TEXT), '$.workload_id')
    WHERE json_valid(CAST(config AS TEXT)) AND json_type(CAST(config AS TEXT), '$.workload_id') = 'text';
UPDATE runs SET workload_id = 'wl_' || lower(hex(randomblob(16)))
    WHERE workload_id = '' AND json_valid(CAST(config AS TEXT)) AND json_type(CAST(config AS TEXT), '$.workload') = 'object';
INSERT OR IGNORE INTO workloads (id, created_at, source, turns, json)
    SELECT workload_id, created_at,
           COALESCE(json_extract(CAST(config AS TEXT), '$.workload.source'), ''),
           COALESCE(json_array_length(CAST(config AS TEXT), '$.workload.turns'), 0),
           CAST(json_extract(CAST(config AS TEXT), '$.workload') AS BLOB)
    FROM runs WHERE json_valid(CAST(config AS TEXT)) AND json_type(CAST(config AS TEXT), '$.workload') = 'object';
UPDATE runs SET config = CAST(json_set(json_remove(CAST(config AS TEXT), '$.workload'), '$.workload_id', workload_id) AS BLOB)
    WHERE json_valid(CAST(config AS TEXT)) AND json_type(CAST(config AS TEXT), '$.workload') IS NOT NULL;

-- Workloads are stored compact (they were indented).
UPDATE workloads SET json = CAST(json(CAST(json AS TEXT)) AS BLOB) WHERE json_valid(CAST(json AS TEXT));
