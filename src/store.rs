//! Durable workspaces: where variables and ask-once approvals live between runs and between
//! processes. The in-memory variable system stays the fast path; the store is written before a
//! mutation is acknowledged, and read at start and whenever another process has changed the
//! workspace.
//!
//! How two processes share a workspace: every committed change bumps the workspace's change
//! sequence and stamps the rows it wrote (and the removals it made) with the new sequence. A
//! process remembers the last sequence it has seen; before serving a read it compares it with
//! the stored one (one indexed point read) and, when they differ, applies the rows and removals
//! stamped after it. Writes are transactions that begin `IMMEDIATE`, so two writers queue on the
//! database lock instead of failing, and no acknowledged write is lost. Two writes to the same
//! variable: the later one wins, whole. A write the workspace decided on what it had seen (an
//! eviction, a patch of some fields) commits only while the sequence is still the one it saw
//! ([`Store::commit_after`]), or, on a store that can check it in the transaction, while
//! nothing committed since touched its variables or filled the workspace
//! ([`Store::commit_unaffected`]); otherwise the process catches up and decides again, so
//! capacity and eviction hold across processes. A store that can tell processes of each other's changes
//! as they happen (PostgreSQL's `LISTEN`/`NOTIFY`) hands them out through [`Store::listen`].
//!
//! Long values (64 characters or more) are stored once, in a value pool keyed by their SHA-256,
//! so caching the same large tool result twice costs one copy.

pub mod export;
#[cfg(feature = "postgres")]
mod postgres;
mod rows;
mod sqlite;
pub mod tree;

#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
pub use sqlite::{DeepState, Diagnosis, SCHEMA_VERSION, SqliteOptions, SqliteStore};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::vars::{Record, Timestamp};

/// Why the store failed. Each message names the database file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open the store at {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error(
        "the store at {path} has schema version {found}, newer than this synapse-mcp supports ({supported}); upgrade synapse-mcp, or point --data-dir at another folder"
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("the store at {path} failed: {message}")]
    Database { path: PathBuf, message: String },
    #[error("workspace `{name}` does not exist in {path}")]
    UnknownWorkspace { name: String, path: PathBuf },
}

/// A driver's `message` with the store's location left out: its path or URL, and a PostgreSQL
/// URL's database name and address, which the server's own messages quote.
/// Logs, in one line, what opening a store did to its schema at version `found`: made a new
/// store (from version 0), or brought an older one to `now`.
fn report_schema(location: &str, found: i64, now: i64) {
    if found == 0 {
        tracing::info!("created store at {location} (schema v{now})");
    } else {
        tracing::info!("migrated store at {location} from schema v{found} to v{now}");
    }
}

fn without_location(message: &str, location: &Path) -> String {
    let location = location.display().to_string();
    let mut parts = vec![location.clone()];
    if let Some(rest) = location.split_once("://").map(|(_, rest)| rest) {
        let address = rest.rsplit('@').next().unwrap_or(rest);
        let (host, database) = address.split_once('/').unwrap_or((address, ""));
        let database = database.split('?').next().unwrap_or_default();
        parts.extend([host.to_owned(), database.to_owned()]);
    }
    parts
        .iter()
        .filter(|part| !part.is_empty())
        .fold(message.to_owned(), |message, part| {
            message.replace(part.as_str(), "…")
        })
}

impl Error {
    /// What a client is told: the failure without where the store is (its file's path, or its
    /// PostgreSQL URL), which is the operator's business and goes to the log.
    pub fn for_clients(&self) -> String {
        match self {
            Self::Open { path, message } => {
                format!("cannot open the store: {}", without_location(message, path))
            }
            Self::NewerSchema {
                found, supported, ..
            } => format!(
                "the store has schema version {found}, newer than this synapse-mcp supports \
                 ({supported})"
            ),
            Self::Database { path, message } => {
                format!("the store failed: {}", without_location(message, path))
            }
            Self::UnknownWorkspace { name, .. } => format!("workspace `{name}` does not exist"),
        }
    }
}

/// What a workspace holds at one point in its change sequence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    pub variables: Vec<Record>,
    pub sequence: u64,
}

/// The changes made to a workspace after a given sequence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    pub written: Vec<Record>,
    pub removed: Vec<String>,
    pub sequence: u64,
    /// `written` is the whole workspace (the process was too far behind for a delta): every
    /// variable not in it is gone.
    pub complete: bool,
}

