//! The embedded store: one SQLite file (bundled SQLite through rusqlite), WAL mode, a busy
//! timeout, every write transaction begun `IMMEDIATE` (a deferred one that upgrades to a write
//! fails with "database is locked" under a second process, whatever the timeout), migrations
//! compiled in and applied at start, and a database from a newer version refused, never
//! rewritten. WAL checkpoints run on a thread of their own, never inside a request's commit.
//!
//! This file holds the store, its transactions and `doctor`; its parts are `open.rs` (opening,
//! migrating, the read-only fallback on a full disk), `workspaces.rs` (the [`Store`](super::Store) trait:
//! variables, the value pool, change sequences, approvals), `state.rs` (the plans' state
//! document and its depth repair), `snapshots.rs` (the [`SnapshotStore`](super::SnapshotStore)
//! trait) and `checkpoint.rs` (the WAL checkpoint thread).

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

mod checkpoint;
mod open;
mod snapshots;
mod state;
mod workspaces;

pub use state::DeepState;

use super::Error;
use super::rows::micros;
use crate::vars::wall_clock;

/// The schema this build writes; `PRAGMA user_version` holds a database's.
pub const SCHEMA_VERSION: i64 = 7;

/// Options of the SQLite store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Caps the database file's size; writes past it fail as on a full disk.
    pub max_bytes: Option<u64>,
}

/// The SQLite store. Calls are short and made inline; the connection is shared under a lock.
pub struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
    /// Workspace sequences known since the last `PRAGMA data_version` seen: while no other
    /// connection commits, the version stays put and a sequence check reads no table.
    known: Mutex<KnownSequences>,
    /// Checkpoints the WAL of a file store off the request path (none in memory).
    checkpointer: Option<checkpoint::Checkpointer>,
    /// Opened for reading only, because the disk was full at start: every write is refused.
    read_only: bool,
}

#[derive(Default)]
struct KnownSequences {
    data_version: i64,
    sequences: std::collections::HashMap<String, u64>,
}

impl SqliteStore {
    fn connection(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn failed(&self, error: &rusqlite::Error) -> Error {
        Error::Database {
            path: self.path.clone(),
            message: describe(error),
        }
    }

    /// Runs `work` in a write transaction begun IMMEDIATE and commits it.
    fn write<T>(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, Error> {
        if self.read_only {
            return Err(Error::Database {
                path: self.path.clone(),
                message: "the disk was full when the server started, so the store is read-only: \
                          free some space and restart the server to write again"
                    .to_owned(),
            });
        }
        let mut connection = self.connection();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|error| self.failed(&error))?;
        let value = work(&transaction).map_err(|error| self.failed(&error))?;
        transaction.commit().map_err(|error| self.failed(&error))?;
        drop(connection);
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.committed();
        }
        Ok(value)
    }

    /// Runs `work` in a read transaction, so that everything it reads is one consistent state.
    fn read<T>(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, Error> {
        let mut connection = self.connection();
        let transaction = connection
            .transaction()
            .map_err(|error| self.failed(&error))?;
        let value = work(&transaction).map_err(|error| self.failed(&error))?;
        transaction.commit().map_err(|error| self.failed(&error))?;
        Ok(value)
    }

    /// Facts for `synapse-mcp doctor`.
    pub fn doctor(&self) -> Result<Diagnosis, Error> {
        let connection = self.connection();
        let query = |sql: &str| connection.query_row(sql, [], |row| row.get::<_, i64>(0));
        let integrity: Vec<String> = connection
            .prepare("PRAGMA integrity_check")
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| row.get::<_, String>(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|error| self.failed(&error))?;
        let diagnosis = Diagnosis {
            path: self.path.clone(),
            schema_version: query("PRAGMA user_version").map_err(|error| self.failed(&error))?,
            page_count: query("PRAGMA page_count").map_err(|error| self.failed(&error))?,
            page_size: query("PRAGMA page_size").map_err(|error| self.failed(&error))?,
            pooled_values: query("SELECT count(*) FROM value_pool")
                .map_err(|error| self.failed(&error))?,
            pooled_bytes: query(
                "SELECT coalesce(sum(length(CAST(value AS BLOB))), 0) FROM value_pool",
            )
            .map_err(|error| self.failed(&error))?,
            integrity,
        };
        Ok(diagnosis)
    }
}

/// What `doctor` reports about the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub path: PathBuf,
    pub schema_version: i64,
    pub page_count: i64,
    pub page_size: i64,
    pub pooled_values: i64,
    pub pooled_bytes: i64,
    /// `["ok"]` when the database is sound.
    pub integrity: Vec<String>,
}

/// Turns a SQLite error into a sentence a user can act on.
fn describe(error: &rusqlite::Error) -> String {
    match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            format!(
                "{error}: the file is damaged or not a synapse-mcp store; move it away to start afresh"
            )
        }
        Some(rusqlite::ErrorCode::DiskFull) => {
            format!("{error}: free some space (or raise store_max_bytes); nothing was changed")
        }
        Some(
            rusqlite::ErrorCode::ReadOnly
            | rusqlite::ErrorCode::CannotOpen
            | rusqlite::ErrorCode::PermissionDenied,
        ) => {
            format!(
                "{error}: check that the folder and file are writable, or pass another --data-dir"
            )
        }
        _ => error.to_string(),
    }
}

fn ensure_workspace(transaction: &Transaction<'_>, workspace: &str) -> rusqlite::Result<()> {
    transaction
        .prepare_cached("INSERT OR IGNORE INTO workspaces (name, created) VALUES (?1, ?2)")?
        .execute(params![workspace, micros(wall_clock())])
        .map(drop)
}
