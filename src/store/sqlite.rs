//! The embedded store: one SQLite file (bundled SQLite through rusqlite), WAL mode, a busy
//! timeout, every write transaction begun `IMMEDIATE` (a deferred one that upgrades to a write
//! fails with "database is locked" under a second process, whatever the timeout), migrations
//! compiled in and applied at start, and a database from a newer version refused, never
//! rewritten. WAL checkpoints run on a thread of their own, never inside a request's commit.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior, params,
};
use sha2::{Digest, Sha256};

mod checkpoint;
mod snapshots;

use super::tree::hex;
use super::{Batch, Changes, Commit, Error, Loaded, Store, Visit, WorkspaceSummary};
use crate::json::nesting;
use crate::vars::{RestoredVariable, Timestamp, ValueKind, VarType};

/// The schema this build writes; `PRAGMA user_version` holds a database's.
pub const SCHEMA_VERSION: i64 = 4;

const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_workspaces.sql"),
    include_str!("migrations/0002_state.sql"),
    include_str!("migrations/0003_snapshots.sql"),
    include_str!("migrations/0005_switches.sql"),
];

/// Values this long (in characters) or longer go to the value pool.
const POOLED_CHARS: usize = 64;

/// Removals are pruned in steps of this many changes; a process further behind reloads in full.
const REMOVAL_WINDOW: u64 = 1_000;

const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SELECT_VARIABLE: &str = "SELECT v.name, coalesce(v.value, p.value), v.kind, v.var_type, \
     v.description, v.tags, v.keep, v.created, v.updated, v.last_visited, v.reference_count \
     FROM variables v LEFT JOIN value_pool p ON p.hash = v.value_hash";

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
    /// Opens (creating when needed) and migrates the database at `path`. When that fails on a
    /// full disk, an existing database whose WAL is empty (the last server exited cleanly, and
    /// SQLite deleted the side files it must now create again) is opened read-only instead, so
    /// its data can still be read; every write then says why it is refused.
    pub fn open(path: &Path, options: SqliteOptions) -> Result<Arc<Self>, Error> {
        match Self::open_writable(path, options) {
            Ok(store) => Ok(store),
            Err(error) if disk_is_full(path) && wal_is_empty(path) => {
                let Ok(store) = Self::open_read_only(path) else {
                    return Err(error);
                };
                tracing::warn!(path = %path.display(), %error, "the disk is full: the store is read-only until the server restarts with free space");
                Ok(store)
            }
            Err(error) => Err(error),
        }
    }

    /// The database as it is on disk, for reading only: `immutable` needs no lock, no WAL and no
    /// shared-memory file, so nothing has to be written to open it.
    fn open_read_only(path: &Path) -> Result<Arc<Self>, Error> {
        let open_error = |message: String| Error::Open {
            path: path.to_owned(),
            message,
        };
        let escaped = path
            .display()
            .to_string()
            .replace('%', "%25")
            .replace('?', "%3f")
            .replace('#', "%23");
        let connection = Connection::open_with_flags(
            format!("file:{escaped}?immutable=1"),
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|error| open_error(error.to_string()))?;
        let found: i64 = connection
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(|error| open_error(error.to_string()))?;
        if found != SCHEMA_VERSION {
            return Err(open_error(format!(
                "schema version {found} needs migrating to {SCHEMA_VERSION}, which a full disk does not allow"
            )));
        }
        Ok(Arc::new(Self {
            path: path.to_owned(),
            connection: Mutex::new(connection),
            known: Mutex::default(),
            checkpointer: None,
            read_only: true,
        }))
    }

    fn open_writable(path: &Path, options: SqliteOptions) -> Result<Arc<Self>, Error> {
        let open_error = |message: String| Error::Open {
            path: path.to_owned(),
            message,
        };
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent).map_err(|error| {
                open_error(format!("cannot create {}: {error}", parent.display()))
            })?;
        }
        let mut connection =
            Connection::open(path).map_err(|error| open_error(error.to_string()))?;
        connection
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|error| open_error(error.to_string()))?;
        switch_to_wal(&connection).map_err(|error| open_error(describe(&error)))?;
        connection
            .execute_batch(
                "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
                 PRAGMA wal_autocheckpoint = 0;",
            )
            .map_err(|error| open_error(error.to_string()))?;
        if let Some(max_bytes) = options.max_bytes {
            limit_size(&connection, max_bytes).map_err(|error| open_error(error.to_string()))?;
        }
        migrate(&mut connection, path)?;
        let checkpointer =
            checkpoint::Checkpointer::start(path, BUSY_TIMEOUT).map_err(open_error)?;
        Ok(Arc::new(Self {
            path: path.to_owned(),
            connection: Mutex::new(connection),
            known: Mutex::default(),
            checkpointer: Some(checkpointer),
            read_only: false,
        }))
    }

    /// A store that lives in memory (a private SQLite database): `--store memory` keeps
    /// snapshots and function libraries here, with the same code as the file store.
    pub fn open_in_memory() -> Result<Arc<Self>, Error> {
        let path = PathBuf::from(":memory:");
        let mut connection = Connection::open_in_memory().map_err(|error| Error::Open {
            path: path.clone(),
            message: error.to_string(),
        })?;
        connection
            .execute_batch("PRAGMA foreign_keys = ON;")
            .map_err(|error| Error::Open {
                path: path.clone(),
                message: error.to_string(),
            })?;
        migrate(&mut connection, &path)?;
        Ok(Arc::new(Self {
            path,
            connection: Mutex::new(connection),
            known: Mutex::default(),
            checkpointer: None,
            read_only: false,
        }))
    }

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

