-- The whole schema of SQLite's migrations 0001 to 0003, in PostgreSQL's
-- types. Times of responses and the ledger are unix seconds; times of runs,
-- lanes and login sessions are unix nanoseconds, as in SQLite.

-- Stored responses. id is the wire id ("resp_…"). previous_response_id is
-- not a foreign key: a parent may be deleted while its children stay readable.
-- context_keys and output_keys are arrays of item keys, in order: every
-- response owns its full context list, so deleting an ancestor never breaks a
-- descendant, and a save writes one row instead of one row per context item.
CREATE TABLE responses (
    seq                  BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                   TEXT    NOT NULL UNIQUE,
    created_at           BIGINT  NOT NULL,
    model                TEXT    NOT NULL,
    previous_response_id TEXT    NOT NULL DEFAULT '',
    snapshot             BYTEA   NOT NULL,
    tools                BYTEA,
    context_keys         BIGINT[] NOT NULL DEFAULT '{}',
    output_keys          BIGINT[] NOT NULL DEFAULT '{}',
    input_start          INTEGER NOT NULL CHECK (input_start >= 0),
    rendered_tokens      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX responses_created_at ON responses (created_at);

-- Items are stored once, under a server-assigned key. A sequence never
-- hands out a key twice: a stale key held by a cache can never name another item.
CREATE TABLE items (
    key       BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id   TEXT    NOT NULL DEFAULT '',
    type      TEXT    NOT NULL,
    json      BYTEA   NOT NULL,
    is_output BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX items_output_item_id ON items (item_id) WHERE is_output;

-- How many responses list each item (in their context or output). Kept apart
-- from items so that counting a long context's references rewrites narrow
-- rows, not the rows holding the items' JSON.
CREATE TABLE item_refs (
    key  BIGINT  PRIMARY KEY REFERENCES items (key) ON DELETE CASCADE,
    refs INTEGER NOT NULL CHECK (refs >= 0)
);

-- One row per response, stored or not.
CREATE TABLE usage_ledger (
    seq           BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    response_id   TEXT    NOT NULL,
    created_at    BIGINT  NOT NULL,
    model         TEXT    NOT NULL,
    transport     TEXT    NOT NULL,
    engine        TEXT    NOT NULL,
    input_tokens  INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    stored        BOOLEAN NOT NULL
);
CREATE INDEX usage_ledger_response_id ON usage_ledger (response_id);

-- Runs of races. JSON columns belong to rollout.
CREATE TABLE runs (
    id         TEXT   PRIMARY KEY,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    scenario   TEXT   NOT NULL,
    profile    TEXT   NOT NULL,
    status     TEXT   NOT NULL CHECK (status IN ('queued', 'running', 'passed', 'failed', 'interrupted', 'cancelled')),
    config     BYTEA,
    summary    BYTEA
);
CREATE INDEX runs_created_at ON runs (created_at);

CREATE TABLE lanes (
    seq     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id  TEXT   NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name    TEXT   NOT NULL,
    status  TEXT   NOT NULL,
    summary BYTEA,
    UNIQUE (run_id, name)
);

CREATE TABLE turns (
    run_id      TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    lane        TEXT    NOT NULL,
    repeat      INTEGER NOT NULL,
    idx         INTEGER NOT NULL,
    response_id TEXT    NOT NULL DEFAULT '',
    timings     BYTEA,
    request     BYTEA,
    output      BYTEA,
    PRIMARY KEY (run_id, lane, repeat, idx)
);

CREATE TABLE spans (
    seq         BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      TEXT    NOT NULL,
    lane        TEXT    NOT NULL,
    repeat      INTEGER NOT NULL,
    turn_index  INTEGER NOT NULL,
    response_id TEXT    NOT NULL DEFAULT '',
    name        TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT '',
    start_ns    BIGINT  NOT NULL,
    duration_ns BIGINT  NOT NULL CHECK (duration_ns >= 0),
    items       BIGINT  NOT NULL DEFAULT 0,
    tokens      BIGINT  NOT NULL DEFAULT 0,
    bytes       BIGINT  NOT NULL DEFAULT 0,
    FOREIGN KEY (run_id, lane, repeat, turn_index)
        REFERENCES turns (run_id, lane, repeat, idx) ON DELETE CASCADE
);
CREATE INDEX spans_turn ON spans (run_id, lane, repeat, turn_index);

-- Browser logins (--api-key). id is the server's HMAC of the cookie's
-- random token under the API key, never the token itself. Named
-- login_sessions so as not to be taken for the inspector's sessions.
CREATE TABLE login_sessions (
    id         TEXT   PRIMARY KEY,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX login_sessions_expires_at ON login_sessions (expires_at);
