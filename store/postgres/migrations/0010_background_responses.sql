-- Background responses (docs/protocol.md "Background responses"): the
-- state and cancel flag any replica reads, and the events a stream
-- resumes from. failed_snapshot is what snapshot becomes, whole, when the
-- running replica stops before the response ends.
CREATE TABLE background_responses (
    id               TEXT    PRIMARY KEY,
    created_at       BIGINT  NOT NULL,
    replica          TEXT    NOT NULL,
    client           TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    heartbeat        BIGINT  NOT NULL,
    snapshot         BYTEA   NOT NULL,
    failed_snapshot  BYTEA   NOT NULL
);
CREATE INDEX background_responses_open ON background_responses (status, replica);
CREATE INDEX background_responses_client ON background_responses (client, status);
CREATE INDEX background_responses_created ON background_responses (created_at);
CREATE TABLE background_events (
    response_id TEXT    NOT NULL REFERENCES background_responses (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    data        BYTEA   NOT NULL,
    PRIMARY KEY (response_id, seq)
);
