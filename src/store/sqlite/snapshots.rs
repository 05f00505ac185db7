//! Snapshots, function libraries and templates in SQLite. Snapshot and template values are
//! stored as trees of content-addressed nodes (see `0003_snapshots.sql`): encoding replaces
//! every object, array or string whose JSON is 64 characters or longer by a reference to a
//! node, bottom-up, so unchanged subtrees are shared between snapshots.

use std::collections::HashSet;

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{SqliteStore, ensure_workspace, hex, now_micros};
use crate::store::{Error, NewSnapshot, SnapshotStore, StorageReport, StoredSnapshot};

/// Values this long (as JSON) or longer become nodes of their own.
const NODE_CHARS: usize = 64;
const REFERENCE: &str = "__vmRef";
/// Wraps a user object that happens to look like a reference.
const ESCAPED: &str = "__vmEscaped";

/// Nodes deeper than this are refused (`serde_json` refuses deeper documents anyway).
const MAX_DEPTH: usize = 256;

/// The nodes of one or more encoded values, deduplicated.
#[derive(Default)]
struct Nodes {
    seen: HashSet<String>,
    list: Vec<(String, String)>,
}

impl Nodes {
    fn add(&mut self, body: String) -> String {
        let digest = Sha256::digest(body.as_bytes());
        let hash = hex(&digest[..16]);
        if self.seen.insert(hash.clone()) {
            self.list.push((hash.clone(), body));
        }
        hash
    }

    /// Encodes `value`; returns its root node's hash (the root is always a node).
    fn root(&mut self, value: &Value) -> String {
        let encoded = self.encode(value, true);
        match encoded {
            Value::Object(mut members) if members.len() == 1 && members.contains_key(REFERENCE) => {
                members
                    .remove(REFERENCE)
                    .and_then(|hash| hash.as_str().map(str::to_owned))
                    .unwrap_or_default()
            }
            other => self.add(other.to_string()),
        }
    }

    fn encode(&mut self, value: &Value, root: bool) -> Value {
        let encoded = match value {
            Value::Object(members) => {
                let inner: Map<String, Value> = members
                    .iter()
                    .map(|(key, child)| (key.clone(), self.encode(child, false)))
                    .collect();
                let looks_like_reference = inner.len() == 1
                    && (inner.contains_key(REFERENCE) || inner.contains_key(ESCAPED));
                if looks_like_reference {
                    let mut wrapper = Map::new();
                    wrapper.insert(ESCAPED.to_owned(), Value::Object(inner));
                    Value::Object(wrapper)
                } else {
                    Value::Object(inner)
                }
            }
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| self.encode(item, false)).collect())
            }
            Value::String(text) if text.len() < NODE_CHARS => return value.clone(),
            Value::String(_) => value.clone(),
            scalar => return scalar.clone(),
        };
        let body = encoded.to_string();
        if body.len() < NODE_CHARS && !root {
            return encoded;
        }
        let hash = self.add(body);
        let mut reference = Map::new();
        reference.insert(REFERENCE.to_owned(), Value::String(hash));
        Value::Object(reference)
    }
}

fn node_body(transaction: &Transaction<'_>, hash: &str) -> rusqlite::Result<String> {
    transaction
        .prepare_cached("SELECT body FROM snapshot_nodes WHERE hash = ?1")?
        .query_row(params![hash], |row| row.get(0))
}

fn corrupt(message: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, message.into())
}

/// Reads a tree back from its root.
fn decode_root(transaction: &Transaction<'_>, hash: &str) -> rusqlite::Result<Value> {
    let body = node_body(transaction, hash)?;
    let value: Value = serde_json::from_str(&body)
        .map_err(|error| corrupt(format!("snapshot node {hash}: {error}")))?;
    decode(transaction, value, 0)
}

fn decode(transaction: &Transaction<'_>, value: Value, depth: usize) -> rusqlite::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(corrupt("a snapshot nests too deep".to_owned()));
    }
    match value {
        Value::Object(mut members) if members.len() == 1 => {
            if let Some(Value::String(hash)) = members.get(REFERENCE) {
                let hash = hash.clone();
                let body = node_body(transaction, &hash)?;
                let inner: Value = serde_json::from_str(&body)
                    .map_err(|error| corrupt(format!("snapshot node {hash}: {error}")))?;
                return decode(transaction, inner, depth + 1);
            }
            if let Some(Value::Object(_)) = members.get(ESCAPED) {
                let Some(Value::Object(inner)) = members.remove(ESCAPED) else {
                    return Ok(Value::Object(members));
                };
                return decode_members(transaction, inner, depth);
            }
            decode_members(transaction, members, depth)
        }
        Value::Object(members) => decode_members(transaction, members, depth),
        Value::Array(items) => items
            .into_iter()
            .map(|item| decode(transaction, item, depth + 1))
            .collect::<rusqlite::Result<_>>()
            .map(Value::Array),
        scalar => Ok(scalar),
    }
}