/// One durable write: variables written and removed together, or nothing at all.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub written: Vec<Record>,
    pub removed: Vec<String>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.written.is_empty() && self.removed.is_empty()
    }
}

/// The sequence before and after a commit: when `before` is the sequence a process had seen,
/// nothing else happened in between and it may move straight to `after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commit {
    pub before: u64,
    pub after: u64,
}

/// A read that only refreshes `last_visited` and `reference_count`: not a change other
/// processes need to hear about.
#[derive(Debug, Clone, PartialEq)]
pub struct Visit {
    pub name: String,
    pub last_visited: Timestamp,
    pub reference_count: u64,
}

/// A workspace as `workspace list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceSummary {
    pub name: String,
    pub variables: u64,
    pub approvals: u64,
    pub sequence: u64,
}

/// The durable side of workspaces. SQLite is the embedded implementation; a server backend can
/// stand behind the same trait.
pub trait Store: Send + Sync {
    /// Where the data lives, for messages (`/path/to/synapse.db`).
    fn location(&self) -> &Path;
    /// Everything a workspace holds; creates the workspace when it is new.
    fn load(&self, workspace: &str) -> Result<Loaded, Error>;
    /// The workspace's current change sequence: a cheap read, made before serving reads.
    fn sequence(&self, workspace: &str) -> Result<u64, Error>;
    /// The rows written and removed after `since`.
    fn changes(&self, workspace: &str, since: u64) -> Result<Changes, Error>;
    /// Writes a batch durably, as one transaction; with `expected`, only while the workspace's
    /// sequence is still that one (`None`, and nothing written, when another writer committed
    /// since). Without `expected` it always commits.
    fn commit_checked(
        &self,
        workspace: &str,
        expected: Option<u64>,
        batch: &Batch,
    ) -> Result<Option<Commit>, Error>;
    /// Writes a batch durably, as one transaction.
    fn commit(&self, workspace: &str, batch: &Batch) -> Result<Commit, Error> {
        let commit = self.commit_checked(workspace, None, batch)?;
        Ok(commit.unwrap_or(Commit {
            before: 0,
            after: 0,
        }))
    }
    /// Writes a batch durably, as one transaction, only while the workspace's sequence is still
    /// `expected`: `None`, and nothing written, when another writer committed since.
    fn commit_after(
        &self,
        workspace: &str,
        expected: u64,
        batch: &Batch,
    ) -> Result<Option<Commit>, Error> {
        self.commit_checked(workspace, Some(expected), batch)
    }
    /// [`Store::commit_after`] for a batch decided from its own variables and the workspace's
    /// count alone: also written when others committed since `expected`, if none of them wrote
    /// or removed a variable the batch names and the workspace then holds at most `capacity`
    /// variables. A store that cannot tell answers as `commit_after` does.
    fn commit_unaffected(
        &self,
        workspace: &str,
        expected: u64,
        _capacity: usize,
        batch: &Batch,
    ) -> Result<Option<Commit>, Error> {
        self.commit_after(workspace, expected, batch)
    }
    /// Records reads (best effort, not a change).
    fn record_visits(&self, workspace: &str, visits: &[Visit]) -> Result<(), Error>;
    /// One variable as stored, to undo an in-memory write whose commit failed.
    fn variable(&self, workspace: &str, name: &str) -> Result<Option<Record>, Error>;
    fn is_approved(&self, workspace: &str, key: &str) -> Result<bool, Error>;
    fn remember_approval(&self, workspace: &str, key: &str) -> Result<(), Error>;
    fn approvals(&self, workspace: &str) -> Result<Vec<String>, Error>;
    /// The tool groups and tools switched at runtime: `group:<name>` or `tool:<name>`, on or
    /// off, in target order.
    fn tool_switches(&self, workspace: &str) -> Result<Vec<(String, bool)>, Error>;
    fn set_tool_switch(&self, workspace: &str, target: &str, enabled: bool) -> Result<(), Error>;
    /// The plans' state document (an empty object when nothing was written).
    fn state(&self, workspace: &str) -> Result<serde_json::Value, Error>;
    /// Changes the state document in one transaction; `change` may refuse (its message comes
    /// back in the inner `Err`, and nothing is written).
    fn update_state(
        &self,
        workspace: &str,
        change: &mut dyn FnMut(&mut serde_json::Value) -> Result<(), String>,
    ) -> Result<Result<serde_json::Value, String>, Error>;
    fn workspaces(&self) -> Result<Vec<WorkspaceSummary>, Error>;
    /// Deletes a workspace and everything in it; `false` when there was none.
    fn delete_workspace(&self, workspace: &str) -> Result<bool, Error>;
    /// The changes other processes commit, as this store hears of them; `None` when it cannot
    /// hear of them (each read still catches up through the sequence).
    fn listen(&self) -> Option<broadcast::Receiver<Heard>> {
        None
    }
    /// The workspace's current change sequence, read without blocking the calling thread by a
    /// read that begins after this call and is shared with the other reads waiting then (one
    /// round trip answers them all); `None` when the store has no such read (then
    /// [`Store::sequence`]).
    fn shared_sequence(
        &self,
        _workspace: &str,
    ) -> Option<futures::future::BoxFuture<'static, Result<u64, Error>>> {
        None
    }
    /// Whether each call is a round trip to a database server, which a caller must not make
    /// while other requests wait on it (an embedded file answers in microseconds).
    fn round_trips(&self) -> bool {
        false
    }
    /// The database connections held now, for the metrics; `None` when there are none to tell.
    fn connections(&self) -> Option<Connections> {
        None
    }
}

