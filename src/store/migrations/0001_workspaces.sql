-- Workspaces and their variables, with a change sequence per workspace so that several processes
-- can share one workspace, a pool of long values stored once by hash, removals kept (for a while)
-- so that other processes hear of them, and remembered ask-once approvals.

CREATE TABLE workspaces (
    name TEXT PRIMARY KEY,
    -- Bumped by every committed change; rows carry the sequence that wrote them.
    sequence INTEGER NOT NULL DEFAULT 0,
    -- Removals stamped below this were pruned: a process that has seen less reloads in full.
    pruned_below INTEGER NOT NULL DEFAULT 0,
    created INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE value_pool (
    hash TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE variables (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    name TEXT NOT NULL,
    -- Short values inline; long ones in the pool.
    value TEXT,
    value_hash TEXT REFERENCES value_pool (hash),
    kind TEXT NOT NULL,
    var_type TEXT NOT NULL,
    description TEXT,
    tags TEXT NOT NULL,
    keep INTEGER NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    last_visited INTEGER NOT NULL,
    reference_count INTEGER NOT NULL,
    sequence INTEGER NOT NULL,
    PRIMARY KEY (workspace, name),
    CHECK ((value IS NULL) <> (value_hash IS NULL))
) WITHOUT ROWID;

CREATE INDEX variables_by_sequence ON variables (workspace, sequence);
CREATE INDEX variables_by_value ON variables (value_hash) WHERE value_hash IS NOT NULL;

CREATE TABLE removals (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    name TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    PRIMARY KEY (workspace, name)
) WITHOUT ROWID;

CREATE INDEX removals_by_sequence ON removals (workspace, sequence);

CREATE TABLE approvals (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    key TEXT NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (workspace, key)
) WITHOUT ROWID;
