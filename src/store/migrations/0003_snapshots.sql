-- Chat state snapshots, the function libraries and the character templates.
--
-- A snapshot is stored as a tree of content-addressed nodes: every object, array or string of
-- 64 characters or more becomes a node keyed by (a prefix of) its SHA-256, and its parent
-- refers to it as {"__vmRef": "<hash>"} (a value pool, applied at every level). Two
-- snapshots that differ in one field share every node off that field's path, so a long chat
-- whose state barely changes stays small.

CREATE TABLE snapshot_nodes (
    hash TEXT PRIMARY KEY,
    body TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE message_variables (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    identifier TEXT NOT NULL,
    chat_file TEXT NOT NULL,
    message_id INTEGER,
    swipe_id INTEGER,
    root TEXT NOT NULL REFERENCES snapshot_nodes (hash),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (workspace, identifier)
) WITHOUT ROWID;

CREATE INDEX message_variables_by_chat ON message_variables (workspace, chat_file);

CREATE TABLE templates (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    character_id TEXT NOT NULL,
    root TEXT NOT NULL REFERENCES snapshot_nodes (hash),
    PRIMARY KEY (workspace, character_id)
) WITHOUT ROWID;

-- Functions keep the order they were first stored in (their rowid).
CREATE TABLE functions (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    definition TEXT NOT NULL,
    UNIQUE (workspace, scope, id)
);
