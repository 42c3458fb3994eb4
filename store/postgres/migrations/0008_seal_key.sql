-- The key that seals the blobs the server hands to clients (package seal:
-- reasoning items' encrypted_content), made once by the first replica to
-- ask and kept, so that blobs open after a restart and on every replica
-- sharing the database. One row, ever.
CREATE TABLE seal_key (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    key        BYTEA   NOT NULL,
    created_at BIGINT  NOT NULL
);