/// A store's database connections at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Connections {
    /// Serving a call now.
    pub in_use: usize,
    /// Open and waiting for one.
    pub idle: usize,
    /// The most the store opens.
    pub max: usize,
}

/// A change another process committed, as the store heard of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// The variables of this workspace changed.
    Variables(String),
    /// The state document of this workspace changed.
    State(String),
    /// The tool switches of this workspace changed.
    Switches(String),
    /// Changes may have gone unheard (listening began, or began again after the connection
    /// was lost): any workspace may have changed.
    Missed,
}

/// A chat state snapshot as stored, as `SnapshotGet` shows it and workspace exports carry it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredSnapshot {
    pub id: String,
    pub chat_file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swipe_id: Option<u64>,
    /// Microseconds since 1970.
    pub created_at: i64,
    /// What its message changed against the state it was built on, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The state.
    #[serde(rename = "snapshot")]
    #[schemars(extend("type" = "object"))]
    pub value: serde_json::Value,
}

/// One stored snapshot of a chat as its floor list shows it: everything but the state.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Floor {
    /// The message's index in its chat when the snapshot was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_index: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swipe_id: Option<u64>,
    pub snapshot_id: String,
    /// When the snapshot was made: ISO 8601, UTC, to the second (kept in microseconds since
    /// 1970).
    #[serde(serialize_with = "crate::vars::readable_time")]
    #[schemars(with = "String")]
    pub created_at: i64,
    /// Bytes of tree nodes the snapshot added to the store when it was written (unchanged
    /// parts are shared with the floors before it); absent for imported or edited snapshots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_bytes: Option<u64>,
    /// What its message changed against the floor it was built on, in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// A state saved under a label, outside any chat.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GlobalSnapshot {
    pub id: String,
    /// Unique in the workspace.
    pub label: String,
    #[serde(default)]
    pub description: String,
    /// Microseconds since 1970.
    pub created_at: i64,
    /// The state.
    #[serde(rename = "snapshot")]
    #[schemars(extend("type" = "object"))]
    pub value: serde_json::Value,
}

/// A global snapshot without its state, as lists show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobalSummary {
    pub id: String,
    pub label: String,
    pub description: String,
    /// When it was saved: ISO 8601, UTC, to the second (kept in microseconds since 1970).
    #[serde(serialize_with = "crate::vars::readable_time")]
    #[schemars(with = "String")]
    pub created_at: i64,
}

/// What storing snapshots cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageReport {
    pub snapshots: u64,
    /// Tree nodes the store did not hold yet.
    pub new_nodes: u64,
    /// Bytes of those new nodes: what the snapshots added to the store.
    pub new_bytes: u64,
}

