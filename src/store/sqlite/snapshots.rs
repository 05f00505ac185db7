//! Snapshots, function libraries and templates in SQLite. Snapshot and template values are
//! stored as trees of content-addressed nodes laid out by [`crate::store::tree`] (see
//! `0003_snapshots.sql`), so unchanged subtrees are shared between snapshots; `snapshots/nodes.rs`
//! writes the nodes and frees those nothing refers to any more (`0007_node_references.sql`).

use std::collections::HashSet;
use std::ops::RangeInclusive;

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;

mod library;
mod nodes;

pub(super) use nodes::{count_references, free_unreferenced};

use super::{SqliteStore, ensure_workspace, micros};
use crate::store::rows::EDITED;
use crate::store::tree::{self, Encoded};
use crate::store::{
    Error, Floor, GlobalSnapshot, GlobalSummary, SnapshotStore, StorageReport, StoredSnapshot,
};
use crate::vars::wall_clock;

mod globals;

use nodes::corrupt;

fn node_body(transaction: &Transaction<'_>, hash: &str) -> rusqlite::Result<String> {
    transaction
        .prepare_cached("SELECT body FROM snapshot_nodes WHERE hash = ?1")?
        .query_row(params![hash], |row| row.get(0))
}

/// Reads a tree back from its root.
fn decode_root(transaction: &Transaction<'_>, hash: &str) -> rusqlite::Result<Value> {
    tree::decode(
        hash,
        &mut |hash: &str| node_body(transaction, hash),
        corrupt,
    )
}

fn number(value: Option<i64>) -> Option<u64> {
    value.and_then(|value| u64::try_from(value).ok())
}

fn stored(value: Option<u64>) -> Option<i64> {
    value.and_then(|value| i64::try_from(value).ok())
}

