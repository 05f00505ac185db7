-- The plans' state document: one JSON object per workspace, read and written whole inside
-- IMMEDIATE transactions, so two processes never lose each other's state writes.

CREATE TABLE state (
    workspace TEXT PRIMARY KEY REFERENCES workspaces (name) ON DELETE CASCADE,
    document TEXT NOT NULL
) WITHOUT ROWID;