/// Chats' state snapshots, function libraries and character templates. Values are JSON; how
/// they are laid out (shared subtrees) is the store's business.
pub trait SnapshotStore: Send + Sync {
    fn snapshot(&self, workspace: &str, id: &str) -> Result<Option<StoredSnapshot>, Error>;
    /// Stores new snapshots, laid out by [`tree::Encoded`], in one transaction.
    fn put_snapshots(
        &self,
        workspace: &str,
        snapshots: &tree::Encoded,
    ) -> Result<StorageReport, Error>;
    /// Replaces a snapshot's value, keeping its id; `false` when there is none.
    fn update_snapshot(
        &self,
        workspace: &str,
        id: &str,
        value: &serde_json::Value,
    ) -> Result<bool, Error>;
    /// Deletes snapshots by id in one transaction and frees the nodes nothing refers to any
    /// more; returns those that existed.
    fn delete_snapshots(&self, workspace: &str, ids: &[String]) -> Result<Vec<Floor>, Error>;
    /// A chat's floors: the message indexes its snapshots were made for, each once, in order
    /// (`None`, for snapshots made without one, first).
    fn floor_indexes(&self, workspace: &str, chat_file: &str) -> Result<Vec<Option<u64>>, Error>;
    /// A chat's snapshots of the messages in `messages` (`None` is before message 0: the
    /// snapshots made without a message index), without their states, by message, swipe and
    /// time.
    fn floors(
        &self,
        workspace: &str,
        chat_file: &str,
        messages: std::ops::RangeInclusive<Option<u64>>,
    ) -> Result<Vec<Floor>, Error>;
    /// Stores a global snapshot under its id, replacing the one with that id (its label must
    /// not belong to another).
    fn put_global(&self, workspace: &str, snapshot: &GlobalSnapshot) -> Result<(), Error>;
    /// A global snapshot by id or by label.
    fn global(&self, workspace: &str, id_or_label: &str) -> Result<Option<GlobalSnapshot>, Error>;
    /// Every global snapshot, by label.
    fn globals(&self, workspace: &str) -> Result<Vec<GlobalSummary>, Error>;
    /// Deletes a global snapshot and sweeps its unshared nodes; `false` when there was none.
    fn delete_global(&self, workspace: &str, id: &str) -> Result<bool, Error>;
    /// Deletes a chat's snapshots; returns how many.
    fn delete_chat(&self, workspace: &str, chat_file: &str) -> Result<u64, Error>;
    /// Deletes the snapshots of every chat not in `active_chat_files`; returns each deleted
    /// chat with its snapshot count.
    fn cleanup(
        &self,
        workspace: &str,
        active_chat_files: &[String],
    ) -> Result<Vec<(String, u64)>, Error>;
    /// Every snapshot of a workspace, by chat and message (for exports).
    fn all_snapshots(&self, workspace: &str) -> Result<Vec<StoredSnapshot>, Error>;
    /// The scopes that have stored functions, in the order first stored.
    fn function_scopes(&self, workspace: &str) -> Result<Vec<String>, Error>;
    /// Every character's template.
    fn templates(&self, workspace: &str) -> Result<Vec<(String, serde_json::Value)>, Error>;
    /// The chats that have snapshots, with their counts.
    fn chats(&self, workspace: &str) -> Result<Vec<(String, u64)>, Error>;
    /// The ids of a chat's snapshots, by message and swipe (for completion).
    fn snapshot_ids(&self, workspace: &str, chat_file: &str) -> Result<Vec<String>, Error>;
    /// The characters that have a template, in id order (for completion).
    fn template_characters(&self, workspace: &str) -> Result<Vec<String>, Error>;
    /// A scope's function definitions, in the order first stored.
    fn functions(&self, workspace: &str, scope: &str) -> Result<Vec<serde_json::Value>, Error>;
    /// Inserts or replaces functions by id, in one transaction.
    fn put_functions(
        &self,
        workspace: &str,
        scope: &str,
        functions: &[(String, serde_json::Value)],
    ) -> Result<(), Error>;
    fn remove_function(&self, workspace: &str, scope: &str, id: &str) -> Result<bool, Error>;
    fn template(
        &self,
        workspace: &str,
        character_id: &str,
    ) -> Result<Option<serde_json::Value>, Error>;
    fn set_template(
        &self,
        workspace: &str,
        character_id: &str,
        template: &serde_json::Value,
    ) -> Result<(), Error>;
    /// Moves a function from one scope to another in one transaction, storing `definition`
    /// under `id` in `to`; `false` (and nothing written) when `from` has no such function.
    fn move_function(
        &self,
        workspace: &str,
        from: &str,
        to: &str,
        id: &str,
        definition: &serde_json::Value,
    ) -> Result<bool, Error>;
    /// A target's own enable switch (`chat:<file>`, `character:<id>`), if it has one.
    fn switch(&self, workspace: &str, target: &str) -> Result<Option<bool>, Error>;
    /// Sets a target's switch, or removes it (`None`).
    fn set_switch(&self, workspace: &str, target: &str, enabled: Option<bool>)
    -> Result<(), Error>;
    /// Every stored switch, by target.
    fn switches(&self, workspace: &str) -> Result<Vec<(String, bool)>, Error>;
}

