-- Floors and global snapshots.
--
-- Each chat snapshot keeps a one-line summary of what its message changed against the state it
-- was built on, and the bytes of tree nodes it added to the store, written once when it is
-- stored: listing a chat's floors then reads rows only and never decodes a tree.
--
-- A global snapshot is a state saved under a label (unique in its workspace), outside any chat:
-- a chat can start from it instead of its character's template. Its tree shares nodes with the
-- chat snapshots, so the node sweep counts its root as reachable.

ALTER TABLE message_variables ADD COLUMN summary TEXT;
ALTER TABLE message_variables ADD COLUMN stored_bytes INTEGER;

-- Floors are listed by message and swipe; the index serves the chat filter of the old one too.
DROP INDEX message_variables_by_chat;
CREATE INDEX message_variables_by_floor
    ON message_variables (workspace, chat_file, message_id, swipe_id, created_at);

CREATE TABLE global_snapshots (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    identifier TEXT NOT NULL,
    label TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    root TEXT NOT NULL REFERENCES snapshot_nodes (hash),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (workspace, identifier),
    UNIQUE (workspace, label)
) WITHOUT ROWID;
