//! WAL checkpoints off the request path. SQLite's automatic checkpoint runs inside the commit
//! that crosses the WAL's size threshold: that request waits while thousands of pages are
//! copied into the database and synced (a `SkillSearch` p99 of 19 ms). The store's connection
//! switches it off, and this thread, with a connection of its own, checkpoints a short while
//! after commits arrive. A passive checkpoint never blocks a writer or a reader, and the thread
//! sleeps while nothing is committed.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

/// How long commits may accumulate in the WAL before the thread checkpoints them: long enough
/// that a burst costs one checkpoint, short enough that the WAL stays small (at most what is
/// committed in this time).
const DELAY: Duration = Duration::from_millis(250);

/// The checkpointing thread of one file store; dropping it stops and joins the thread.
pub(super) struct Checkpointer {
    /// Set by the first commit after a checkpoint, so one commit of a burst wakes the thread,
    /// and the others cost one atomic swap.
    armed: Arc<AtomicBool>,
    wake: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Opens the thread's own connection to `path` and starts the thread.
    pub(super) fn start(path: &Path, busy_timeout: Duration) -> Result<Self, String> {
        let connection = Connection::open(path).map_err(|error| error.to_string())?;
        connection
            .busy_timeout(busy_timeout)
            .map_err(|error| error.to_string())?;
        let armed = Arc::new(AtomicBool::new(false));
        let (wake, woken) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".to_owned())
            .spawn({
                let armed = Arc::clone(&armed);
                move || run(&connection, &armed, &woken)
            })
            .map_err(|error| format!("cannot start the checkpoint thread: {error}"))?;
        Ok(Self {
            armed,
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    /// Called after each commit: wakes the thread unless a checkpoint is already due.
    pub(super) fn committed(&self) {
        if self.armed.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(wake) = &self.wake {
            match wake.try_send(()) {
                Ok(()) | Err(TrySendError::Full(())) => {}
                Err(TrySendError::Disconnected(())) => {
                    tracing::warn!(
                        "the checkpoint thread has stopped; the WAL is checkpointed at exit"
                    );
                }
            }
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        // Disconnecting the channel tells the thread to checkpoint once more and stop.
        self.wake.take();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the checkpoint thread panicked");
        }
    }
}

fn run(connection: &Connection, armed: &AtomicBool, woken: &Receiver<()>) {
    while woken.recv().is_ok() {
        let stopping = matches!(
            woken.recv_timeout(DELAY),
            Err(RecvTimeoutError::Disconnected)
        );
        armed.store(false, Ordering::Release);
        checkpoint(connection);
        if stopping {
            return;
        }
    }
}

/// One passive checkpoint: copies what it can of the WAL into the database without waiting.
pub(super) fn checkpoint(connection: &Connection) {
    match connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    }) {
        Ok((frames, copied)) => tracing::trace!(frames, copied, "WAL checkpoint"),
        Err(error) => tracing::warn!(%error, "WAL checkpoint failed"),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::super::{SqliteOptions, SqliteStore};
    use crate::store::{Batch, Store};
    use crate::vars::{Record, Timestamp, ValueKind, VarType};

    fn variable(name: &str) -> Record {
        Record {
            name: name.into(),
            value: "value".into(),
            kind: ValueKind::Text,
            desc: None,
            var_type: VarType::LlmAdd,
            tags: Vec::new(),
            keep: false,
            created: Timestamp(1),
            updated: Timestamp(1),
            last_visited: Timestamp(1),
            reference_count: 0,
        }
    }

    #[test]
    fn commits_never_checkpoint_and_every_commit_survives_the_thread() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("synapse.db");
        let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        let automatic: i64 = store
            .connection()
            .query_row("PRAGMA wal_autocheckpoint", [], |row| row.get(0))
            .unwrap();
        for index in 0..200 {
            let batch = Batch {
                written: vec![variable(&format!("v{index}"))],
                removed: Vec::new(),
            };
            store.commit("default", &batch).unwrap();
        }
        drop(store);

        let reopened = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        let loaded = reopened.load("default").unwrap();

        assert_eq!(automatic, 0);
        assert_eq!(loaded.variables.len(), 200);
        assert_eq!(loaded.sequence, 200);
    }
}
