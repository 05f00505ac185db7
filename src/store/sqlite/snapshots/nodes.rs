//! The tree nodes of snapshots, templates and global snapshots in SQLite, with their reference
//! counts (`0007_node_references.sql`): writing a batch's nodes counts the references of each
//! node the store did not hold, and freeing starts from the nodes whose count fell to zero, so
//! deleting snapshots costs what it frees, not a walk over every tree of the store.
//!
//! The count of a node is one per row whose root it is (kept by the triggers) plus one per
//! reference in the body of another stored node (kept here). Every function runs inside the
//! caller's transaction; the counts hold again when it commits.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Transaction, params};

use crate::store::rows::{self, NodeTable};
use crate::store::tree::{self, Encoded};

/// A stored value SQLite gave back that cannot be read, as rusqlite's conversion error.
pub(super) fn corrupt(message: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, message.into())
}

/// The node statements of [`rows::write_nodes`] and [`rows::free_unreferenced`] in SQLite.
struct Nodes<'a, 'c>(&'a Transaction<'c>);

impl NodeTable for Nodes<'_, '_> {
    type Error = rusqlite::Error;

    fn insert(&mut self, hash: &str, body: &str, refs: i64) -> rusqlite::Result<bool> {
        self.0
            .prepare_cached(
                "INSERT INTO snapshot_nodes (hash, body, refs) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (hash) DO NOTHING",
            )?
            .execute(params![hash, body, refs])
            .map(|inserted| inserted > 0)
    }

    fn add_reference(&mut self, hash: &str) -> rusqlite::Result<bool> {
        self.0
            .prepare_cached("UPDATE snapshot_nodes SET refs = refs + 1 WHERE hash = ?1")?
            .execute(params![hash])
            .map(|updated| updated > 0)
    }

    fn unreferenced(&mut self) -> rusqlite::Result<Vec<String>> {
        self.0
            .prepare_cached("SELECT hash FROM snapshot_nodes WHERE refs <= 0")?
            .query_map([], |row| row.get(0))?
            .collect()
    }

    fn delete_unreferenced(&mut self, hash: &str) -> rusqlite::Result<Option<String>> {
        self.0
            .prepare_cached(
                "DELETE FROM snapshot_nodes WHERE hash = ?1 AND refs <= 0 RETURNING body",
            )?
            .query_row(params![hash], |row| row.get(0))
            .optional()
    }

    fn release(&mut self, hash: &str) -> rusqlite::Result<Option<i64>> {
        self.0
            .prepare_cached(
                "UPDATE snapshot_nodes SET refs = refs - 1 WHERE hash = ?1 RETURNING refs",
            )?
            .query_row(params![hash], |row| row.get(0))
            .optional()
    }

    fn gone(message: String) -> rusqlite::Error {
        corrupt(message)
    }
}

/// Stores the nodes of the batch reachable from `roots` that the store does not hold (see
/// [`rows::write_nodes`]); returns how many it stored and their bytes.
pub(super) fn write<'a>(
    transaction: &Transaction<'_>,
    nodes: &Encoded,
    roots: impl IntoIterator<Item = &'a str>,
) -> rusqlite::Result<(u64, u64)> {
    rows::write_nodes(&mut Nodes(transaction), nodes, roots)
}

/// Frees every node nothing refers to any more, and in turn the nodes only those referred to.
pub(in crate::store::sqlite) fn free_unreferenced(
    transaction: &Transaction<'_>,
) -> rusqlite::Result<()> {
    rows::free_unreferenced(&mut Nodes(transaction))
}

/// Counts every node's references from scratch and frees the nodes nothing refers to: for a
/// store written before the counts were kept (migration 7).
pub(in crate::store::sqlite) fn count_references(
    transaction: &Transaction<'_>,
) -> rusqlite::Result<()> {
    let mut counts: HashMap<String, i64> = HashMap::new();
    let roots = transaction
        .prepare(
            "SELECT root FROM message_variables UNION ALL SELECT root FROM templates \
             UNION ALL SELECT root FROM global_snapshots",
        )?
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for root in roots {
        *counts.entry(root).or_default() += 1;
    }
    let mut statement = transaction.prepare("SELECT hash, body FROM snapshot_nodes")?;
    let mut rows = statement.query([])?;
    let mut hashes = Vec::new();
    let mut children = Vec::new();
    while let Some(row) = rows.next()? {
        hashes.push(row.get::<_, String>(0)?);
        tree::references(row.get_ref(1)?.as_str()?, &mut children);
        for child in children.drain(..) {
            *counts.entry(child).or_default() += 1;
        }
    }
    drop(rows);
    let mut set =
        transaction.prepare_cached("UPDATE snapshot_nodes SET refs = ?2 WHERE hash = ?1")?;
    for hash in hashes {
        let count = counts.get(&hash).copied().unwrap_or(0);
        set.execute(params![hash, count])?;
    }
    free_unreferenced(transaction)
}

