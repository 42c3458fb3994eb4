-- Workloads: the shape of an agent session (docs/workload.md), never its
-- content. Kept like runs: a permalink, and the same retention.
CREATE TABLE workloads (
    id         TEXT    PRIMARY KEY,
    created_at BIGINT  NOT NULL,
    source     TEXT    NOT NULL,
    turns      INTEGER NOT NULL,
    json       BYTEA   NOT NULL
);
CREATE INDEX workloads_created ON workloads (created_at);
