-- The whole schema at version 7, the version of the SQLite store's `0007_node_references.sql`:
-- the same tables, columns and meanings (see the SQLite migrations for each), in PostgreSQL's
-- words. Differences: free text that may hold a NUL character (values, descriptions) is
-- `bytea`; flags are `boolean`; functions keep their first-stored order in `ordinal`; the root
-- reference counts are kept by one trigger function per direction.

CREATE TABLE workspaces (
    name TEXT PRIMARY KEY,
    sequence BIGINT NOT NULL DEFAULT 0,
    pruned_below BIGINT NOT NULL DEFAULT 0,
    created BIGINT NOT NULL
);

CREATE TABLE value_pool (
    hash TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);

CREATE TABLE variables (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value BYTEA,
    value_hash TEXT REFERENCES value_pool (hash),
    kind TEXT NOT NULL,
    var_type TEXT NOT NULL,
    description BYTEA,
    tags TEXT NOT NULL,
    keep BOOLEAN NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    last_visited BIGINT NOT NULL,
    reference_count BIGINT NOT NULL,
    sequence BIGINT NOT NULL,
    PRIMARY KEY (workspace, name),
    CHECK ((value IS NULL) <> (value_hash IS NULL))
);

CREATE INDEX variables_by_sequence ON variables (workspace, sequence);
CREATE INDEX variables_by_value ON variables (value_hash) WHERE value_hash IS NOT NULL;

CREATE TABLE removals (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    name TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    PRIMARY KEY (workspace, name)
);

CREATE INDEX removals_by_sequence ON removals (workspace, sequence);

CREATE TABLE approvals (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    key TEXT NOT NULL,
    created BIGINT NOT NULL,
    PRIMARY KEY (workspace, key)
);

CREATE TABLE state (
    workspace TEXT PRIMARY KEY REFERENCES workspaces (name) ON DELETE CASCADE,
    document TEXT NOT NULL
);

CREATE TABLE snapshot_nodes (
    hash TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    refs BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX snapshot_nodes_unreferenced ON snapshot_nodes (refs) WHERE refs <= 0;

CREATE TABLE message_variables (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    identifier TEXT NOT NULL,
    chat_file TEXT NOT NULL,
    message_id BIGINT,
    swipe_id BIGINT,
    root TEXT NOT NULL REFERENCES snapshot_nodes (hash),
    created_at BIGINT NOT NULL,
    summary TEXT,
    stored_bytes BIGINT,
    PRIMARY KEY (workspace, identifier)
);

CREATE INDEX message_variables_by_floor
    ON message_variables (workspace, chat_file, message_id, swipe_id, created_at);
CREATE INDEX message_variables_by_root ON message_variables (root);

CREATE TABLE templates (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    character_id TEXT NOT NULL,
    root TEXT NOT NULL REFERENCES snapshot_nodes (hash),
    PRIMARY KEY (workspace, character_id)
);

CREATE INDEX templates_by_root ON templates (root);

CREATE TABLE functions (
    ordinal BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    definition TEXT NOT NULL,
    UNIQUE (workspace, scope, id)
);

CREATE TABLE global_snapshots (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    identifier TEXT NOT NULL,
    label TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    root TEXT NOT NULL REFERENCES snapshot_nodes (hash),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (workspace, identifier),
    UNIQUE (workspace, label)
);

CREATE INDEX global_snapshots_by_root ON global_snapshots (root);

CREATE TABLE snapshot_switches (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    target TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    PRIMARY KEY (workspace, target)
);

CREATE TABLE tool_switches (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    target TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    PRIMARY KEY (workspace, target)
);

-- A row naming a root adds a reference to it; removing the row (cascades included) or moving
-- it to another root takes the reference away.
CREATE FUNCTION snapshot_root_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE snapshot_nodes SET refs = refs + 1 WHERE hash = NEW.root;
    RETURN NULL;
END
$$;

CREATE FUNCTION snapshot_root_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE snapshot_nodes SET refs = refs - 1 WHERE hash = OLD.root;
    RETURN NULL;
END
$$;

CREATE TRIGGER message_variables_root_added AFTER INSERT ON message_variables
    FOR EACH ROW EXECUTE FUNCTION snapshot_root_added();
CREATE TRIGGER message_variables_root_removed AFTER DELETE ON message_variables
    FOR EACH ROW EXECUTE FUNCTION snapshot_root_removed();
CREATE TRIGGER message_variables_root_changed_to AFTER UPDATE OF root ON message_variables
    FOR EACH ROW WHEN (OLD.root IS DISTINCT FROM NEW.root) EXECUTE FUNCTION snapshot_root_added();
CREATE TRIGGER message_variables_root_changed_from AFTER UPDATE OF root ON message_variables
    FOR EACH ROW WHEN (OLD.root IS DISTINCT FROM NEW.root) EXECUTE FUNCTION snapshot_root_removed();

CREATE TRIGGER templates_root_added AFTER INSERT ON templates
    FOR EACH ROW EXECUTE FUNCTION snapshot_root_added();
CREATE TRIGGER templates_root_removed AFTER DELETE ON templates
    FOR EACH ROW EXECUTE FUNCTION snapshot_root_removed();
CREATE TRIGGER templates_root_changed_to AFTER UPDATE OF root ON templates
    FOR EACH ROW WHEN (OLD.root IS DISTINCT FROM NEW.root) EXECUTE FUNCTION snapshot_root_added();
CREATE TRIGGER templates_root_changed_from AFTER UPDATE OF root ON templates
    FOR EACH ROW WHEN (OLD.root IS DISTINCT FROM NEW.root) EXECUTE FUNCTION snapshot_root_removed();

CREATE TRIGGER global_snapshots_root_added AFTER INSERT ON global_snapshots
    FOR EACH ROW EXECUTE FUNCTION snapshot_root_added();
CREATE TRIGGER global_snapshots_root_removed AFTER DELETE ON global_snapshots
    FOR EACH ROW EXECUTE FUNCTION snapshot_root_removed();
CREATE TRIGGER global_snapshots_root_changed_to AFTER UPDATE OF root ON global_snapshots
    FOR EACH ROW WHEN (OLD.root IS DISTINCT FROM NEW.root) EXECUTE FUNCTION snapshot_root_added();
CREATE TRIGGER global_snapshots_root_changed_from AFTER UPDATE OF root ON global_snapshots
    FOR EACH ROW WHEN (OLD.root IS DISTINCT FROM NEW.root) EXECUTE FUNCTION snapshot_root_removed();
