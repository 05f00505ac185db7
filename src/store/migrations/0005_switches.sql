-- The enable switch of chat state processing, per chat and per character.
--
-- `target` is `chat:<chat file>` or `character:<character id>`; a row holds that target's own
-- setting (1 on, 0 off). No row: the target follows the next one up (a chat its character, a
-- character the default, which is on). Moving a function between libraries needs no table: it
-- changes the `scope` of its row in `functions`.

CREATE TABLE snapshot_switches (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    target TEXT NOT NULL,
    enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    PRIMARY KEY (workspace, target)
) WITHOUT ROWID;
