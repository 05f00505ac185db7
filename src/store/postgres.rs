//! The server store: PostgreSQL through tokio-postgres, for several processes (or machines)
//! sharing workspaces. The store traits are synchronous and are called from inside the server's
//! tokio tasks, so the client's connections run on a small runtime the store owns (one thread),
//! and a call blocks its caller's thread on the reply, as the SQLite store blocks on its file:
//! this works the same from a multi-thread runtime, a current-thread one (the tests' in-process
//! servers) or a plain thread, which `Handle::block_on` inside `block_in_place` would not.
//!
//! Writes run at READ COMMITTED, and every write that changes a workspace's change sequence or
//! its state document first locks the workspace's row (a commit's upsert that takes the next
//! sequence, a state update's `SELECT … FOR UPDATE`): writers to one workspace queue on that
//! lock, each reads what the one before it committed, and no acknowledged write is lost; writers
//! to different workspaces never wait for each other. (SERIALIZABLE would give the same
//! guarantee by failing one of two concurrent writers and running it again: more work under
//! contention, for no rows the lock does not already cover.) A transaction that still
//! meets a deadlock, a serialization failure or a row another one freed meanwhile (a pooled
//! value, a snapshot node) is run again from the start, a few times. A commit returns once
//! PostgreSQL has made it durable (`synchronous_commit` as the server has it: on by default).
//!
//! Values, descriptions and other free text that may hold a NUL character (which PostgreSQL's
//! `text` refuses) are stored as `bytea`.
//!
//! A commit checks the sequence the committing process saw, when it asks (a conditional
//! `UPDATE` of the workspace's row): two processes that decided an eviction on what they each
//! had seen cannot both commit it; the second catches up and decides again.
//!
//! This file holds the connection pool, the transactions, the migrations and the size cap; its
//! parts are `workspaces.rs` (the [`Store`](super::Store) trait), `snapshots.rs` (the
//! [`SnapshotStore`](super::SnapshotStore) trait), `listen.rs` (the change notifications
//! between processes) and `sequences.rs` (the shared, non-blocking reads of change sequences).

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use tokio::sync::broadcast;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement};

mod listen;
mod sequences;
mod snapshots;
#[cfg(test)]
pub(crate) mod testing;
mod workspaces;

use super::rows::micros;
use super::{Error, Heard};
use crate::vars::wall_clock;

/// The migrations, by the schema version each brings the database to. Version 7 is the whole
/// schema of the SQLite store's version 7, so both stores number their schemas alike (and a
/// later version adds a file to both folders).
const MIGRATIONS: &[(i64, &str)] = &[(7, include_str!("postgres/migrations/0007_schema.sql"))];

/// Connections the store opens at most; calls beyond them wait for one to come back.
const CONNECTIONS: usize = 8;

/// How many times a transaction that met a deadlock or a concurrent change is run.
const ATTEMPTS: usize = 5;

/// Options of the PostgreSQL store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PostgresOptions {
    /// Caps the bytes of values, snapshot nodes, state documents and functions stored; a write
    /// that would pass it is refused.
    pub max_bytes: Option<u64>,
}

/// The PostgreSQL store.
pub struct PostgresStore {
    /// The URL without its password, for messages.
    display: PathBuf,
    config: tokio_postgres::Config,
    options: PostgresOptions,
    /// Runs the connections' I/O; shut down (without waiting) when the store is dropped.
    runtime: Option<tokio::runtime::Runtime>,
    pool: Mutex<Pool>,
    returned: Condvar,
    /// This process's name in the change notifications it sends (`listen.rs`).
    instance: Arc<str>,
    /// The changes other processes committed, once something listens.
    heard: OnceLock<broadcast::Sender<Heard>>,
    /// The shared reads of change sequences (`sequences.rs`).
    sequences: Arc<sequences::Sequences>,
}

#[derive(Default)]
struct Pool {
    idle: Vec<Connection>,
    open: usize,
}

/// A connection with the statements it has prepared.
struct Connection {
    client: Client,
    statements: HashMap<String, Statement>,
}

/// Why a transaction's work failed.
#[derive(Debug)]
enum Failure {
    Postgres(tokio_postgres::Error),
    /// A stored row that does not read back (or a value refused before it is written).
    Invalid(String),
    /// The size cap would be passed.
    Full {
        stored: u64,
        cap: u64,
    },
}