impl SnapshotStore for SqliteStore {
    fn snapshot(&self, workspace: &str, id: &str) -> Result<Option<StoredSnapshot>, Error> {
        self.read(|transaction| {
            let row = transaction
                .prepare_cached(
                    "SELECT chat_file, message_id, swipe_id, root, created_at, summary FROM message_variables \
                     WHERE workspace = ?1 AND identifier = ?2",
                )?
                .query_row(params![workspace, id], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, Option<i64>>(1)?,
                        row.get::<_, Option<i64>>(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, i64>(4)?,
                        row.get::<_, Option<String>>(5)?,
                    ))
                })
                .optional()?;
            let Some((chat_file, message_id, swipe_id, root, created_at, summary)) = row else {
                return Ok(None);
            };
            Ok(Some(StoredSnapshot {
                id: id.to_owned(),
                chat_file,
                message_id: number(message_id),
                swipe_id: number(swipe_id),
                created_at,
                summary,
                value: decode_root(transaction, &root)?,
            }))
        })
    }

    fn put_snapshots(&self, workspace: &str, snapshots: &Encoded) -> Result<StorageReport, Error> {
        self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            let roots = snapshots.snapshots.iter().map(|(_, root)| root.as_str());
            let (new_nodes, new_bytes) = nodes::write(transaction, snapshots, roots)?;
            let now = micros(wall_clock());
            // An upsert, not `OR REPLACE`: a replaced row's root must lose its reference.
            let mut statement = transaction.prepare_cached(
                "INSERT INTO message_variables \
                 (workspace, identifier, chat_file, message_id, swipe_id, root, created_at, summary, stored_bytes) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
                 ON CONFLICT (workspace, identifier) DO UPDATE SET chat_file = excluded.chat_file, \
                 message_id = excluded.message_id, swipe_id = excluded.swipe_id, root = excluded.root, \
                 created_at = excluded.created_at, summary = excluded.summary, \
                 stored_bytes = excluded.stored_bytes",
            )?;
            for (key, root) in &snapshots.snapshots {
                statement.execute(params![
                    workspace,
                    key.id,
                    key.chat_file,
                    stored(key.message_id),
                    stored(key.swipe_id),
                    root,
                    key.created_at.unwrap_or(now),
                    key.summary,
                    stored(key.stored_bytes)
                ])?;
            }
            // A replaced row may have held the last reference to its old root.
            free_unreferenced(transaction)?;
            Ok(StorageReport {
                snapshots: snapshots.snapshots.len() as u64,
                new_nodes,
                new_bytes,
            })
        })
    }

    fn update_snapshot(&self, workspace: &str, id: &str, value: &Value) -> Result<bool, Error> {
        self.write(|transaction| {
            let exists = transaction
                .prepare_cached(
                    "SELECT 1 FROM message_variables WHERE workspace = ?1 AND identifier = ?2",
                )?
                .query_row(params![workspace, id], |_| Ok(()))
                .optional()?
                .is_some();
            if !exists {
                return Ok(false);
            }
            let mut laid_out = Encoded::new();
            let root = laid_out
                .root(value)
                .map_err(|error| corrupt(format!("the snapshot {error}")))?;
            let (_, new_bytes) = nodes::write(transaction, &laid_out, [root.as_str()])?;
            transaction
                .prepare_cached(
                    "UPDATE message_variables SET root = ?3, summary = ?4, stored_bytes = ?5 \
                     WHERE workspace = ?1 AND identifier = ?2",
                )?
                .execute(params![
                    workspace,
                    id,
                    root,
                    EDITED,
                    stored(Some(new_bytes))
                ])?;
            free_unreferenced(transaction)?;
            Ok(true)
        })
    }

    fn delete_snapshots(&self, workspace: &str, ids: &[String]) -> Result<Vec<Floor>, Error> {
        self.write(|transaction| {
            let mut deleted = Vec::with_capacity(ids.len());
            let mut statement = transaction.prepare_cached(
                "DELETE FROM message_variables WHERE workspace = ?1 AND identifier = ?2 \
                 RETURNING identifier, message_id, swipe_id, created_at, stored_bytes, summary",
            )?;
            for id in ids {
                if let Some(floor) = statement
                    .query_row(params![workspace, id], floor_of)
                    .optional()?
                {
                    deleted.push(floor);
                }
            }
            if !deleted.is_empty() {
                free_unreferenced(transaction)?;
            }
            Ok(deleted)
        })
    }

    fn floor_indexes(&self, workspace: &str, chat_file: &str) -> Result<Vec<Option<u64>>, Error> {
        self.read(|transaction| {
            let mut statement = transaction.prepare_cached(
                "SELECT DISTINCT message_id FROM message_variables \
                 WHERE workspace = ?1 AND chat_file = ?2 ORDER BY message_id",
            )?;
            let rows = statement
                .query_map(params![workspace, chat_file], |row| Ok(number(row.get(0)?)))?;
            rows.collect()
        })
    }

    fn floors(
        &self,
        workspace: &str,
        chat_file: &str,
        messages: RangeInclusive<Option<u64>>,
    ) -> Result<Vec<Floor>, Error> {
        let bound = |index: u64| i64::try_from(index).unwrap_or(i64::MAX);
        let first = messages.start().map(bound);
        let last = messages.end().map(bound);
        self.read(|transaction| {
            // Two ranges of the index: the snapshots without a message index (when the range
            // starts before message 0), then the messages in the range.
            let mut statement = transaction.prepare_cached(
                "SELECT identifier, message_id, swipe_id, created_at, stored_bytes, summary \
                 FROM message_variables WHERE workspace = ?1 AND chat_file = ?2 \
                 AND message_id IS NULL AND ?3 IS NULL \
                 UNION ALL \
                 SELECT identifier, message_id, swipe_id, created_at, stored_bytes, summary \
                 FROM message_variables WHERE workspace = ?1 AND chat_file = ?2 \
                 AND message_id BETWEEN coalesce(?3, 0) AND ?4 \
                 ORDER BY 2, 3, 4, 1",
            )?;
            let rows = statement.query_map(params![workspace, chat_file, first, last], floor_of)?;
            rows.collect()
        })
    }

    fn put_global(&self, workspace: &str, snapshot: &GlobalSnapshot) -> Result<(), Error> {
        self.write(|transaction| globals::put(transaction, workspace, snapshot))
    }

    fn global(&self, workspace: &str, id_or_label: &str) -> Result<Option<GlobalSnapshot>, Error> {
        self.read(|transaction| globals::get(transaction, workspace, id_or_label))
    }

    fn globals(&self, workspace: &str) -> Result<Vec<GlobalSummary>, Error> {
        self.read(|transaction| globals::list(transaction, workspace))
    }

    fn delete_global(&self, workspace: &str, id: &str) -> Result<bool, Error> {
        self.write(|transaction| globals::delete(transaction, workspace, id))
    }

    fn delete_chat(&self, workspace: &str, chat_file: &str) -> Result<u64, Error> {
        self.write(|transaction| {
            let deleted = transaction.execute(
                "DELETE FROM message_variables WHERE workspace = ?1 AND chat_file = ?2",
                params![workspace, chat_file],
            )?;
            if deleted > 0 {
                free_unreferenced(transaction)?;
            }
            Ok(deleted as u64)
        })
    }

    fn cleanup(
        &self,
        workspace: &str,
        active_chat_files: &[String],
    ) -> Result<Vec<(String, u64)>, Error> {
        let active: HashSet<&str> = active_chat_files.iter().map(String::as_str).collect();
        self.write(|transaction| {
            let chats = chats_of(transaction, workspace)?;
            let orphans: Vec<(String, u64)> = chats
                .into_iter()
                .filter(|(chat, _)| !active.contains(chat.as_str()))
                .collect();
            for (chat, _) in &orphans {
                transaction.execute(
                    "DELETE FROM message_variables WHERE workspace = ?1 AND chat_file = ?2",
                    params![workspace, chat],
                )?;
            }
            if !orphans.is_empty() {
                free_unreferenced(transaction)?;
            }
            Ok(orphans)
        })
    }

    fn all_snapshots(&self, workspace: &str) -> Result<Vec<StoredSnapshot>, Error> {
        self.read(|transaction| {
            let mut statement = transaction.prepare(
                "SELECT identifier, chat_file, message_id, swipe_id, root, created_at, summary FROM message_variables \
                 WHERE workspace = ?1 ORDER BY chat_file, message_id, created_at, identifier",
            )?;
            let rows = statement
                .query_map(params![workspace], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, Option<i64>>(2)?,
                        row.get::<_, Option<i64>>(3)?,
                        row.get::<_, String>(4)?,
                        row.get::<_, i64>(5)?,
                        row.get::<_, Option<String>>(6)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter()
                .map(|(id, chat_file, message_id, swipe_id, root, created_at, summary)| {
                    Ok(StoredSnapshot {
                        id,
                        chat_file,
                        message_id: number(message_id),
                        swipe_id: number(swipe_id),
                        created_at,
                        summary,
                        value: decode_root(transaction, &root)?,
                    })
                })
                .collect()
        })
    }

    fn function_scopes(&self, workspace: &str) -> Result<Vec<String>, Error> {
        self.read(|transaction| {
            let mut statement = transaction.prepare(
                "SELECT scope FROM functions WHERE workspace = ?1 GROUP BY scope ORDER BY min(rowid)",
            )?;
            let rows = statement.query_map(params![workspace], |row| row.get(0))?;
            rows.collect()
        })
    }

    fn templates(&self, workspace: &str) -> Result<Vec<(String, Value)>, Error> {
        self.read(|transaction| {
            let mut statement = transaction.prepare(
                "SELECT character_id, root FROM templates WHERE workspace = ?1 ORDER BY character_id",
            )?;
            let rows = statement
                .query_map(params![workspace], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter()
                .map(|(character, root)| Ok((character, decode_root(transaction, &root)?)))
                .collect()
        })
    }

    fn chats(&self, workspace: &str) -> Result<Vec<(String, u64)>, Error> {
        self.read(|transaction| chats_of(transaction, workspace))
    }

    fn snapshot_ids(&self, workspace: &str, chat_file: &str) -> Result<Vec<String>, Error> {
        self.read(|transaction| {
            let mut statement = transaction.prepare_cached(
                "SELECT identifier FROM message_variables WHERE workspace = ?1 AND chat_file = ?2 \
                 ORDER BY message_id, swipe_id, created_at, identifier",
            )?;
            let rows = statement.query_map(params![workspace, chat_file], |row| row.get(0))?;
            rows.collect()
        })
    }

    fn template_characters(&self, workspace: &str) -> Result<Vec<String>, Error> {
        self.read(|transaction| {
            let mut statement = transaction.prepare_cached(
                "SELECT character_id FROM templates WHERE workspace = ?1 ORDER BY character_id",
            )?;
            let rows = statement.query_map(params![workspace], |row| row.get(0))?;
            rows.collect()
        })
    }

    fn functions(&self, workspace: &str, scope: &str) -> Result<Vec<Value>, Error> {
        self.read(|transaction| {
            let mut statement = transaction
                .prepare_cached("SELECT definition FROM functions WHERE workspace = ?1 AND scope = ?2 ORDER BY rowid")?;
            let rows = statement.query_map(params![workspace, scope], |row| row.get::<_, String>(0))?;
            rows.map(|row| {
                let text = row?;
                serde_json::from_str(&text).map_err(|error| corrupt(format!("a stored function: {error}")))
            })
            .collect()
        })
    }

    fn put_functions(
        &self,
        workspace: &str,
        scope: &str,
        functions: &[(String, Value)],
    ) -> Result<(), Error> {
        self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            let mut statement = transaction.prepare_cached(
                "INSERT INTO functions (workspace, scope, id, definition) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (workspace, scope, id) DO UPDATE SET definition = excluded.definition",
            )?;
            for (id, definition) in functions {
                statement.execute(params![workspace, scope, id, definition.to_string()])?;
            }
            Ok(())
        })
    }

    fn remove_function(&self, workspace: &str, scope: &str, id: &str) -> Result<bool, Error> {
        self.write(|transaction| {
            let removed = transaction.execute(
                "DELETE FROM functions WHERE workspace = ?1 AND scope = ?2 AND id = ?3",
                params![workspace, scope, id],
            )?;
            Ok(removed > 0)
        })
    }

    fn template(&self, workspace: &str, character_id: &str) -> Result<Option<Value>, Error> {
        self.read(|transaction| {
            let root: Option<String> = transaction
                .prepare_cached(
                    "SELECT root FROM templates WHERE workspace = ?1 AND character_id = ?2",
                )?
                .query_row(params![workspace, character_id], |row| row.get(0))
                .optional()?;
            root.map(|root| decode_root(transaction, &root)).transpose()
        })
    }

    fn set_template(
        &self,
        workspace: &str,
        character_id: &str,
        template: &Value,
    ) -> Result<(), Error> {
        self.write(|transaction| {
            let mut laid_out = Encoded::new();
            let root = laid_out
                .root(template)
                .map_err(|error| corrupt(format!("the template {error}")))?;
            ensure_workspace(transaction, workspace)?;
            nodes::write(transaction, &laid_out, [root.as_str()])?;
            transaction
                .prepare_cached(
                    "INSERT INTO templates (workspace, character_id, root) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (workspace, character_id) DO UPDATE SET root = excluded.root",
                )?
                .execute(params![workspace, character_id, root])?;
            free_unreferenced(transaction)
        })
    }

    fn move_function(
        &self,
        workspace: &str,
        from: &str,
        to: &str,
        id: &str,
        definition: &Value,
    ) -> Result<bool, Error> {
        self.write(|transaction| {
            library::move_function(transaction, workspace, (from, to), id, definition)
        })
    }

    fn switch(&self, workspace: &str, target: &str) -> Result<Option<bool>, Error> {
        self.read(|transaction| library::switch(transaction, workspace, target))
    }

    fn set_switch(
        &self,
        workspace: &str,
        target: &str,
        enabled: Option<bool>,
    ) -> Result<(), Error> {
        self.write(|transaction| library::set_switch(transaction, workspace, target, enabled))
    }

    fn switches(&self, workspace: &str) -> Result<Vec<(String, bool)>, Error> {
        self.read(|transaction| library::switches(transaction, workspace))
    }
}