#[cfg(test)]
impl crate::store::Inspect for crate::store::SqliteStore {
    fn snapshot_nodes(&self) -> Vec<(String, i64, String)> {
        self.connection()
            .prepare("SELECT hash, refs, body FROM snapshot_nodes ORDER BY hash")
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                    .collect()
            })
            .unwrap()
    }

    fn snapshot_roots(&self) -> Vec<String> {
        self.connection()
            .prepare(
                "SELECT root FROM message_variables UNION ALL SELECT root FROM templates \
                 UNION ALL SELECT root FROM global_snapshots",
            )
            .and_then(|mut statement| statement.query_map([], |row| row.get(0))?.collect())
            .unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::store::sqlite::snapshots::tests::key;
    use crate::store::{GlobalSnapshot, Inspect, SnapshotStore};
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    /// Nodes with a count each, by hash.
    type Counts = Vec<(String, i64)>;

    /// Every node with its stored count, and with the count a walk over the store finds.
    fn counts(store: &dyn Inspect) -> (Counts, Counts) {
        let stored = store.snapshot_nodes();
        let mut found: HashMap<String, i64> = HashMap::new();
        for root in store.snapshot_roots() {
            *found.entry(root).or_default() += 1;
        }
        let mut children = Vec::new();
        for (_, _, body) in &stored {
            tree::references(body, &mut children);
        }
        for child in children {
            *found.entry(child).or_default() += 1;
        }
        let walked = stored
            .iter()
            .map(|(hash, _, _)| (hash.clone(), found.get(hash).copied().unwrap_or(0)))
            .collect();
        let kept = stored
            .into_iter()
            .map(|(hash, refs, _)| (hash, refs))
            .collect();
        (kept, walked)
    }

    fn state(index: usize) -> Value {
        json!({
            "long": "y".repeat(80),
            "history": (0..index).map(|item| format!("{item}: the hero walks on and on")).collect::<Vec<_>>(),
            "twice": ["z".repeat(70), "z".repeat(70)],
        })
    }

    fn assert_counted(store: &dyn Inspect) {
        let (kept, walked) = counts(store);
        assert_eq!(kept, walked);
        assert!(
            kept.iter().all(|(_, refs)| *refs > 0),
            "no node without a reference is left: {kept:?}"
        );
    }

    #[test]
    fn counts_follow_every_write_and_delete_and_free_exactly_the_unused() {
        for store in crate::store::every_store() {
            let mut batch = Encoded::new();
            for index in 0..40 {
                batch
                    .add(key(&format!("a{index}"), "one"), &state(index))
                    .unwrap();
            }
            store.put_snapshots("w", &batch).unwrap();
            let mut other = Encoded::new();
            for index in 20..30 {
                other
                    .add(key(&format!("b{index}"), "two"), &state(index))
                    .unwrap();
            }
            store.put_snapshots("w", &other).unwrap();
            assert_counted(store.as_ref());
            // The same id again (a replaced row) with another state.
            store
                .put_snapshots("w", &{
                    let mut again = Encoded::new();
                    again.add(key("a3", "one"), &state(33)).unwrap();
                    again
                })
                .unwrap();
            store.set_template("w", "hero", &state(5)).unwrap();
            store.set_template("w", "hero", &state(6)).unwrap();
            store
                .put_global(
                    "w",
                    &GlobalSnapshot {
                        id: "g".to_owned(),
                        label: "kept".to_owned(),
                        description: String::new(),
                        created_at: 1,
                        value: state(25),
                    },
                )
                .unwrap();
            assert!(store.update_snapshot("w", "a7", &state(2)).unwrap());
            assert_counted(store.as_ref());
            let ids: Vec<String> = (0..40)
                .step_by(3)
                .map(|index| format!("a{index}"))
                .collect();
            store.delete_snapshots("w", &ids).unwrap();
            assert_counted(store.as_ref());
            store.delete_chat("w", "one").unwrap();
            assert_counted(store.as_ref());
            assert!(store.delete_global("w", "g").unwrap());
            assert_counted(store.as_ref());
            // Deleting the workspace cascades to its rows: their triggers count too.
            assert!(store.delete_workspace("w").unwrap());
            assert_eq!(counts(store.as_ref()).0, []);
        }
    }

    #[test]
    fn a_batch_laid_out_against_nodes_deleted_since_is_refused_and_stores_nothing() {
        let store = SqliteStore::open_in_memory().unwrap();
        let mut batch = Encoded::new();
        batch.add(key("a1", "one"), &state(5)).unwrap();
        store.put_snapshots("w", &batch).unwrap();
        batch.committed();
        // The same state again, laid out against the batch stored: its root is not in this
        // batch, and the chat is deleted (its nodes freed) before the batch is stored.
        batch
            .add_changed(key("a2", "one"), &state(5), &tree::Changed::new())
            .unwrap();
        assert!(batch.nodes.is_empty());
        assert_eq!(store.delete_chat("w", "one").unwrap(), 1);
        // The row's foreign key refuses a root that is gone.
        let error = store.put_snapshots("w", &batch).unwrap_err().to_string();
        assert!(error.contains("FOREIGN KEY"), "{error}");
        assert!(store.snapshot("w", "a2").unwrap().is_none());
        assert_eq!(counts(&*store).0, []);
        // The same with a node below the root: the first snapshot's history is shared.
        let mut batch = Encoded::new();
        batch.add(key("b1", "two"), &state(30)).unwrap();
        store.put_snapshots("w", &batch).unwrap();
        batch.committed();
        let mut changed = tree::Changed::new();
        changed.path(&["long".to_owned()]);
        let mut next = state(30);
        next["long"] = json!("changed");
        batch
            .add_changed(key("b2", "two"), &next, &changed)
            .unwrap();
        store.delete_chat("w", "two").unwrap();
        let error = store.put_snapshots("w", &batch).unwrap_err().to_string();
        assert!(error.contains("is no longer stored"), "{error}");
        assert_eq!(counts(&*store).0, []);
    }

    #[test]
    fn counting_from_scratch_gives_what_the_writes_kept() {
        let store = SqliteStore::open_in_memory().unwrap();
        let mut batch = Encoded::new();
        for index in 0..30 {
            batch
                .add(key(&format!("a{index}"), "one"), &state(index))
                .unwrap();
        }
        store.put_snapshots("w", &batch).unwrap();
        store.set_template("w", "hero", &state(3)).unwrap();
        let kept = counts(store.as_ref()).0;
        let mut connection = store.connection();
        let transaction = connection.transaction().unwrap();
        transaction
            .execute("UPDATE snapshot_nodes SET refs = 0", [])
            .unwrap();
        // A node nothing reaches, as a store written before the counts may hold.
        transaction
            .execute(
                "INSERT INTO snapshot_nodes (hash, body) VALUES ('unused', '\"nothing refers to it\"')",
                [],
            )
            .unwrap();
        count_references(&transaction).unwrap();
        transaction.commit().unwrap();
        drop(connection);
        assert_eq!(counts(store.as_ref()).0, kept);
    }

    #[test]
    fn a_store_written_before_the_counts_gets_them_when_it_is_opened() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("synapse.db");
        let mut batch = Encoded::new();
        for index in 0..20 {
            batch
                .add(key(&format!("a{index}"), "one"), &state(index))
                .unwrap();
        }
        {
            // Schema 6, written as a build of that version did: nodes without counts, and one
            // that nothing reaches.
            let connection = rusqlite::Connection::open(&path).unwrap();
            for migration in &crate::store::sqlite::open::MIGRATIONS[..6] {
                connection.execute_batch(migration).unwrap();
            }
            connection
                .execute_batch(
                    "PRAGMA user_version = 6; INSERT INTO workspaces (name, created) VALUES ('w', 1); \
                     INSERT INTO snapshot_nodes (hash, body) VALUES ('unused', '[1]');",
                )
                .unwrap();
            for (hash, body) in &batch.nodes {
                connection
                    .execute(
                        "INSERT OR IGNORE INTO snapshot_nodes (hash, body) VALUES (?1, ?2)",
                        params![hash, body],
                    )
                    .unwrap();
            }
            for (key, root) in &batch.snapshots {
                connection
                    .execute(
                        "INSERT INTO message_variables (workspace, identifier, chat_file, root, created_at) \
                         VALUES ('w', ?1, 'one', ?2, 1)",
                        params![key.id, root],
                    )
                    .unwrap();
            }
        }
        let store = SqliteStore::open(&path, crate::store::SqliteOptions::default()).unwrap();
        assert_counted(store.as_ref());
        assert!(
            !counts(store.as_ref())
                .0
                .iter()
                .any(|(hash, _)| hash == "unused")
        );
        store
            .delete_snapshots("w", &["a19".to_owned(), "a3".to_owned()])
            .unwrap();
        assert_counted(store.as_ref());
        assert_eq!(
            store.snapshot("w", "a18").unwrap().unwrap().value,
            state(18)
        );
    }
}