impl From<tokio_postgres::Error> for Failure {
    fn from(error: tokio_postgres::Error) -> Self {
        Self::Postgres(error)
    }
}

impl Failure {
    /// Whether running the transaction again may succeed.
    fn is_transient(&self) -> bool {
        let Self::Postgres(error) = self else {
            return false;
        };
        error.code().is_some_and(|code| {
            *code == SqlState::T_R_SERIALIZATION_FAILURE
                || *code == SqlState::T_R_DEADLOCK_DETECTED
                || *code == SqlState::FOREIGN_KEY_VIOLATION
        })
    }
}

/// Turns a client error into a sentence a user can act on.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(database) if *database.code() == SqlState::DISK_FULL => format!(
            "{} ({}): free some space on the database server; nothing was changed",
            database.message(),
            database.code().code()
        ),
        Some(database) => format!("{} ({})", database.message(), database.code().code()),
        None => {
            let mut message = error.to_string();
            if let Some(source) = std::error::Error::source(error) {
                message = format!("{message}: {source}");
            }
            message
        }
    }
}

/// Waits for a client future on the calling thread. The client's futures only exchange
/// messages with the connection task, which runs on the store's runtime, so this needs no
/// runtime of its own and may be called from within one.
fn wait<T>(future: impl Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

/// One transaction (or one statement outside any) on a leased connection, called
/// synchronously.
pub(super) struct Session<'a> {
    client: &'a Client,
    statements: &'a mut HashMap<String, Statement>,
}

impl Session<'_> {
    fn statement(&mut self, sql: &str) -> Result<Statement, Failure> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = wait(self.client.prepare(sql))?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Failure> {
        let statement = self.statement(sql)?;
        Ok(wait(self.client.query(&statement, params))?)
    }

    fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Failure> {
        let statement = self.statement(sql)?;
        Ok(wait(self.client.query_opt(&statement, params))?)
    }

    fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Failure> {
        let statement = self.statement(sql)?;
        Ok(wait(self.client.execute(&statement, params))?)
    }
}

/// A column of a row, with the column named when it does not read.
fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
) -> Result<T, Failure> {
    Ok(row.try_get(index)?)
}

