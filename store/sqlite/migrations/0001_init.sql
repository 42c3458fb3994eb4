-- Stored responses. id is the wire id ("resp_…"). previous_response_id is
-- not a foreign key: a parent may be deleted while its children stay readable.
-- context_keys and output_keys are JSON arrays of item keys, in order: every
-- response owns its full context list, so deleting an ancestor never breaks a
-- descendant, and a save writes one row instead of one row per context item.
CREATE TABLE responses (
    seq                  INTEGER PRIMARY KEY,
    id                   TEXT    NOT NULL UNIQUE,
    created_at           INTEGER NOT NULL,
    model                TEXT    NOT NULL,
    previous_response_id TEXT    NOT NULL DEFAULT '',
    snapshot             BLOB    NOT NULL,
    tools                BLOB,
    context_keys         TEXT    NOT NULL DEFAULT '[]',
    output_keys          TEXT    NOT NULL DEFAULT '[]',
    input_start          INTEGER NOT NULL CHECK (input_start >= 0),
    rendered_tokens      INTEGER NOT NULL DEFAULT 0
);

-- Items are stored once, under a server-assigned key. AUTOINCREMENT so a key
-- is never reused: a stale key held by a cache can then never name another item.
CREATE TABLE items (
    key       INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id   TEXT    NOT NULL DEFAULT '',
    type      TEXT    NOT NULL,
    json      BLOB    NOT NULL,
    is_output INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX items_output_item_id ON items (item_id) WHERE is_output = 1;

-- How many responses list each item (in their context or output). Kept apart
-- from items so that counting a long context's references rewrites a few
-- narrow pages, not the pages holding the items' JSON.
CREATE TABLE item_refs (
    key  INTEGER PRIMARY KEY REFERENCES items (key) ON DELETE CASCADE,
    refs INTEGER NOT NULL CHECK (refs >= 0)
);

-- One row per response, stored or not.
CREATE TABLE usage_ledger (
    seq           INTEGER PRIMARY KEY,
    response_id   TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    model         TEXT    NOT NULL,
    transport     TEXT    NOT NULL,
    engine        TEXT    NOT NULL,
    input_tokens  INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    stored        INTEGER NOT NULL
);
CREATE INDEX usage_ledger_response_id ON usage_ledger (response_id);

-- Runs of races. Times are unix nanoseconds; JSON columns belong to rollout.
CREATE TABLE runs (
    id         TEXT    PRIMARY KEY,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    scenario   TEXT    NOT NULL,
    profile    TEXT    NOT NULL,
    status     TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'passed', 'failed', 'interrupted')),
    config     BLOB,
    summary    BLOB
);
CREATE INDEX runs_created_at ON runs (created_at);

CREATE TABLE lanes (
    seq     INTEGER PRIMARY KEY,
    run_id  TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name    TEXT    NOT NULL,
    status  TEXT    NOT NULL,
    summary BLOB,
    UNIQUE (run_id, name)
);

CREATE TABLE turns (
    run_id      TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    lane        TEXT    NOT NULL,
    repeat      INTEGER NOT NULL,
    idx         INTEGER NOT NULL,
    response_id TEXT    NOT NULL DEFAULT '',
    timings     BLOB,
    request     BLOB,
    output      BLOB,
    PRIMARY KEY (run_id, lane, repeat, idx)
);

CREATE TABLE spans (
    seq         INTEGER PRIMARY KEY,
    run_id      TEXT    NOT NULL,
    lane        TEXT    NOT NULL,
    repeat      INTEGER NOT NULL,
    turn_index  INTEGER NOT NULL,
    response_id TEXT    NOT NULL DEFAULT '',
    name        TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT '',
    start_ns    INTEGER NOT NULL,
    duration_ns INTEGER NOT NULL CHECK (duration_ns >= 0),
    items       INTEGER NOT NULL DEFAULT 0,
    tokens      INTEGER NOT NULL DEFAULT 0,
    bytes       INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (run_id, lane, repeat, turn_index)
        REFERENCES turns (run_id, lane, repeat, idx) ON DELETE CASCADE
);
CREATE INDEX spans_turn ON spans (run_id, lane, repeat, turn_index);
