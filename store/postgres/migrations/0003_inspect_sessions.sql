-- The inspector's client sessions and their turns. Times are unix
-- nanoseconds; summary and turn are JSON owned by the inspector. A session
-- row is rewritten as turns arrive; retention deletes a session (and its
-- turns) once it has been idle longer than --retention.
CREATE TABLE inspect_sessions (
    id         TEXT    PRIMARY KEY,
    session    TEXT    NOT NULL,
    transport  TEXT    NOT NULL,
    user_agent TEXT    NOT NULL DEFAULT '',
    originator TEXT    NOT NULL DEFAULT '',
    beta       TEXT    NOT NULL DEFAULT '',
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL,
    turns      INTEGER NOT NULL DEFAULT 0,
    summary    BYTEA
);
CREATE INDEX inspect_sessions_updated_at ON inspect_sessions (updated_at);

CREATE TABLE inspect_turns (
    session_id  TEXT    NOT NULL REFERENCES inspect_sessions (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    response_id TEXT    NOT NULL DEFAULT '',
    created_at  BIGINT  NOT NULL,
    turn        BYTEA   NOT NULL,
    PRIMARY KEY (session_id, idx)
);