impl SqliteStore {
    /// The workspaces whose stored state nests deeper than the limit; with `repair`, each is
    /// rewritten with its over-deep branches kept as their JSON text (see `parse_state`).
    pub fn deep_states(&self, repair: bool) -> Result<Vec<DeepState>, Error> {
        let work = |transaction: &Transaction<'_>| {
            let mut statement = transaction.prepare("SELECT workspace, document FROM state")?;
            let rows = statement
                .query_map([], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut found = Vec::new();
            for (workspace, text) in rows {
                let Some(flattened) = nesting::flatten_text(&text) else {
                    continue;
                };
                if repair {
                    transaction
                        .prepare_cached("UPDATE state SET document = ?2 WHERE workspace = ?1")?
                        .execute(params![workspace, flattened.text])?;
                }
                found.push(DeepState {
                    depth: nesting::text_depth(&text),
                    workspace,
                    cut: flattened.cut,
                });
            }
            Ok(found)
        };
        if repair {
            self.write(work)
        } else {
            self.read(work)
        }
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

/// Whether the file system holding `path` has no block left for an unprivileged writer.
#[cfg(unix)]
fn disk_is_full(path: &Path) -> bool {
    let folder = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty());
    rustix::fs::statvfs(folder.unwrap_or_else(|| Path::new(".")))
        .is_ok_and(|stats| stats.f_bavail == 0)
}

#[cfg(not(unix))]
fn disk_is_full(_path: &Path) -> bool {
    false
}

/// Whether the database's WAL holds nothing a read of the main file alone would miss.
fn wal_is_empty(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(PathBuf::from(wal)).map_or(true, |metadata| metadata.len() == 0)
}

/// Switching a fresh file to WAL needs an exclusive lock that the busy timeout does not wait
/// for, so a second process starting at the same moment retries for a while.
fn switch_to_wal(connection: &Connection) -> rusqlite::Result<()> {
    let mut attempt = 0;
    loop {
        match connection.query_row("PRAGMA journal_mode = WAL", [], |row| {
            row.get::<_, String>(0)
        }) {
            Ok(_) => return Ok(()),
            Err(error)
                if attempt < 100
                    && error.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) =>
            {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(10 * attempt.min(10)));
            }
            Err(error) => return Err(error),
        }
    }
}

fn limit_size(connection: &Connection, max_bytes: u64) -> rusqlite::Result<()> {
    let page_size: i64 = connection.query_row("PRAGMA page_size", [], |row| row.get(0))?;
    let pages = i64::try_from(max_bytes).unwrap_or(i64::MAX) / page_size.max(1);
    connection.query_row(
        &format!("PRAGMA max_page_count = {}", pages.max(1)),
        [],
        |_| Ok(()),
    )
}

fn migrate(connection: &mut Connection, path: &Path) -> Result<(), Error> {
    let failed = |error: rusqlite::Error| Error::Open {
        path: path.to_owned(),
        message: describe(&error),
    };
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(failed)?;
    let found: i64 = transaction
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(failed)?;
    if found > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            path: path.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    // An up-to-date database is not written at all, so a full disk still opens for reading.
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    for (index, migration) in MIGRATIONS
        .iter()
        .enumerate()
        .skip(usize::try_from(found).unwrap_or(0))
    {
        transaction.execute_batch(migration).map_err(failed)?;
        tracing::info!(path = %path.display(), version = index + 1, "store migrated");
    }
    transaction
        .execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
        .map_err(failed)?;
    transaction.commit().map_err(failed)
}

/// Wall-clock microseconds, for when a workspace or an approval was first recorded.
fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX)
        })
}

fn micros(timestamp: Timestamp) -> i64 {
    i64::try_from(timestamp.0).unwrap_or(i64::MAX)
}

fn timestamp(value: i64) -> Timestamp {
    Timestamp(u64::try_from(value).unwrap_or(0))
}

