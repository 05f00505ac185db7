-- Tool groups and tools switched on or off at runtime (`ToolGroups`), per workspace.
--
-- `target` is `group:<group name>` or `tool:<tool name>`; a row holds the choice (1 on, 0 off)
-- and wins over the configuration's default. A group that is not registered (a script folder
-- or an upstream server not there today) keeps its row for when it comes back.

CREATE TABLE tool_switches (
    workspace TEXT NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
    target TEXT NOT NULL,
    enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    PRIMARY KEY (workspace, target)
) WITHOUT ROWID;
