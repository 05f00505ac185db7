//! The [`SnapshotStore`] trait over PostgreSQL: chat snapshots, templates and global snapshots
//! as trees of content-addressed nodes with reference counts (the walks are the SQLite store's,
//! in `store/rows.rs`; the root counts are kept by triggers), function libraries in their
//! first-stored order, and the enable switches.
//!
//! Text is ordered as SQLite orders it (by bytes, `COLLATE "C"`) and rows without a message
//! index come first (`NULLS FIRST`), so both stores list, and export, alike.

use std::collections::HashSet;
use std::ops::RangeInclusive;

use serde_json::Value;
use tokio_postgres::Row;

use super::{Failure, PostgresStore, Session, column, ensure_workspace};
use crate::store::rows::{self, EDITED, NodeTable, count, micros};
use crate::store::tree::{self, Encoded};
use crate::store::{
    Error, Floor, GlobalSnapshot, GlobalSummary, SnapshotStore, StorageReport, StoredSnapshot,
};
use crate::vars::wall_clock;

/// The node statements of the walks in `store/rows.rs`.
struct Nodes<'s, 'c>(&'s mut Session<'c>);

impl NodeTable for Nodes<'_, '_> {
    type Error = Failure;

    fn insert(&mut self, hash: &str, body: &str, refs: i64) -> Result<bool, Failure> {
        self.0
            .execute(
                "INSERT INTO snapshot_nodes (hash, body, refs) VALUES ($1, $2, $3) \
                 ON CONFLICT (hash) DO NOTHING",
                &[&hash, &body, &refs],
            )
            .map(|inserted| inserted > 0)
    }

    fn add_reference(&mut self, hash: &str) -> Result<bool, Failure> {
        self.0
            .execute(
                "UPDATE snapshot_nodes SET refs = refs + 1 WHERE hash = $1",
                &[&hash],
            )
            .map(|updated| updated > 0)
    }

    fn unreferenced(&mut self) -> Result<Vec<String>, Failure> {
        self.0
            .query("SELECT hash FROM snapshot_nodes WHERE refs <= 0", &[])?
            .iter()
            .map(|row| column(row, 0))
            .collect()
    }

    fn delete_unreferenced(&mut self, hash: &str) -> Result<Option<String>, Failure> {
        self.0
            .query_opt(
                "DELETE FROM snapshot_nodes WHERE hash = $1 AND refs <= 0 RETURNING body",
                &[&hash],
            )?
            .map(|row| column(&row, 0))
            .transpose()
    }

    fn release(&mut self, hash: &str) -> Result<Option<i64>, Failure> {
        self.0
            .query_opt(
                "UPDATE snapshot_nodes SET refs = refs - 1 WHERE hash = $1 RETURNING refs",
                &[&hash],
            )?
            .map(|row| column(&row, 0))
            .transpose()
    }

    fn gone(message: String) -> Failure {
        Failure::Invalid(message)
    }
}

pub(super) fn free_unreferenced(session: &mut Session<'_>) -> Result<(), Failure> {
    rows::free_unreferenced(&mut Nodes(session))
}

fn write_nodes<'a>(
    session: &mut Session<'_>,
    nodes: &Encoded,
    roots: impl IntoIterator<Item = &'a str>,
) -> Result<(u64, u64), Failure> {
    rows::write_nodes(&mut Nodes(session), nodes, roots)
}

/// Reads a tree back from its root.
fn decode_root(session: &mut Session<'_>, hash: &str) -> Result<Value, Failure> {
    tree::decode(
        hash,
        &mut |hash: &str| {
            let row =
                session.query_opt("SELECT body FROM snapshot_nodes WHERE hash = $1", &[&hash])?;
            match row {
                Some(row) => column(&row, 0),
                None => Err(Failure::Invalid(format!("snapshot node {hash} is missing"))),
            }
        },
        Failure::Invalid,
    )
}

/// Lays a single value out as a tree.
fn laid_out(value: &Value, what: &str) -> Result<(Encoded, String), Failure> {
    let mut encoded = Encoded::new();
    let root = encoded
        .root(value)
        .map_err(|error| Failure::Invalid(format!("the {what} {error}")))?;
    Ok((encoded, root))
}

fn number(value: Option<i64>) -> Option<u64> {
    value.and_then(|value| u64::try_from(value).ok())
}

fn stored(value: Option<u64>) -> Option<i64> {
    value.and_then(|value| i64::try_from(value).ok())
}

