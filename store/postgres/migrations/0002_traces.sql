-- Engine traces, so that any replica answers GET /api/traces/{id}: timings
-- and counts as JSON, never content. Retention sweeps them with responses.
CREATE TABLE traces (
    response_id     TEXT   PRIMARY KEY,
    replica         TEXT   NOT NULL DEFAULT '',
    started_unix_ns BIGINT NOT NULL,
    trace           JSONB  NOT NULL
);
CREATE INDEX traces_started ON traces (started_unix_ns);