/// A store that keeps workspaces and snapshots both: what a durable [`Location`] opens.
pub trait DurableStore: Store + SnapshotStore {}

impl<T: Store + SnapshotStore + ?Sized> DurableStore for T {}

/// Where the store lives, from `--store` and `--data-dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// Nothing is written; everything is gone when the process ends.
    Memory,
    Sqlite(PathBuf),
    /// A PostgreSQL database, by its URL (`postgres://…`).
    Postgres(String),
}

impl Location {
    /// `--store memory`, `--store sqlite://PATH`, `--store postgres://…`, else
    /// `DATA_DIR/synapse.db`, else `$XDG_DATA_HOME/synapse-mcp/synapse.db` or
    /// `~/.local/share/synapse-mcp/synapse.db`.
    pub fn resolve(store: Option<&str>, data_dir: Option<&Path>) -> Result<Self, String> {
        match store {
            Some("memory") => return Ok(Self::Memory),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                return Ok(Self::Postgres(url.to_owned()));
            }
            Some(other) => {
                let path = other.strip_prefix("sqlite://").ok_or_else(|| {
                    format!(
                        "unknown --store `{other}`: use `memory`, `sqlite://PATH` or `postgres://USER:PASSWORD@HOST:PORT/DATABASE`"
                    )
                })?;
                return Ok(Self::Sqlite(PathBuf::from(path)));
            }
            None => {}
        }
        let directory = match data_dir {
            Some(directory) => directory.to_owned(),
            None => default_data_dir().ok_or_else(|| {
                "cannot find a data folder: set XDG_DATA_HOME or HOME, or pass --data-dir"
                    .to_owned()
            })?,
        };
        Ok(Self::Sqlite(directory.join("synapse.db")))
    }

    /// Opens the store (migrating it); `None` for `memory`, which keeps nothing.
    pub fn open(&self, max_bytes: Option<u64>) -> Result<Option<Arc<dyn DurableStore>>, Error> {
        Ok(match self {
            Self::Memory => None,
            Self::Sqlite(path) => Some(SqliteStore::open(path, SqliteOptions { max_bytes })?),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => Some(PostgresStore::open(url, PostgresOptions { max_bytes })?),
            #[cfg(not(feature = "postgres"))]
            Self::Postgres(_) => {
                return Err(Error::Open {
                    path: PathBuf::from("postgres://…"),
                    message: "this build has no PostgreSQL client (it was built without the \
                              `postgres` feature): install the default build, or use \
                              `sqlite://PATH`"
                        .to_owned(),
                });
            }
        })
    }
}

/// What the tests look at below the traits: the stored snapshot nodes.
#[cfg(test)]
pub(crate) trait Inspect: DurableStore {
    /// Every snapshot node as `(hash, refs, body)`, by hash.
    fn snapshot_nodes(&self) -> Vec<(String, i64, String)>;
    /// The root of every chat snapshot, template and global snapshot.
    fn snapshot_roots(&self) -> Vec<String>;
}

/// Every kind of durable store, fresh, for the tests that must hold for each: an in-memory
/// SQLite database, and a new PostgreSQL database when a server can be started.
#[cfg(test)]
pub(crate) fn every_store() -> Vec<Arc<dyn Inspect>> {
    #[cfg_attr(
        not(feature = "postgres"),
        expect(
            unused_mut,
            reason = "PostgreSQL's store joins with the `postgres` feature"
        )
    )]
    let mut stores: Vec<Arc<dyn Inspect>> = vec![SqliteStore::open_in_memory().unwrap()];
    #[cfg(feature = "postgres")]
    if let Some(url) = postgres::testing::database() {
        stores.push(PostgresStore::open(&url, PostgresOptions::default()).unwrap());
    }
    stores
}