/// A floor from `identifier, message_id, swipe_id, created_at, stored_bytes, summary`.
fn floor_of(row: &Row) -> Result<Floor, Failure> {
    Ok(Floor {
        snapshot_id: column(row, 0)?,
        message_index: number(column(row, 1)?),
        swipe_id: number(column(row, 2)?),
        created_at: column(row, 3)?,
        stored_bytes: number(column(row, 4)?),
        summary: column(row, 5)?,
    })
}

/// A snapshot from `identifier, chat_file, message_id, swipe_id, root, created_at, summary`.
fn snapshot_of(session: &mut Session<'_>, row: &Row) -> Result<StoredSnapshot, Failure> {
    let root: String = column(row, 4)?;
    Ok(StoredSnapshot {
        id: column(row, 0)?,
        chat_file: column(row, 1)?,
        message_id: number(column(row, 2)?),
        swipe_id: number(column(row, 3)?),
        created_at: column(row, 5)?,
        summary: column(row, 6)?,
        value: decode_root(session, &root)?,
    })
}

fn chats_of(session: &mut Session<'_>, workspace: &str) -> Result<Vec<(String, u64)>, Failure> {
    session
        .query(
            "SELECT chat_file, count(*) FROM message_variables WHERE workspace = $1 \
             GROUP BY chat_file ORDER BY chat_file COLLATE \"C\"",
            &[&workspace],
        )?
        .iter()
        .map(|row| Ok((column(row, 0)?, count(column(row, 1)?))))
        .collect()
}

fn strings(rows: &[Row]) -> Result<Vec<String>, Failure> {
    rows.iter().map(|row| column(row, 0)).collect()
}

fn delete_chat_rows(
    session: &mut Session<'_>,
    workspace: &str,
    chat_file: &str,
) -> Result<u64, Failure> {
    session.execute(
        "DELETE FROM message_variables WHERE workspace = $1 AND chat_file = $2",
        &[&workspace, &chat_file],
    )
}

impl SnapshotStore for PostgresStore {
    fn snapshot(&self, workspace: &str, id: &str) -> Result<Option<StoredSnapshot>, Error> {
        self.read(|session| {
            let row = session.query_opt(
                "SELECT identifier, chat_file, message_id, swipe_id, root, created_at, summary \
                 FROM message_variables WHERE workspace = $1 AND identifier = $2",
                &[&workspace, &id],
            )?;
            row.map(|row| snapshot_of(session, &row)).transpose()
        })
    }

    fn put_snapshots(&self, workspace: &str, snapshots: &Encoded) -> Result<StorageReport, Error> {
        self.grow(|session| {
            ensure_workspace(session, workspace)?;
            let roots = snapshots.snapshots.iter().map(|(_, root)| root.as_str());
            let (new_nodes, new_bytes) = write_nodes(session, snapshots, roots)?;
            let now = micros(wall_clock());
            for (key, root) in &snapshots.snapshots {
                session.execute(
                    "INSERT INTO message_variables \
                     (workspace, identifier, chat_file, message_id, swipe_id, root, created_at, summary, stored_bytes) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                     ON CONFLICT (workspace, identifier) DO UPDATE SET chat_file = excluded.chat_file, \
                     message_id = excluded.message_id, swipe_id = excluded.swipe_id, root = excluded.root, \
                     created_at = excluded.created_at, summary = excluded.summary, \
                     stored_bytes = excluded.stored_bytes",
                    &[
                        &workspace,
                        &key.id,
                        &key.chat_file,
                        &stored(key.message_id),
                        &stored(key.swipe_id),
                        root,
                        &key.created_at.unwrap_or(now),
                        &key.summary,
                        &stored(key.stored_bytes),
                    ],
                )?;
            }
            // A replaced row may have held the last reference to its old root.
            free_unreferenced(session)?;
            Ok(StorageReport {
                snapshots: snapshots.snapshots.len() as u64,
                new_nodes,
                new_bytes,
            })
        })
    }

    fn update_snapshot(&self, workspace: &str, id: &str, value: &Value) -> Result<bool, Error> {
        self.grow(|session| {
            let exists = session
                .query_opt(
                    "SELECT 1 FROM message_variables WHERE workspace = $1 AND identifier = $2",
                    &[&workspace, &id],
                )?
                .is_some();
            if !exists {
                return Ok(false);
            }
            let (encoded, root) = laid_out(value, "snapshot")?;
            let (_, new_bytes) = write_nodes(session, &encoded, [root.as_str()])?;
            session.execute(
                "UPDATE message_variables SET root = $3, summary = $4, stored_bytes = $5 \
                 WHERE workspace = $1 AND identifier = $2",
                &[&workspace, &id, &root, &EDITED, &stored(Some(new_bytes))],
            )?;
            free_unreferenced(session)?;
            Ok(true)
        })
    }