fn decode_members(
    transaction: &Transaction<'_>,
    members: Map<String, Value>,
    depth: usize,
) -> rusqlite::Result<Value> {
    members
        .into_iter()
        .map(|(key, child)| Ok((key, decode(transaction, child, depth + 1)?)))
        .collect::<rusqlite::Result<Map<String, Value>>>()
        .map(Value::Object)
}

/// Writes nodes the store does not hold; returns how many and their bytes.
fn write_nodes(transaction: &Transaction<'_>, nodes: &Nodes) -> rusqlite::Result<(u64, u64)> {
    let mut statement = transaction
        .prepare_cached("INSERT OR IGNORE INTO snapshot_nodes (hash, body) VALUES (?1, ?2)")?;
    let (mut count, mut bytes) = (0, 0);
    for (hash, body) in &nodes.list {
        if statement.execute(params![hash, body])? > 0 {
            count += 1;
            bytes += body.len() as u64;
        }
    }
    Ok((count, bytes))
}

/// Deletes the nodes no snapshot or template reaches any more.
pub(super) fn sweep(transaction: &Transaction<'_>) -> rusqlite::Result<()> {
    let mut roots: Vec<String> = transaction
        .prepare("SELECT root FROM message_variables UNION SELECT root FROM templates")?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if roots.is_empty() {
        transaction.execute("DELETE FROM snapshot_nodes", [])?;
        return Ok(());
    }
    let mut reachable: HashSet<String> = HashSet::new();
    while let Some(hash) = roots.pop() {
        if !reachable.insert(hash.clone()) {
            continue;
        }
        let Some(body) = transaction
            .prepare_cached("SELECT body FROM snapshot_nodes WHERE hash = ?1")?
            .query_row(params![hash], |row| row.get::<_, String>(0))
            .optional()?
        else {
            continue;
        };
        if body.contains(REFERENCE)
            && let Ok(value) = serde_json::from_str::<Value>(&body)
        {
            collect_references(&value, &mut roots);
        }
    }
    let all: Vec<String> = transaction
        .prepare("SELECT hash FROM snapshot_nodes")?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut delete = transaction.prepare_cached("DELETE FROM snapshot_nodes WHERE hash = ?1")?;
    for hash in all.iter().filter(|hash| !reachable.contains(*hash)) {
        delete.execute(params![hash])?;
    }
    Ok(())
}

