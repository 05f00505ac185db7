-- Reference counts on snapshot tree nodes, so that deleting snapshots frees exactly the nodes
-- nothing refers to any more, without walking every tree of the store.
--
-- A node's `refs` is the number of references to it: one per chat snapshot, template or
-- global snapshot whose root it is, and one per reference in the body of another node (a node
-- that refers to it twice counts twice). The triggers below keep the first part as rows come
-- and go (foreign-key cascades included); the store keeps the second part when it writes or
-- frees a node, and computes both for the nodes already stored when this migration runs.
-- A node whose count reaches zero is freed in the same transaction, and the nodes it referred
-- to lose a reference in turn.
--
-- Rows that refer to a root must not be replaced with `INSERT OR REPLACE`: the rows it
-- deletes fire no delete trigger (recursive triggers are off), so their roots would keep a
-- reference for ever. Upserts fire the update triggers.

ALTER TABLE snapshot_nodes ADD COLUMN refs INTEGER NOT NULL DEFAULT 0;

-- The nodes waiting to be freed; normally empty between transactions.
CREATE INDEX snapshot_nodes_unreferenced ON snapshot_nodes (refs) WHERE refs <= 0;

-- Freeing a node checks that no row still names it as a root (the foreign keys): without these
-- indexes, every freed node would read all the rows of each table.
CREATE INDEX message_variables_by_root ON message_variables (root);
CREATE INDEX templates_by_root ON templates (root);
CREATE INDEX global_snapshots_by_root ON global_snapshots (root);

CREATE TRIGGER message_variables_root_added AFTER INSERT ON message_variables BEGIN
    UPDATE snapshot_nodes SET refs = refs + 1 WHERE hash = NEW.root;
END;
CREATE TRIGGER message_variables_root_removed AFTER DELETE ON message_variables BEGIN
    UPDATE snapshot_nodes SET refs = refs - 1 WHERE hash = OLD.root;
END;
CREATE TRIGGER message_variables_root_changed AFTER UPDATE OF root ON message_variables
WHEN OLD.root IS NOT NEW.root BEGIN
    UPDATE snapshot_nodes SET refs = refs + 1 WHERE hash = NEW.root;
    UPDATE snapshot_nodes SET refs = refs - 1 WHERE hash = OLD.root;
END;

CREATE TRIGGER templates_root_added AFTER INSERT ON templates BEGIN
    UPDATE snapshot_nodes SET refs = refs + 1 WHERE hash = NEW.root;
END;
CREATE TRIGGER templates_root_removed AFTER DELETE ON templates BEGIN
    UPDATE snapshot_nodes SET refs = refs - 1 WHERE hash = OLD.root;
END;
CREATE TRIGGER templates_root_changed AFTER UPDATE OF root ON templates
WHEN OLD.root IS NOT NEW.root BEGIN
    UPDATE snapshot_nodes SET refs = refs + 1 WHERE hash = NEW.root;
    UPDATE snapshot_nodes SET refs = refs - 1 WHERE hash = OLD.root;
END;

CREATE TRIGGER global_snapshots_root_added AFTER INSERT ON global_snapshots BEGIN
    UPDATE snapshot_nodes SET refs = refs + 1 WHERE hash = NEW.root;
END;
CREATE TRIGGER global_snapshots_root_removed AFTER DELETE ON global_snapshots BEGIN
    UPDATE snapshot_nodes SET refs = refs - 1 WHERE hash = OLD.root;
END;
CREATE TRIGGER global_snapshots_root_changed AFTER UPDATE OF root ON global_snapshots
WHEN OLD.root IS NOT NEW.root BEGIN
    UPDATE snapshot_nodes SET refs = refs + 1 WHERE hash = NEW.root;
    UPDATE snapshot_nodes SET refs = refs - 1 WHERE hash = OLD.root;
END;