    fn delete_snapshots(&self, workspace: &str, ids: &[String]) -> Result<Vec<Floor>, Error> {
        self.write(|session| {
            let mut deleted = Vec::with_capacity(ids.len());
            for id in ids {
                let row = session.query_opt(
                    "DELETE FROM message_variables WHERE workspace = $1 AND identifier = $2 \
                     RETURNING identifier, message_id, swipe_id, created_at, stored_bytes, summary",
                    &[&workspace, id],
                )?;
                if let Some(row) = row {
                    deleted.push(floor_of(&row)?);
                }
            }
            if !deleted.is_empty() {
                free_unreferenced(session)?;
            }
            Ok(deleted)
        })
    }

    fn floor_indexes(&self, workspace: &str, chat_file: &str) -> Result<Vec<Option<u64>>, Error> {
        self.run(|session| {
            session
                .query(
                    "SELECT DISTINCT message_id FROM message_variables \
                     WHERE workspace = $1 AND chat_file = $2 ORDER BY message_id NULLS FIRST",
                    &[&workspace, &chat_file],
                )?
                .iter()
                .map(|row| Ok(number(column(row, 0)?)))
                .collect()
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
        self.run(|session| {
            session
                .query(
                    "SELECT identifier, message_id, swipe_id, created_at, stored_bytes, summary \
                     FROM message_variables WHERE workspace = $1 AND chat_file = $2 \
                     AND ((message_id IS NULL AND $3::BIGINT IS NULL) \
                     OR message_id BETWEEN coalesce($3::BIGINT, 0) AND $4::BIGINT) \
                     ORDER BY message_id NULLS FIRST, swipe_id NULLS FIRST, created_at, \
                     identifier COLLATE \"C\"",
                    &[&workspace, &chat_file, &first, &last],
                )?
                .iter()
                .map(floor_of)
                .collect()
        })
    }

    fn put_global(&self, workspace: &str, snapshot: &GlobalSnapshot) -> Result<(), Error> {
        self.grow(|session| {
            let (encoded, root) = laid_out(&snapshot.value, "global snapshot")?;
            ensure_workspace(session, workspace)?;
            write_nodes(session, &encoded, [root.as_str()])?;
            // An upsert by id: another snapshot holding the label fails the unique label.
            session.execute(
                "INSERT INTO global_snapshots \
                 (workspace, identifier, label, description, root, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (workspace, identifier) DO UPDATE SET label = excluded.label, \
                 description = excluded.description, root = excluded.root, created_at = excluded.created_at",
                &[
                    &workspace,
                    &snapshot.id,
                    &snapshot.label,
                    &snapshot.description,
                    &root,
                    &snapshot.created_at,
                ],
            )?;
            free_unreferenced(session)
        })
    }

    fn global(&self, workspace: &str, id_or_label: &str) -> Result<Option<GlobalSnapshot>, Error> {
        self.read(|session| {
            let row = session.query_opt(
                "SELECT identifier, label, description, root, created_at FROM global_snapshots \
                 WHERE workspace = $1 AND (identifier = $2 OR label = $2) \
                 ORDER BY identifier = $2 DESC LIMIT 1",
                &[&workspace, &id_or_label],
            )?;
            let Some(row) = row else {
                return Ok(None);
            };
            let root: String = column(&row, 3)?;
            Ok(Some(GlobalSnapshot {
                id: column(&row, 0)?,
                label: column(&row, 1)?,
                description: column(&row, 2)?,
                created_at: column(&row, 4)?,
                value: decode_root(session, &root)?,
            }))
        })
    }

    fn globals(&self, workspace: &str) -> Result<Vec<GlobalSummary>, Error> {
        self.run(|session| {
            session
                .query(
                    "SELECT identifier, label, description, created_at FROM global_snapshots \
                     WHERE workspace = $1 ORDER BY label COLLATE \"C\"",
                    &[&workspace],
                )?
                .iter()
                .map(|row| {
                    Ok(GlobalSummary {
                        id: column(row, 0)?,
                        label: column(row, 1)?,
                        description: column(row, 2)?,
                        created_at: column(row, 3)?,
                    })
                })
                .collect()
        })
    }

    fn delete_global(&self, workspace: &str, id: &str) -> Result<bool, Error> {
        self.write(|session| {
            let deleted = session.execute(
                "DELETE FROM global_snapshots WHERE workspace = $1 AND identifier = $2",
                &[&workspace, &id],
            )?;
            if deleted > 0 {
                free_unreferenced(session)?;
            }
            Ok(deleted > 0)
        })
    }

    fn delete_chat(&self, workspace: &str, chat_file: &str) -> Result<u64, Error> {
        self.write(|session| {
            let deleted = delete_chat_rows(session, workspace, chat_file)?;
            if deleted > 0 {
                free_unreferenced(session)?;
            }
            Ok(deleted)
        })
    }

    fn cleanup(
        &self,
        workspace: &str,
        active_chat_files: &[String],
    ) -> Result<Vec<(String, u64)>, Error> {
        let active: HashSet<&str> = active_chat_files.iter().map(String::as_str).collect();
        self.write(|session| {
            let orphans: Vec<(String, u64)> = chats_of(session, workspace)?
                .into_iter()
                .filter(|(chat, _)| !active.contains(chat.as_str()))
                .collect();
            for (chat, _) in &orphans {
                delete_chat_rows(session, workspace, chat)?;
            }
            if !orphans.is_empty() {
                free_unreferenced(session)?;
            }
            Ok(orphans)
        })
    }

    fn all_snapshots(&self, workspace: &str) -> Result<Vec<StoredSnapshot>, Error> {
        self.read(|session| {
            let rows = session.query(
                "SELECT identifier, chat_file, message_id, swipe_id, root, created_at, summary \
                 FROM message_variables WHERE workspace = $1 \
                 ORDER BY chat_file COLLATE \"C\", message_id NULLS FIRST, created_at, \
                 identifier COLLATE \"C\"",
                &[&workspace],
            )?;
            rows.iter().map(|row| snapshot_of(session, row)).collect()
        })
    }

    fn function_scopes(&self, workspace: &str) -> Result<Vec<String>, Error> {
        self.run(|session| {
            strings(&session.query(
                "SELECT scope FROM functions WHERE workspace = $1 GROUP BY scope ORDER BY min(ordinal)",
                &[&workspace],
            )?)
        })
    }

    fn templates(&self, workspace: &str) -> Result<Vec<(String, Value)>, Error> {
        self.read(|session| {
            let rows = session.query(
                "SELECT character_id, root FROM templates WHERE workspace = $1 \
                 ORDER BY character_id COLLATE \"C\"",
                &[&workspace],
            )?;
            rows.iter()
                .map(|row| {
                    let root: String = column(row, 1)?;
                    Ok((column(row, 0)?, decode_root(session, &root)?))
                })
                .collect()
        })
    }

    fn chats(&self, workspace: &str) -> Result<Vec<(String, u64)>, Error> {
        self.run(|session| chats_of(session, workspace))
    }

    fn snapshot_ids(&self, workspace: &str, chat_file: &str) -> Result<Vec<String>, Error> {
        self.run(|session| {
            strings(&session.query(
                "SELECT identifier FROM message_variables WHERE workspace = $1 AND chat_file = $2 \
                 ORDER BY message_id NULLS FIRST, swipe_id NULLS FIRST, created_at, identifier COLLATE \"C\"",
                &[&workspace, &chat_file],
            )?)
        })
    }

    fn template_characters(&self, workspace: &str) -> Result<Vec<String>, Error> {
        self.run(|session| {
            strings(&session.query(
                "SELECT character_id FROM templates WHERE workspace = $1 \
                 ORDER BY character_id COLLATE \"C\"",
                &[&workspace],
            )?)
        })
    }

    fn functions(&self, workspace: &str, scope: &str) -> Result<Vec<Value>, Error> {
        self.run(|session| {
            session
                .query(
                    "SELECT definition FROM functions WHERE workspace = $1 AND scope = $2 ORDER BY ordinal",
                    &[&workspace, &scope],
                )?
                .iter()
                .map(|row| {
                    let text: String = column(row, 0)?;
                    serde_json::from_str(&text)
                        .map_err(|error| Failure::Invalid(format!("a stored function: {error}")))
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
        self.grow(|session| {
            ensure_workspace(session, workspace)?;
            for (id, definition) in functions {
                session.execute(
                    "INSERT INTO functions (workspace, scope, id, definition) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (workspace, scope, id) DO UPDATE SET definition = excluded.definition",
                    &[&workspace, &scope, id, &definition.to_string()],
                )?;
            }
            Ok(())
        })
    }

    fn remove_function(&self, workspace: &str, scope: &str, id: &str) -> Result<bool, Error> {
        self.write(|session| {
            let removed = session.execute(
                "DELETE FROM functions WHERE workspace = $1 AND scope = $2 AND id = $3",
                &[&workspace, &scope, &id],
            )?;
            Ok(removed > 0)
        })
    }

    fn template(&self, workspace: &str, character_id: &str) -> Result<Option<Value>, Error> {
        self.read(|session| {
            let row = session.query_opt(
                "SELECT root FROM templates WHERE workspace = $1 AND character_id = $2",
                &[&workspace, &character_id],
            )?;
            let Some(row) = row else {
                return Ok(None);
            };
            let root: String = column(&row, 0)?;
            decode_root(session, &root).map(Some)
        })
    }

    fn set_template(
        &self,
        workspace: &str,
        character_id: &str,
        template: &Value,
    ) -> Result<(), Error> {
        self.grow(|session| {
            let (encoded, root) = laid_out(template, "template")?;
            ensure_workspace(session, workspace)?;
            write_nodes(session, &encoded, [root.as_str()])?;
            session.execute(
                "INSERT INTO templates (workspace, character_id, root) VALUES ($1, $2, $3) \
                 ON CONFLICT (workspace, character_id) DO UPDATE SET root = excluded.root",
                &[&workspace, &character_id, &root],
            )?;
            free_unreferenced(session)
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
        self.grow(|session| {
            let exists = session
                .query_opt(
                    "SELECT 1 FROM functions WHERE workspace = $1 AND scope = $2 AND id = $3",
                    &[&workspace, &from, &id],
                )?
                .is_some();
            if !exists {
                return Ok(false);
            }
            session.execute(
                "DELETE FROM functions WHERE workspace = $1 AND scope = $2 AND id = $3",
                &[&workspace, &to, &id],
            )?;
            session.execute(
                "UPDATE functions SET scope = $3, definition = $5 \
                 WHERE workspace = $1 AND scope = $2 AND id = $4",
                &[&workspace, &from, &to, &id, &definition.to_string()],
            )?;
            Ok(true)
        })
    }

    fn switch(&self, workspace: &str, target: &str) -> Result<Option<bool>, Error> {
        self.run(|session| {
            session
                .query_opt(
                    "SELECT enabled FROM snapshot_switches WHERE workspace = $1 AND target = $2",
                    &[&workspace, &target],
                )?
                .map(|row| column(&row, 0))
                .transpose()
        })
    }

    fn set_switch(
        &self,
        workspace: &str,
        target: &str,
        enabled: Option<bool>,
    ) -> Result<(), Error> {
        self.write(|session| {
            match enabled {
                Some(enabled) => {
                    ensure_workspace(session, workspace)?;
                    session.execute(
                        "INSERT INTO snapshot_switches (workspace, target, enabled) VALUES ($1, $2, $3) \
                         ON CONFLICT (workspace, target) DO UPDATE SET enabled = excluded.enabled",
                        &[&workspace, &target, &enabled],
                    )?;
                }
                None => {
                    session.execute(
                        "DELETE FROM snapshot_switches WHERE workspace = $1 AND target = $2",
                        &[&workspace, &target],
                    )?;
                }
            }
            Ok(())
        })
    }

    fn switches(&self, workspace: &str) -> Result<Vec<(String, bool)>, Error> {
        self.run(|session| {
            session
                .query(
                    "SELECT target, enabled FROM snapshot_switches WHERE workspace = $1 \
                     ORDER BY target COLLATE \"C\"",
                    &[&workspace],
                )?
                .iter()
                .map(|row| Ok((column(row, 0)?, column(row, 1)?)))
                .collect()
        })
    }
}

#[cfg(test)]
impl crate::store::Inspect for PostgresStore {
    fn snapshot_nodes(&self) -> Vec<(String, i64, String)> {
        self.run(|session| {
            session
                .query(
                    "SELECT hash, refs, body FROM snapshot_nodes ORDER BY hash COLLATE \"C\"",
                    &[],
                )?
                .iter()
                .map(|row| Ok((column(row, 0)?, column(row, 1)?, column(row, 2)?)))
                .collect()
        })
        .unwrap()
    }

    fn snapshot_roots(&self) -> Vec<String> {
        self.run(|session| {
            strings(&session.query(
                "SELECT root FROM message_variables UNION ALL SELECT root FROM templates \
                 UNION ALL SELECT root FROM global_snapshots",
                &[],
            )?)
        })
        .unwrap()
    }
}