fn collect_references(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            if members.len() == 1
                && let Some(Value::String(hash)) = members.get(REFERENCE)
            {
                found.push(hash.clone());
                return;
            }
            members
                .values()
                .for_each(|child| collect_references(child, found));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_references(item, found)),
        _ => {}
    }
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
                    "SELECT chat_file, message_id, swipe_id, root, created_at FROM message_variables \
                     WHERE workspace = ?1 AND identifier = ?2",
                )?
                .query_row(params![workspace, id], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, Option<i64>>(1)?,
                        row.get::<_, Option<i64>>(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, i64>(4)?,
                    ))
                })
                .optional()?;
            let Some((chat_file, message_id, swipe_id, root, created_at)) = row else {
                return Ok(None);
            };
            Ok(Some(StoredSnapshot {
                id: id.to_owned(),
                chat_file,
                message_id: number(message_id),
                swipe_id: number(swipe_id),
                created_at,
                value: decode_root(transaction, &root)?,
            }))
        })
    }

    fn put_snapshots(
        &self,
        workspace: &str,
        snapshots: &[NewSnapshot],
    ) -> Result<StorageReport, Error> {
        let mut nodes = Nodes::default();
        let roots: Vec<String> = snapshots
            .iter()
            .map(|snapshot| nodes.root(&snapshot.value))
            .collect();
        self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            let (new_nodes, new_bytes) = write_nodes(transaction, &nodes)?;
            let now = now_micros();
            let mut statement = transaction.prepare_cached(
                "INSERT OR REPLACE INTO message_variables (workspace, identifier, chat_file, message_id, swipe_id, root, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for (snapshot, root) in snapshots.iter().zip(&roots) {
                statement.execute(params![
                    workspace,
                    snapshot.id,
                    snapshot.chat_file,
                    stored(snapshot.message_id),
                    stored(snapshot.swipe_id),
                    root,
                    now
                ])?;
            }
            Ok(StorageReport {
                snapshots: snapshots.len() as u64,
                new_nodes,
                new_bytes,
            })
        })
    }

    fn update_snapshot(&self, workspace: &str, id: &str, value: &Value) -> Result<bool, Error> {
        let mut nodes = Nodes::default();
        let root = nodes.root(value);
        self.write(|transaction| {
            write_nodes(transaction, &nodes)?;
            let updated = transaction
                .prepare_cached("UPDATE message_variables SET root = ?3 WHERE workspace = ?1 AND identifier = ?2")?
                .execute(params![workspace, id, root])?;
            Ok(updated > 0)
        })
    }

    fn delete_chat(&self, workspace: &str, chat_file: &str) -> Result<u64, Error> {
        self.write(|transaction| {
            let deleted = transaction.execute(
                "DELETE FROM message_variables WHERE workspace = ?1 AND chat_file = ?2",
                params![workspace, chat_file],
            )?;
            if deleted > 0 {
                sweep(transaction)?;
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
                sweep(transaction)?;
            }
            Ok(orphans)
        })
    }

    fn chats(&self, workspace: &str) -> Result<Vec<(String, u64)>, Error> {
        self.read(|transaction| chats_of(transaction, workspace))
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
        let mut nodes = Nodes::default();
        let root = nodes.root(template);
        self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            write_nodes(transaction, &nodes)?;
            transaction
                .prepare_cached("INSERT OR REPLACE INTO templates (workspace, character_id, root) VALUES (?1, ?2, ?3)")?
                .execute(params![workspace, character_id, root])?;
            Ok(())
        })
    }
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

    fn snapshot(id: &str, chat: &str, value: Value) -> NewSnapshot {
        NewSnapshot {
            id: id.to_owned(),
            chat_file: chat.to_owned(),
            message_id: Some(1),
            swipe_id: Some(0),
            value,
        }
    }

    #[test]
    fn snapshots_round_trip_and_share_unchanged_subtrees() {
        let store = SqliteStore::open_in_memory().unwrap();
        let big = json!({
            "世界": {"时间": "2024年10月26日 20:00", "地点": "魔都", "描述": "x".repeat(100)},
            "角色": {"名字": "张三", "生命值": 100, "金币": 500},
            "背包": ["治疗药水", "魔法卷轴"],
            "odd": {"__vmRef": "not a reference"},
            "odder": {"__vmEscaped": {"a": 1}}
        });
        let report = store
            .put_snapshots("w", &[snapshot("a", "chat", big.clone())])
            .unwrap();
        assert_eq!(report.snapshots, 1);
        assert_eq!(store.snapshot("w", "a").unwrap().unwrap().value, big);
        let mut changed = big.clone();
        changed["角色"]["金币"] = json!(600);
        let second = store
            .put_snapshots("w", &[snapshot("b", "chat", changed.clone())])
            .unwrap();
        // Only the root changed: the long description and the other subtrees are shared.
        assert_eq!(second.new_nodes, 1, "{second:?}");
        assert!(
            second.new_bytes < report.new_bytes,
            "{second:?} vs {report:?}"
        );
        assert_eq!(store.snapshot("w", "b").unwrap().unwrap().value, changed);
    }

    #[test]
    fn deleting_chats_frees_nodes_only_they_used() {
        let store = SqliteStore::open_in_memory().unwrap();
        let shared = json!({"long": "y".repeat(80)});
        store
            .put_snapshots(
                "w",
                &[
                    snapshot("a", "one", shared.clone()),
                    snapshot("b", "two", json!({"other": "z".repeat(90)})),
                ],
            )
            .unwrap();
        store.set_template("w", "hero", &shared).unwrap();
        assert_eq!(store.delete_chat("w", "one").unwrap(), 1);
        assert_eq!(
            store.cleanup("w", &["three".to_owned()]).unwrap(),
            vec![("two".to_owned(), 1)]
        );
        assert_eq!(store.template("w", "hero").unwrap(), Some(shared));
        assert!(store.snapshot("w", "b").unwrap().is_none());
        let nodes: i64 = store
            .connection()
            .query_row("SELECT count(*) FROM snapshot_nodes", [], |row| row.get(0))
            .unwrap();
        assert_eq!(nodes, 2, "the template's root and its long string remain");
    }
}
