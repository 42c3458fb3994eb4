-- Conversations (docs/protocol.md "Conversations"): metadata, and items in
-- the order they were added, each kept as its wire JSON. Deleting a
-- conversation deletes its items; responses keep their own copies.
CREATE TABLE conversations (
    id         TEXT    PRIMARY KEY,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    metadata   BLOB    NOT NULL
);
CREATE INDEX conversations_updated ON conversations (updated_at);
CREATE TABLE conversation_items (
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    item_id         TEXT    NOT NULL,
    type            TEXT    NOT NULL,
    json            BLOB    NOT NULL,
    PRIMARY KEY (conversation_id, position)
);
CREATE INDEX conversation_items_id ON conversation_items (conversation_id, item_id);
