-- The key that seals the blobs the server hands to clients (package seal:
-- reasoning items' encrypted_content), made once by the first server to
-- ask and kept, so that blobs open after a restart. One row, ever.
CREATE TABLE seal_key (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    key        BLOB    NOT NULL,
    created_at INTEGER NOT NULL
);