/// A floor from `identifier, message_id, swipe_id, created_at, stored_bytes, summary`.
fn floor_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<Floor> {
    Ok(Floor {
        snapshot_id: row.get(0)?,
        message_index: number(row.get(1)?),
        swipe_id: number(row.get(2)?),
        created_at: row.get(3)?,
        stored_bytes: number(row.get(4)?),
        summary: row.get(5)?,
    })
}

fn chats_of(
    transaction: &Transaction<'_>,
    workspace: &str,
) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut statement = transaction.prepare_cached(
        "SELECT chat_file, count(*) FROM message_variables WHERE workspace = ?1 GROUP BY chat_file ORDER BY chat_file",
    )?;
    let rows = statement.query_map(params![workspace], |row| {
        Ok((
            row.get::<_, String>(0)?,
            u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
        ))
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn snapshot(id: &str, chat: &str, value: &Value) -> Encoded {
        let mut encoded = Encoded::new();
        add(&mut encoded, id, chat, value);
        encoded
    }

    fn add(encoded: &mut Encoded, id: &str, chat: &str, value: &Value) {
        encoded.add(key(id, chat), value).unwrap();
    }

    /// The key of snapshot `id` of `chat`, bound to message 1, swipe 0.
    pub(super) fn key(id: &str, chat: &str) -> tree::SnapshotKey {
        tree::SnapshotKey {
            id: id.to_owned(),
            chat_file: chat.to_owned(),
            message_id: Some(1),
            swipe_id: Some(0),
            created_at: None,
            summary: None,
            stored_bytes: None,
        }
    }

    #[test]
    fn snapshots_round_trip_and_share_unchanged_subtrees() {
        for store in crate::store::every_store() {
            let big = json!({
                "世界": {"时间": "2024年10月26日 20:00", "地点": "魔都", "描述": "x".repeat(100)},
                "角色": {"名字": "张三", "生命值": 100, "金币": 500},
                "背包": ["治疗药水", "魔法卷轴"],
                "odd": {"__vmRef": "not a reference"},
                "odder": {"__vmEscaped": {"a": 1}}
            });
            let report = store
                .put_snapshots("w", &snapshot("a", "chat", &big))
                .unwrap();
            assert_eq!(report.snapshots, 1);
            assert_eq!(store.snapshot("w", "a").unwrap().unwrap().value, big);
            let mut changed = big.clone();
            changed["角色"]["金币"] = json!(600);
            let second = store
                .put_snapshots("w", &snapshot("b", "chat", &changed))
                .unwrap();
            // Only the root changed: the long description and the other subtrees are shared.
            assert_eq!(second.new_nodes, 1, "{second:?}");
            assert!(
                second.new_bytes < report.new_bytes,
                "{second:?} vs {report:?}"
            );
            assert_eq!(store.snapshot("w", "b").unwrap().unwrap().value, changed);
        }
    }

    #[test]
    fn deleting_chats_frees_nodes_only_they_used() {
        for store in crate::store::every_store() {
            let shared = json!({"long": "y".repeat(80)});
            store
                .put_snapshots("w", &{
                    let mut both = snapshot("a", "one", &shared);
                    add(&mut both, "b", "two", &json!({"other": "z".repeat(90)}));
                    both
                })
                .unwrap();
            store.set_template("w", "hero", &shared).unwrap();
            assert_eq!(store.delete_chat("w", "one").unwrap(), 1);
            assert_eq!(
                store.cleanup("w", &["three".to_owned()]).unwrap(),
                vec![("two".to_owned(), 1)]
            );
            assert_eq!(store.template("w", "hero").unwrap(), Some(shared));
            assert!(store.snapshot("w", "b").unwrap().is_none());
            assert_eq!(
                store.snapshot_nodes().len(),
                2,
                "the template's root and its long string remain"
            );
        }
    }

    fn node_count(store: &dyn crate::store::Inspect) -> usize {
        store.snapshot_nodes().len()
    }

    #[test]
    fn deleting_snapshots_and_globals_leaves_no_unreachable_node() {
        for store in crate::store::every_store() {
            let shared = json!({"long": "y".repeat(80)});
            let own = json!({"long": "y".repeat(80), "mine": "m".repeat(90)});
            store
                .put_snapshots("w", &{
                    let mut both = snapshot("a", "chat", &shared);
                    add(&mut both, "b", "chat", &own);
                    both
                })
                .unwrap();
            let global = GlobalSnapshot {
                id: "g".to_owned(),
                label: "kept".to_owned(),
                description: "a floor worth keeping".to_owned(),
                created_at: 1,
                value: json!({"g": "g".repeat(70)}),
            };
            store.put_global("w", &global).unwrap();
            let before = node_count(store.as_ref());
            let deleted = store
                .delete_snapshots("w", &["b".to_owned(), "missing".to_owned()])
                .unwrap();
            assert_eq!(
                deleted
                    .iter()
                    .map(|floor| floor.snapshot_id.as_str())
                    .collect::<Vec<_>>(),
                ["b"]
            );
            assert_eq!(
                node_count(store.as_ref()),
                before - 2,
                "b's root and its own string go"
            );
            assert_eq!(store.global("w", "kept").unwrap(), Some(global.clone()));
            assert_eq!(store.global("w", "g").unwrap(), Some(global));
            assert_eq!(store.globals("w").unwrap().len(), 1);
            assert!(store.delete_global("w", "g").unwrap());
            assert!(!store.delete_global("w", "g").unwrap());
            assert_eq!(
                node_count(store.as_ref()),
                before - 4,
                "the global's root and string go"
            );
            assert_eq!(store.snapshot("w", "a").unwrap().unwrap().value, shared);
            assert_eq!(store.delete_chat("w", "chat").unwrap(), 1);
            assert_eq!(node_count(store.as_ref()), 0);
        }
    }

    #[test]
    fn floors_list_rows_in_message_order_without_decoding() {
        for store in crate::store::every_store() {
            let mut encoded = Encoded::new();
            for (id, message, swipe) in [
                ("late", Some(4), Some(0)),
                ("early", Some(0), Some(1)),
                ("other", Some(4), Some(1)),
                ("loose", None, None),
            ] {
                let key = tree::SnapshotKey {
                    id: id.to_owned(),
                    chat_file: "chat".to_owned(),
                    message_id: message,
                    swipe_id: swipe,
                    created_at: Some(7),
                    summary: Some(format!("{id} changed")),
                    stored_bytes: Some(10),
                };
                encoded.add(key, &json!({"n": message})).unwrap();
            }
            store.put_snapshots("w", &encoded).unwrap();
            let floors = store.floors("w", "chat", None..=Some(u64::MAX)).unwrap();
            assert_eq!(
                floors
                    .iter()
                    .map(|floor| (
                        floor.snapshot_id.as_str(),
                        floor.message_index,
                        floor.swipe_id
                    ))
                    .collect::<Vec<_>>(),
                [
                    ("loose", None, None),
                    ("early", Some(0), Some(1)),
                    ("late", Some(4), Some(0)),
                    ("other", Some(4), Some(1))
                ]
            );
            assert_eq!(
                store.floor_indexes("w", "chat").unwrap(),
                [None, Some(0), Some(4)]
            );
            // A range of messages reads only theirs; one that starts before message 0 also the
            // snapshots made without an index.
            assert_eq!(
                store.floors("w", "chat", Some(1)..=Some(4)).unwrap()[..],
                floors[2..]
            );
            assert_eq!(
                store.floors("w", "chat", Some(0)..=Some(3)).unwrap()[..],
                floors[1..2]
            );
            assert_eq!(
                store.floors("w", "chat", None..=None).unwrap()[..],
                floors[..1]
            );
            let floors = &floors[1..];
            assert_eq!(floors[0].summary.as_deref(), Some("early changed"));
            assert!(
                store
                    .update_snapshot("w", "early", &json!({"n": 1}))
                    .unwrap()
            );
            assert_eq!(
                store.floors("w", "chat", Some(0)..=Some(0)).unwrap()[0]
                    .summary
                    .as_deref(),
                Some(EDITED)
            );
        }
    }
}