fn variable_from(row: &Row<'_>) -> rusqlite::Result<RestoredVariable> {
    let text = |index: usize| row.get::<_, String>(index);
    let invalid = |index: usize, message: String| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            message.into(),
        )
    };
    let kind = match text(2)?.as_str() {
        "json" => ValueKind::Json,
        _ => ValueKind::Text,
    };
    let var_type: VarType = text(3)?
        .parse()
        .map_err(|error: crate::vars::Error| invalid(3, error.to_string()))?;
    let tags: Vec<String> =
        serde_json::from_str(&text(5)?).map_err(|error| invalid(5, error.to_string()))?;
    Ok(RestoredVariable {
        name: text(0)?,
        value: Arc::from(text(1)?),
        kind,
        var_type,
        desc: row.get(4)?,
        tags,
        keep: row.get(6)?,
        created: timestamp(row.get(7)?),
        updated: timestamp(row.get(8)?),
        last_visited: timestamp(row.get(9)?),
        reference_count: u64::try_from(row.get::<_, i64>(10)?).unwrap_or(0),
    })
}

fn ensure_workspace(transaction: &Transaction<'_>, workspace: &str) -> rusqlite::Result<()> {
    transaction
        .prepare_cached("INSERT OR IGNORE INTO workspaces (name, created) VALUES (?1, ?2)")?
        .execute(params![workspace, now_micros()])
        .map(drop)
}

fn variables_where(
    transaction: &Transaction<'_>,
    filter: &str,
    workspace: &str,
    since: u64,
) -> rusqlite::Result<Vec<RestoredVariable>> {
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
    variable: &RestoredVariable,
    sequence: i64,
) -> rusqlite::Result<()> {
    let (inline, hash) = if variable.value.chars().nth(POOLED_CHARS - 1).is_some() {
        let hash = hex(&Sha256::digest(variable.value.as_bytes()));
        transaction
            .prepare_cached("INSERT OR IGNORE INTO value_pool (hash, value) VALUES (?1, ?2)")?
            .execute(params![hash, &*variable.value])?;
        (None, Some(hash))
    } else {
        (Some(&*variable.value), None)
    };
    let kind = match variable.kind {
        ValueKind::Text => "text",
        ValueKind::Json => "json",
    };
    let tags = serde_json::to_string(&variable.tags).unwrap_or_else(|_| "[]".to_owned());
    transaction
        .prepare_cached(
            "INSERT OR REPLACE INTO variables (workspace, name, value, value_hash, kind, var_type, description, \
             tags, keep, created, updated, last_visited, reference_count, sequence) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?
        .execute(params![
            workspace,
            variable.name,
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
        .execute(params![workspace, variable.name])
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
    if !sequence.is_multiple_of(REMOVAL_WINDOW) {
        return Ok(());
    }
    let below = i64::try_from(sequence - REMOVAL_WINDOW).unwrap_or(0);
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

fn read_state(
    transaction: &Transaction<'_>,
    workspace: &str,
) -> rusqlite::Result<serde_json::Value> {
    let text = state_text(transaction, workspace)?;
    match text {
        None => Ok(serde_json::Value::Object(serde_json::Map::new())),
        Some(text) => parse_state(workspace, &text),
    }
}

fn state_text(transaction: &Transaction<'_>, workspace: &str) -> rusqlite::Result<Option<String>> {
    transaction
        .prepare_cached("SELECT document FROM state WHERE workspace = ?1")?
        .query_row(params![workspace], |row| row.get(0))
        .optional()
}

/// Parses a stored state. A document nesting deeper than the limit (written by an older build)
/// is read with its over-deep branches cut and kept as their JSON text, so it stays readable
/// and writable; `doctor` reports it and `doctor --repair` stores the cut form.
fn parse_state(workspace: &str, text: &str) -> rusqlite::Result<serde_json::Value> {
    let invalid = |error: serde_json::Error| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(error))
    };
    let Some(flattened) = nesting::flatten_text(text) else {
        return serde_json::from_str(text).map_err(invalid);
    };
    tracing::warn!(
        %workspace,
        cut = flattened.cut.len(),
        "the stored state nests deeper than the limit of {}; its deepest branches are read as text (run `synapse-mcp doctor --repair`)",
        nesting::MAX_DEPTH
    );
    serde_json::from_str(&flattened.text).map_err(invalid)
}

/// A workspace whose stored state nests deeper than the limit, as `doctor` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeepState {
    pub workspace: String,
    /// How deep the stored document nests.
    pub depth: usize,
    /// The dot paths of the branches cut (by a repair) or to cut.
    pub cut: Vec<String>,
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

    fn commit(&self, workspace: &str, batch: &Batch) -> Result<Commit, Error> {
        let commit = self.write(|transaction| {
            ensure_workspace(transaction, workspace)?;
            let (before, _) = sequence_of(transaction, workspace)?;
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
            Ok(Commit { before, after })
        })?;
        // This connection's own commits leave `data_version` alone, so the new sequence is
        // recorded here; a commit by another connection clears the whole record.
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sequences
            .insert(workspace.to_owned(), commit.after);
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

    fn variable(&self, workspace: &str, name: &str) -> Result<Option<RestoredVariable>, Error> {
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
                .execute(params![workspace, key, now_micros()])
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
            snapshots::sweep(transaction)?;
            Ok(deleted > 0)
        })
    }
}
