//! Opening the SQLite store: creating the file and its folder, switching to WAL, capping its
//! size, applying the migrations compiled in (a database from a newer version is refused,
//! never rewritten), and on a full disk falling back to reading the file as it is.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::{Error, SCHEMA_VERSION, SqliteOptions, SqliteStore, checkpoint, describe, snapshots};

pub(super) const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_workspaces.sql"),
    include_str!("../migrations/0002_state.sql"),
    include_str!("../migrations/0003_snapshots.sql"),
    include_str!("../migrations/0004_floors.sql"),
    include_str!("../migrations/0005_switches.sql"),
    include_str!("../migrations/0006_tool_switches.sql"),
    include_str!("../migrations/0007_node_references.sql"),
];

/// What a migration needs done beyond its SQL, by the version it migrates to.
const MIGRATION_STEPS: &[(i64, MigrationStep)] = &[(7, snapshots::count_references)];

type MigrationStep = fn(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>;

const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

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
        let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
        for (_, step) in MIGRATION_STEPS.iter().filter(|(at, _)| *at == version) {
            step(&transaction).map_err(failed)?;
        }
    }
    transaction
        .execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
        .map_err(failed)?;
    transaction.commit().map_err(failed)?;
    super::super::report_schema(&path.display().to_string(), found, SCHEMA_VERSION);
    Ok(())
}