/// `$XDG_DATA_HOME/synapse-mcp`, or `~/.local/share/synapse-mcp`.
pub fn default_data_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_DATA_HOME").filter(|value| !value.is_empty());
    let base = match xdg {
        Some(xdg) => PathBuf::from(xdg),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".local/share"),
    };
    Some(base.join("synapse-mcp"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn locations_come_from_store_then_data_dir() {
        assert_eq!(
            Location::resolve(Some("memory"), None),
            Ok(Location::Memory)
        );
        assert_eq!(
            Location::resolve(Some("sqlite:///tmp/x.db"), Some(Path::new("/ignored"))),
            Ok(Location::Sqlite(PathBuf::from("/tmp/x.db")))
        );
        assert_eq!(
            Location::resolve(None, Some(Path::new("/data"))),
            Ok(Location::Sqlite(PathBuf::from("/data/synapse.db")))
        );
        assert_eq!(
            Location::resolve(Some("postgres://u@h:5/db"), None),
            Ok(Location::Postgres("postgres://u@h:5/db".to_owned()))
        );
        let unknown = Location::resolve(Some("mysql://x"), None).unwrap_err();
        assert!(unknown.contains("mysql://x"), "{unknown}");
    }

    /// A variable as the tests write it (with a NUL in its description).
    pub(super) fn record(name: &str, value: &str) -> Record {
        Record {
            name: Arc::from(name),
            value: Arc::from(value),
            kind: crate::vars::ValueKind::Text,
            var_type: crate::vars::VarType::LlmAdd,
            desc: Some(format!("{name} \u{0} described")),
            tags: vec!["t".to_owned()],
            keep: false,
            created: Timestamp(1),
            updated: Timestamp(2),
            last_visited: Timestamp(3),
            reference_count: 0,
        }
    }

    /// Two handles on one durable store, and the folder it may live in.
    type SharedStore = (
        Arc<dyn DurableStore>,
        Arc<dyn DurableStore>,
        tempfile::TempDir,
    );

    /// Two handles on one durable store, as two processes have them, for each kind.
    fn shared_stores() -> Vec<SharedStore> {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("synapse.db");
        let open = || -> Arc<dyn DurableStore> {
            SqliteStore::open(&path, SqliteOptions::default()).unwrap()
        };
        #[cfg_attr(
            not(feature = "postgres"),
            expect(
                unused_mut,
                reason = "PostgreSQL's stores join with the `postgres` feature"
            )
        )]
        let mut pairs = vec![(open(), open(), folder)];
        #[cfg(feature = "postgres")]
        if let Some(url) = postgres::testing::database() {
            let open = || -> Arc<dyn DurableStore> {
                PostgresStore::open(&url, PostgresOptions::default()).unwrap()
            };
            pairs.push((open(), open(), tempfile::tempdir().unwrap()));
        }
        pairs
    }

    #[test]
    fn two_handles_writing_one_workspace_at_once_lose_no_update() {
        const WRITES: u64 = 40;
        for (first, second, _folder) in shared_stores() {
            let write = |store: Arc<dyn DurableStore>, prefix: &'static str| {
                std::thread::spawn(move || {
                    let mut sequences = Vec::new();
                    for index in 0..WRITES {
                        let batch = Batch {
                            written: vec![
                                record(
                                    &format!("{prefix}-{index}"),
                                    &"v".repeat(70 + usize::try_from(index).unwrap()),
                                ),
                                record("shared", prefix),
                            ],
                            removed: Vec::new(),
                        };
                        sequences.push(store.commit("w", &batch).unwrap().after);
                        store
                            .update_state("w", &mut |document| {
                                let count = document["count"].as_u64().unwrap_or(0);
                                document["count"] = serde_json::json!(count + 1);
                                Ok(())
                            })
                            .unwrap()
                            .unwrap();
                    }
                    sequences
                })
            };
            let one = write(first.clone(), "a");
            let two = write(second.clone(), "b");
            let mut sequences = one.join().unwrap();
            sequences.extend(two.join().unwrap());
            sequences.sort_unstable();
            assert_eq!(
                sequences,
                (1..=2 * WRITES).collect::<Vec<_>>(),
                "each commit took the next sequence"
            );
            assert_eq!(
                second.state("w").unwrap()["count"],
                serde_json::json!(2 * WRITES)
            );
            let loaded = first.load("w").unwrap();
            assert_eq!(loaded.sequence, 2 * WRITES);
            assert_eq!(loaded.variables.len() as u64, 2 * WRITES + 1);
            let seen = second.changes("w", WRITES).unwrap();
            assert_eq!(seen.sequence, 2 * WRITES);
            assert!(
                seen.written
                    .iter()
                    .any(|variable| &*variable.name == "shared")
            );
            assert_eq!(
                first.variable("w", "a-3").unwrap(),
                Some(record("a-3", &"v".repeat(73))),
                "a pooled value and a description with a NUL read back whole"
            );
        }
    }
}
