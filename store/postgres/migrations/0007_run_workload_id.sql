-- A run names the workload it raced and never holds it: lists read every
-- run's config, so a config stays a few hundred bytes.
ALTER TABLE runs ADD COLUMN workload_id TEXT NOT NULL DEFAULT '';
-- When the run first became running: with updated_at, when it really ran,
-- read without its turns (0: not yet, or stored before this step).
ALTER TABLE runs ADD COLUMN started_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX runs_workload ON runs (workload_id) WHERE workload_id <> '';

-- Runs stored before this step hold their workload in their config. Each
-- keeps it as a stored workload: under the id the config names, or a new
-- one; then the config loses its copy. A config that is not JSON is left
-- as it is.
DO $$
DECLARE
    r   RECORD;
    cfg JSONB;
    wid TEXT;
BEGIN
    FOR r IN SELECT id, created_at, config FROM runs
             WHERE config IS NOT NULL AND position('"workload"' IN convert_from(config, 'UTF8')) > 0 LOOP
        BEGIN
            cfg := convert_from(r.config, 'UTF8')::jsonb;
        EXCEPTION WHEN others THEN
            CONTINUE;
        END;
        IF jsonb_typeof(cfg -> 'workload') <> 'object' THEN
            CONTINUE;
        END IF;
        wid := COALESCE(cfg ->> 'workload_id', 'wl_' || md5(r.id || clock_timestamp()::text));
        INSERT INTO workloads (id, created_at, source, turns, json)
            VALUES (wid, r.created_at, COALESCE(cfg -> 'workload' ->> 'source', ''),
                    COALESCE(jsonb_array_length(cfg -> 'workload' -> 'turns'), 0),
                    convert_to((cfg -> 'workload')::text, 'UTF8'))
            ON CONFLICT (id) DO NOTHING;
        UPDATE runs SET workload_id = wid,
                        config = convert_to(((cfg - 'workload') || jsonb_build_object('workload_id', wid))::text, 'UTF8')
            WHERE id = r.id;
    END LOOP;
END $$;

-- Workloads are stored without indentation (they were indented).
DO $$
DECLARE
    w RECORD;
BEGIN
    FOR w IN SELECT id, json FROM workloads LOOP
        BEGIN
            UPDATE workloads SET json = convert_to((convert_from(w.json, 'UTF8')::jsonb)::text, 'UTF8') WHERE id = w.id;
        EXCEPTION WHEN others THEN
            NULL;
        END;
    END LOOP;
END $$;
