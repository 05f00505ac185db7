//! The [`Store`] trait over SQLite: a workspace's variables (long values once in the value
//! pool), the change sequence other processes catch up by, the removals they must hear of,
//! visits, approvals, the tools switched at runtime and the state document.

use std::path::Path;
use std::sync::PoisonError;

use rusqlite::{OptionalExtension, Row, Transaction, params};

use super::state::read_state;
use super::{SqliteStore, ensure_workspace, micros, snapshots};
use crate::json::nesting;
use crate::store::rows::{
    VariableRow, kind_name, pool_key, removals_pruned_below, stored_count, tags_text,
};
use crate::store::{Batch, Changes, Commit, Error, Loaded, Store, Visit, WorkspaceSummary};
use crate::vars::{Record, wall_clock};

const SELECT_VARIABLE: &str = "SELECT v.name, coalesce(v.value, p.value), v.kind, v.var_type, \
     v.description, v.tags, v.keep, v.created, v.updated, v.last_visited, v.reference_count \
     FROM variables v LEFT JOIN value_pool p ON p.hash = v.value_hash";

fn variable_from(row: &Row<'_>) -> rusqlite::Result<Record> {
    VariableRow {
        name: row.get(0)?,
        value: row.get(1)?,
        kind: row.get(2)?,
        var_type: row.get(3)?,
        desc: row.get(4)?,
        tags: row.get(5)?,
        keep: row.get(6)?,
        created: row.get(7)?,
        updated: row.get(8)?,
        last_visited: row.get(9)?,
        reference_count: row.get(10)?,
    }
    .into_record()
    .map_err(|message| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, message.into())
    })
}

fn variables_where(
    transaction: &Transaction<'_>,
    filter: &str,
    workspace: &str,
    since: u64,
) -> rusqlite::Result<Vec<Record>> {
    let sql = format!("{SELECT_VARIABLE} WHERE v.workspace = ?1 {filter}");
    let mut statement = transaction.prepare_cached(&sql)?;
    let rows = statement.query_map(
        params![workspace, i64::try_from(since).unwrap_or(i64::MAX)],
        variable_from,
    )?;
    rows.collect()
}

fn sequence_of(transaction: &Transaction<'_>, workspace: &str) -> rusqlite::Result<(u64, u64)> {
    transaction
        .prepare_cached("SELECT sequence, pruned_below FROM workspaces WHERE name = ?1")?
        .query_row(params![workspace], |row| {
            Ok((
                u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
            ))
        })
        .optional()
        .map(Option::unwrap_or_default)
}

/// The pooled value's hash of a stored row, if any (so that an overwritten or removed long value
/// can leave the pool when nothing else uses it).
fn pooled_hash(
    transaction: &Transaction<'_>,
    workspace: &str,
    name: &str,
) -> rusqlite::Result<Option<String>> {
    transaction
        .prepare_cached("SELECT value_hash FROM variables WHERE workspace = ?1 AND name = ?2")?
        .query_row(params![workspace, name], |row| {
            row.get::<_, Option<String>>(0)
        })
        .optional()
        .map(Option::flatten)
}