/// Text stored as `bytea`.
fn text_of(bytes: Vec<u8>) -> Result<String, Failure> {
    String::from_utf8(bytes).map_err(|error| Failure::Invalid(format!("stored text: {error}")))
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database`) and
    /// migrates it; a database from a newer version is refused, never rewritten.
    pub fn open(url: &str, options: PostgresOptions) -> Result<Arc<Self>, Error> {
        let config = tokio_postgres::Config::from_str(url).map_err(|error| Error::Open {
            path: PathBuf::from(redacted(url)),
            message: format!(
                "{error}: write the store as postgres://USER:PASSWORD@HOST:PORT/DATABASE"
            ),
        })?;
        let display = PathBuf::from(display_of(&config));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("synapse-postgres")
            .enable_all()
            .build()
            .map_err(|error| Error::Open {
                path: display.clone(),
                message: format!("cannot start the client's thread: {error}"),
            })?;
        let store = Arc::new(Self {
            display: display.clone(),
            config: config.clone(),
            options,
            runtime: Some(runtime),
            pool: Mutex::new(Pool::default()),
            returned: Condvar::new(),
            instance: Arc::from(uuid::Uuid::new_v4().to_string()),
            heard: OnceLock::new(),
            sequences: Arc::new(sequences::Sequences::new(display.clone(), config.clone())),
        });
        store.migrate()?;
        Ok(store)
    }

    fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn failed(&self, failure: Failure) -> Error {
        match failure {
            Failure::Full { stored, cap } => Error::Database {
                path: self.display.clone(),
                message: format!(
                    "the write would take the store to {stored} bytes, over store_max_bytes = {cap}: \
                     remove variables, snapshots or workspaces, or raise store_max_bytes; nothing was changed"
                ),
            },
            Failure::Invalid(message) => Error::Database {
                path: self.display.clone(),
                message,
            },
            Failure::Postgres(error) => Error::Database {
                path: self.display.clone(),
                message: describe(&error),
            },
        }
    }

    /// Opens a new connection, its I/O spawned on the store's runtime.
    fn connect(&self) -> Result<Connection, Error> {
        let unreachable = |message: String| Error::Open {
            path: self.display.clone(),
            message: format!(
                "{message}: check that PostgreSQL runs there and that the URL's user, password and database are right"
            ),
        };
        let Some(runtime) = &self.runtime else {
            return Err(unreachable("the store is closed".to_owned()));
        };
        let config = self.config.clone();
        let connecting = runtime.spawn(async move {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::warn!(%error, "a PostgreSQL connection ended");
                }
            });
            Ok::<_, tokio_postgres::Error>(client)
        });
        let client = wait(connecting)
            .map_err(|error| unreachable(error.to_string()))?
            .map_err(|error| unreachable(describe(&error)))?;
        Ok(Connection {
            client,
            statements: HashMap::new(),
        })
    }

    /// A connection from the pool (a new one while fewer than [`CONNECTIONS`] are open).
    fn lease(&self) -> Result<Connection, Error> {
        let mut pool = self.pool();
        loop {
            while let Some(connection) = pool.idle.pop() {
                if !connection.client.is_closed() {
                    return Ok(connection);
                }
                pool.open -= 1;
            }
            if pool.open < CONNECTIONS {
                pool.open += 1;
                drop(pool);
                let connection = self.connect();
                if connection.is_err() {
                    self.pool().open -= 1;
                    self.returned.notify_one();
                }
                return connection;
            }
            pool = self
                .returned
                .wait(pool)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Gives a connection back; one that failed is closed instead (its prepared statements and
    /// transaction state are not trusted).
    fn give_back(&self, connection: Connection, healthy: bool) {
        let mut pool = self.pool();
        if healthy && !connection.client.is_closed() {
            pool.idle.push(connection);
        } else {
            pool.open -= 1;
        }
        drop(pool);
        self.returned.notify_one();
    }

    /// Runs `work` on a leased connection: one statement, outside any transaction.
    fn run<T>(
        &self,
        mut work: impl FnMut(&mut Session<'_>) -> Result<T, Failure>,
    ) -> Result<T, Error> {
        let mut connection = self.lease()?;
        let Connection { client, statements } = &mut connection;
        let result = work(&mut Session { client, statements });
        self.give_back(connection, result.is_ok());
        result.map_err(|failure| self.failed(failure))
    }

    /// Runs `work` in a transaction begun with `begin`, committing it; runs it again when it
    /// meets a deadlock or a concurrent change.
    fn transaction<T>(
        &self,
        begin: &str,
        mut work: impl FnMut(&mut Session<'_>) -> Result<T, Failure>,
    ) -> Result<T, Error> {
        let mut attempt = 1;
        loop {
            let mut connection = self.lease()?;
            let Connection { client, statements } = &mut connection;
            let result: Result<T, Failure> = (|| {
                wait(client.batch_execute(begin))?;
                let value = work(&mut Session { client, statements })?;
                wait(client.batch_execute("COMMIT"))?;
                Ok(value)
            })();
            let failure = match result {
                Ok(value) => {
                    self.give_back(connection, true);
                    return Ok(value);
                }
                Err(failure) => failure,
            };
            // The connection is closed, which rolls back whatever the transaction did.
            self.give_back(connection, false);
            if attempt >= ATTEMPTS || !failure.is_transient() {
                return Err(self.failed(failure));
            }
            attempt += 1;
        }
    }

    /// A consistent read of several statements.
    fn read<T>(
        &self,
        work: impl FnMut(&mut Session<'_>) -> Result<T, Failure>,
    ) -> Result<T, Error> {
        self.transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", work)
    }

    /// A write that stores nothing new (deletes, switches): never refused by the size cap.
    fn write<T>(
        &self,
        work: impl FnMut(&mut Session<'_>) -> Result<T, Failure>,
    ) -> Result<T, Error> {
        self.transaction("BEGIN", work)
    }

    /// A write that may store more: with a size cap, refused when it would pass it.
    fn grow<T>(
        &self,
        mut work: impl FnMut(&mut Session<'_>) -> Result<T, Failure>,
    ) -> Result<T, Error> {
        let Some(cap) = self.options.max_bytes else {
            return self.write(work);
        };
        self.write(|session| {
            let value = work(session)?;
            let stored = stored_bytes(session)?;
            if stored > cap {
                return Err(Failure::Full { stored, cap });
            }
            Ok(value)
        })
    }

    /// Creates the schema, or brings it up to this build's version, under an advisory lock so
    /// that two processes starting at once migrate it once.
    fn migrate(&self) -> Result<(), Error> {
        let shown = self.display.clone();
        let newer = std::cell::Cell::new(None);
        let migrated = std::cell::Cell::new(None);
        let result = self.write(|session| {
            session.execute("SELECT pg_advisory_xact_lock(7266836179)", &[])?;
            session.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)",
                &[],
            )?;
            let stored = session.query_opt("SELECT version FROM schema_version", &[])?;
            let found: i64 = if let Some(row) = stored {
                column(&row, 0)?
            } else {
                session.execute("INSERT INTO schema_version (version) VALUES (0)", &[])?;
                0
            };
            if found > super::SCHEMA_VERSION {
                newer.set(Some(found));
                return Ok(());
            }
            for (version, migration) in MIGRATIONS.iter().filter(|(version, _)| *version > found) {
                wait(session.client.batch_execute(migration))?;
                session.execute("UPDATE schema_version SET version = $1", &[version])?;
            }
            migrated.set(Some(found).filter(|&found| found < super::SCHEMA_VERSION));
            Ok(())
        });
        result.map_err(|error| match error {
            Error::Database { path, message } => Error::Open { path, message },
            other => other,
        })?;
        if let Some(found) = newer.get() {
            return Err(Error::NewerSchema {
                path: self.display.clone(),
                found,
                supported: super::SCHEMA_VERSION,
            });
        }
        if let Some(found) = migrated.get() {
            super::report_schema(&shown.display().to_string(), found, super::SCHEMA_VERSION);
        }
        Ok(())
    }

    /// The schema version the database holds, for `doctor`.
    pub fn schema_version(&self) -> Result<i64, Error> {
        self.run(|session| {
            let row = session.query_opt("SELECT version FROM schema_version", &[])?;
            row.map_or(Ok(0), |row| column(&row, 0))
        })
    }

    /// What the size cap counts, for `doctor`.
    pub fn stored_bytes(&self) -> Result<u64, Error> {
        self.run(stored_bytes)
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        // Without waiting: a store dropped inside an async task must not block it.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The bytes the size cap counts: values (inline and pooled), descriptions, the state
/// documents, snapshot nodes and functions. It reads every stored value, so a cap suits a small
/// store; PostgreSQL's own files are larger (rows, indexes, space not yet vacuumed).
fn stored_bytes(session: &mut Session<'_>) -> Result<u64, Failure> {
    let row = session.query_opt(
        "SELECT (SELECT coalesce(sum(octet_length(value)), 0) FROM value_pool) \
         + (SELECT coalesce(sum(coalesce(octet_length(value), 0) + coalesce(octet_length(description), 0)), 0) FROM variables) \
         + (SELECT coalesce(sum(octet_length(document)), 0) FROM state) \
         + (SELECT coalesce(sum(octet_length(body)), 0) FROM snapshot_nodes) \
         + (SELECT coalesce(sum(octet_length(definition)), 0) FROM functions)",
        &[],
    )?;
    let total: i64 = match row {
        Some(row) => column(&row, 0)?,
        None => 0,
    };
    Ok(u64::try_from(total).unwrap_or(0))
}

/// Creates the workspace's row when it is new.
fn ensure_workspace(session: &mut Session<'_>, workspace: &str) -> Result<(), Failure> {
    session
        .execute(
            "INSERT INTO workspaces (name, created) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            &[&workspace, &micros(wall_clock())],
        )
        .map(drop)
}

/// The URL as messages show it: user, hosts, ports and database, never the password.
fn display_of(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|host| match host {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    let mut text = "postgres://".to_owned();
    if let Some(user) = config.get_user() {
        text.push_str(user);
        text.push('@');
    }
    text.push_str(&hosts.join(","));
    if !ports.is_empty() {
        text.push(':');
        text.push_str(&ports.join(","));
    }
    text.push('/');
    text.push_str(config.get_dbname().unwrap_or(""));
    text
}

/// A URL that did not parse, with anything between `:` and `@` hidden.
fn redacted(url: &str) -> String {
    let Some((before, after)) = url.rsplit_once('@') else {
        return url.to_owned();
    };
    match before.rsplit_once(':') {
        Some((user, _)) if user.contains("//") => format!("{user}:…@{after}"),
        _ => format!("{before}@{after}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Batch, Commit, Store};

    #[test]
    fn writes_past_the_size_cap_are_refused_and_deletes_still_run() {
        let Some(url) = testing::database() else {
            return;
        };
        let store = PostgresStore::open(
            &url,
            PostgresOptions {
                max_bytes: Some(10_000),
            },
        )
        .unwrap();
        let variable = |name: &str, length: usize| {
            crate::store::tests::record(name, &name[..1].repeat(length))
        };
        let write = |name: &str, length: usize| {
            store.commit(
                "w",
                &Batch {
                    written: vec![variable(name, length)],
                    removed: Vec::new(),
                },
            )
        };
        write("kept", 6_000).unwrap();
        // The same value again: the pool holds it once, so it fits.
        store
            .commit(
                "w",
                &Batch {
                    written: vec![variable("kept-twin", 6_000)],
                    removed: Vec::new(),
                },
            )
            .unwrap();
        let refused = write("big", 6_000).unwrap_err().to_string();
        assert!(
            refused.contains("store_max_bytes = 10000") && refused.contains("nothing was changed"),
            "{refused}"
        );
        assert_eq!(store.variable("w", "big").unwrap(), None);
        assert!(store.variable("w", "kept").unwrap().is_some());
        store
            .commit(
                "w",
                &Batch {
                    written: Vec::new(),
                    removed: vec!["kept".to_owned(), "kept-twin".to_owned()],
                },
            )
            .unwrap();
        write("big", 6_000).unwrap();
    }

    /// A batch decided before another instance's commit is still written when that commit
    /// touched none of its variables and left room for it; not when one of its variables was
    /// written or removed since, or the workspace would hold more than its capacity.
    #[test]
    fn a_batch_decided_before_other_commits_is_written_unless_they_touched_it() {
        let Some(url) = testing::database() else {
            return;
        };
        let store = PostgresStore::open(&url, PostgresOptions::default()).unwrap();
        let writing = |names: &[&str]| Batch {
            written: names
                .iter()
                .map(|name| crate::store::tests::record(name, "value"))
                .collect(),
            removed: Vec::new(),
        };
        let seen = store.commit("w", &writing(&["a"])).unwrap().after;
        // Another instance writes b after this one decided at `seen`.
        store.commit("w", &writing(&["b"])).unwrap();
        let beside = store
            .commit_unaffected("w", seen, 8, &writing(&["c"]))
            .unwrap();
        assert_eq!(
            beside,
            Some(Commit {
                before: seen + 1,
                after: seen + 2
            })
        );
        assert!(store.variable("w", "c").unwrap().is_some());
        // b was written after `seen`: nothing of the batch is.
        let overlapping = store.commit_unaffected("w", seen, 8, &writing(&["d", "b"]));
        assert_eq!(overlapping.unwrap(), None);
        assert_eq!(store.variable("w", "d").unwrap(), None);
        // a removed after `seen`: a batch writing it again is decided anew.
        let removing = Batch {
            written: Vec::new(),
            removed: vec!["a".to_owned()],
        };
        store.commit("w", &removing).unwrap();
        let removed = store.commit_unaffected("w", seen, 8, &writing(&["a"]));
        assert_eq!(removed.unwrap(), None);
        // b and c are held: a new variable fits a capacity of 3, not of 2.
        assert_eq!(
            store
                .commit_unaffected("w", seen, 2, &writing(&["e"]))
                .unwrap(),
            None
        );
        assert!(
            store
                .commit_unaffected("w", seen, 3, &writing(&["e"]))
                .unwrap()
                .is_some()
        );
        // At the current sequence the batch is written whatever it holds.
        let current = store.sequence("w").unwrap();
        assert!(
            store
                .commit_unaffected("w", current, 0, &writing(&["b"]))
                .unwrap()
                .is_some()
        );
    }
}