fn write_variable(
    transaction: &Transaction<'_>,
    workspace: &str,
    variable: &Record,
    sequence: i64,
) -> rusqlite::Result<()> {
    let hash = pool_key(&variable.value);
    if let Some(hash) = &hash {
        transaction
            .prepare_cached("INSERT OR IGNORE INTO value_pool (hash, value) VALUES (?1, ?2)")?
            .execute(params![hash, &*variable.value])?;
    }
    let inline = hash.is_none().then_some(&*variable.value);
    let kind = kind_name(variable.kind);
    let tags = tags_text(&variable.tags);
    transaction
        .prepare_cached(
            "INSERT OR REPLACE INTO variables (workspace, name, value, value_hash, kind, var_type, description, \
             tags, keep, created, updated, last_visited, reference_count, sequence) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?
        .execute(params![
            workspace,
            &*variable.name,
            inline,
            hash,
            kind,
            variable.var_type.as_str(),
            variable.desc,
            tags,
            variable.keep,
            micros(variable.created),
            micros(variable.updated),
            micros(variable.last_visited),
            i64::try_from(variable.reference_count).unwrap_or(i64::MAX),
            sequence,
        ])?;
    transaction
        .prepare_cached("DELETE FROM removals WHERE workspace = ?1 AND name = ?2")?
        .execute(params![workspace, &*variable.name])
        .map(drop)
}

fn release_pooled(transaction: &Transaction<'_>, hashes: &[String]) -> rusqlite::Result<()> {
    let mut statement = transaction.prepare_cached(
        "DELETE FROM value_pool WHERE hash = ?1 AND NOT EXISTS (SELECT 1 FROM variables WHERE value_hash = ?1)",
    )?;
    for hash in hashes {
        statement.execute(params![hash])?;
    }
    Ok(())
}

fn prune_removals(
    transaction: &Transaction<'_>,
    workspace: &str,
    sequence: u64,
) -> rusqlite::Result<()> {
    let Some(below) = removals_pruned_below(sequence) else {
        return Ok(());
    };
    let below = stored_count(below);
    transaction.execute(
        "DELETE FROM removals WHERE workspace = ?1 AND sequence < ?2",
        params![workspace, below],
    )?;
    transaction
        .execute(
            "UPDATE workspaces SET pruned_below = ?2 WHERE name = ?1",
            params![workspace, below],
        )
        .map(drop)
}

impl Store for SqliteStore {
    fn location(&self) -> &Path {
        &self.path
    }

    fn load(&self, workspace: &str) -> Result<Loaded, Error> {
        let load = |transaction: &Transaction<'_>| {
            let (sequence, _) = sequence_of(transaction, workspace)?;
            let variables = variables_where(transaction, "AND ?2 >= 0", workspace, 0)?;
            Ok(Loaded {
                variables,
                sequence,
            })
        };
        // A read-only store serves the workspace as it is (empty if it was never written).
        if self.read_only {
            return self.read(load);
        }
        self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            load(transaction)
        })
    }

    fn sequence(&self, workspace: &str) -> Result<u64, Error> {
        let connection = self.connection();
        let data_version: i64 = connection
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(|error| self.failed(&error))?;
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if known.data_version != data_version {
            known.data_version = data_version;
            known.sequences.clear();
        }
        if let Some(sequence) = known.sequences.get(workspace) {
            return Ok(*sequence);
        }
        let sequence = connection
            .prepare_cached("SELECT sequence FROM workspaces WHERE name = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row(params![workspace], |row| row.get::<_, i64>(0))
                    .optional()
            })
            .map(|sequence| sequence.map_or(0, |sequence| u64::try_from(sequence).unwrap_or(0)))
            .map_err(|error| self.failed(&error))?;
        known.sequences.insert(workspace.to_owned(), sequence);
        Ok(sequence)
    }

    fn changes(&self, workspace: &str, since: u64) -> Result<Changes, Error> {
        self.read(|transaction| {
            let (sequence, pruned_below) = sequence_of(transaction, workspace)?;
            if since < pruned_below {
                let written = variables_where(transaction, "AND ?2 >= 0", workspace, 0)?;
                return Ok(Changes {
                    written,
                    removed: Vec::new(),
                    sequence,
                    complete: true,
                });
            }
            let written = variables_where(transaction, "AND v.sequence > ?2", workspace, since)?;
            let mut statement = transaction.prepare_cached(
                "SELECT name FROM removals WHERE workspace = ?1 AND sequence > ?2",
            )?;
            let removed = statement
                .query_map(
                    params![workspace, i64::try_from(since).unwrap_or(i64::MAX)],
                    |row| row.get(0),
                )?
                .collect::<rusqlite::Result<_>>()?;
            Ok(Changes {
                written,
                removed,
                sequence,
                complete: false,
            })
        })
    }

    fn commit_checked(
        &self,
        workspace: &str,
        expected: Option<u64>,
        batch: &Batch,
    ) -> Result<Option<Commit>, Error> {
        let commit = self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            let (before, _) = sequence_of(transaction, workspace)?;
            if expected.is_some_and(|expected| expected != before) {
                return Ok(None);
            }
            let after = before + 1;
            let stamp = i64::try_from(after).unwrap_or(i64::MAX);
            let mut released = Vec::new();
            for variable in &batch.written {
                released.extend(pooled_hash(transaction, workspace, &variable.name)?);
                write_variable(transaction, workspace, variable, stamp)?;
            }
            for name in &batch.removed {
                released.extend(pooled_hash(transaction, workspace, name)?);
                transaction
                    .prepare_cached("DELETE FROM variables WHERE workspace = ?1 AND name = ?2")?
                    .execute(params![workspace, name])?;
                transaction
                    .prepare_cached("INSERT OR REPLACE INTO removals (workspace, name, sequence) VALUES (?1, ?2, ?3)")?
                    .execute(params![workspace, name, stamp])?;
            }
            release_pooled(transaction, &released)?;
            transaction
                .prepare_cached("UPDATE workspaces SET sequence = ?2 WHERE name = ?1")?
                .execute(params![workspace, stamp])?;
            prune_removals(transaction, workspace, after)?;
            Ok(Some(Commit { before, after }))
        })?;
        // This connection's own commits leave `data_version` alone, so the new sequence is
        // recorded here; a commit by another connection clears the whole record.
        if let Some(commit) = &commit {
            self.known
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .sequences
                .insert(workspace.to_owned(), commit.after);
        }
        Ok(commit)
    }

    fn record_visits(&self, workspace: &str, visits: &[Visit]) -> Result<(), Error> {
        self.write(|transaction| {
            let mut statement = transaction.prepare_cached(
                "UPDATE variables SET last_visited = max(last_visited, ?3), reference_count = max(reference_count, ?4) \
                 WHERE workspace = ?1 AND name = ?2",
            )?;
            for visit in visits {
                let count = i64::try_from(visit.reference_count).unwrap_or(i64::MAX);
                statement.execute(params![workspace, visit.name, micros(visit.last_visited), count])?;
            }
            Ok(())
        })
    }

    fn variable(&self, workspace: &str, name: &str) -> Result<Option<Record>, Error> {
        self.read(|transaction| {
            let sql = format!("{SELECT_VARIABLE} WHERE v.workspace = ?1 AND v.name = ?2");
            transaction
                .prepare_cached(&sql)?
                .query_row(params![workspace, name], variable_from)
                .optional()
        })
    }

    fn is_approved(&self, workspace: &str, key: &str) -> Result<bool, Error> {
        self.read(|transaction| {
            transaction
                .prepare_cached("SELECT 1 FROM approvals WHERE workspace = ?1 AND key = ?2")?
                .query_row(params![workspace, key], |_| Ok(()))
                .optional()
                .map(|found| found.is_some())
        })
    }

    fn remember_approval(&self, workspace: &str, key: &str) -> Result<(), Error> {
        self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            transaction
                .prepare_cached(
                    "INSERT OR IGNORE INTO approvals (workspace, key, created) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![workspace, key, micros(wall_clock())])
                .map(drop)
        })
    }

    fn approvals(&self, workspace: &str) -> Result<Vec<String>, Error> {
        self.read(|transaction| {
            let mut statement = transaction
                .prepare_cached("SELECT key FROM approvals WHERE workspace = ?1 ORDER BY key")?;
            let keys = statement.query_map(params![workspace], |row| row.get(0))?;
            keys.collect()
        })
    }

    fn tool_switches(&self, workspace: &str) -> Result<Vec<(String, bool)>, Error> {
        self.read(|transaction| {
            let mut statement = transaction.prepare_cached(
                "SELECT target, enabled FROM tool_switches WHERE workspace = ?1 ORDER BY target",
            )?;
            let rows =
                statement.query_map(params![workspace], |row| Ok((row.get(0)?, row.get(1)?)));
            rows?.collect()
        })
    }

    fn set_tool_switch(&self, workspace: &str, target: &str, enabled: bool) -> Result<(), Error> {
        self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            transaction
                .prepare_cached(
                    "INSERT INTO tool_switches (workspace, target, enabled) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (workspace, target) DO UPDATE SET enabled = excluded.enabled",
                )?
                .execute(params![workspace, target, enabled])
                .map(drop)
        })
    }

    fn workspaces(&self) -> Result<Vec<WorkspaceSummary>, Error> {
        self.read(|transaction| {
            let mut statement = transaction.prepare(
                "SELECT w.name, w.sequence, \
                 (SELECT count(*) FROM variables v WHERE v.workspace = w.name), \
                 (SELECT count(*) FROM approvals a WHERE a.workspace = w.name) \
                 FROM workspaces w ORDER BY w.name",
            )?;
            let rows = statement.query_map([], |row| {
                let count = |index: usize| {
                    row.get::<_, i64>(index)
                        .map(|value| u64::try_from(value).unwrap_or(0))
                };
                Ok(WorkspaceSummary {
                    name: row.get(0)?,
                    sequence: count(1)?,
                    variables: count(2)?,
                    approvals: count(3)?,
                })
            })?;
            rows.collect()
        })
    }

    fn state(&self, workspace: &str) -> Result<serde_json::Value, Error> {
        self.read(|transaction| read_state(transaction, workspace))
    }

    fn update_state(
        &self,
        workspace: &str,
        change: &mut dyn FnMut(&mut serde_json::Value) -> Result<(), String>,
    ) -> Result<Result<serde_json::Value, String>, Error> {
        self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            let mut document = read_state(transaction, workspace)?;
            if let Err(refusal) = change(&mut document) {
                return Ok(Err(refusal));
            }
            // Callers check what they write; this keeps anything unreadable out whatever the caller.
            if let Err(too_deep) = nesting::check(&document, 0) {
                return Ok(Err(format!("the state document {too_deep}")));
            }
            transaction
                .prepare_cached(
                    "INSERT OR REPLACE INTO state (workspace, document) VALUES (?1, ?2)",
                )?
                .execute(params![workspace, document.to_string()])?;
            Ok(Ok(document))
        })
    }

    fn delete_workspace(&self, workspace: &str) -> Result<bool, Error> {
        self.write(|transaction| {
            let deleted = transaction.execute("DELETE FROM workspaces WHERE name = ?1", params![workspace])?;
            transaction.execute(
                "DELETE FROM value_pool WHERE NOT EXISTS (SELECT 1 FROM variables v WHERE v.value_hash = value_pool.hash)",
                [],
            )?;
            snapshots::free_unreferenced(transaction)?;
            Ok(deleted > 0)
        })
    }

    /// The one connection, shared under a lock: in use while a call holds it.
    fn connections(&self) -> Option<crate::store::Connections> {
        let in_use = usize::from(matches!(
            self.connection.try_lock(),
            Err(std::sync::TryLockError::WouldBlock)
        ));
        Some(crate::store::Connections {
            in_use,
            idle: 1 - in_use,
            max: 1,
        })
    }
}
