//! Shared reads of workspaces' change sequences, for the check a request makes before it is
//! served ([`Store::shared_sequence`](crate::store::Store::shared_sequence)): they block no
//! thread (the caller awaits an answer), and one round trip answers every read waiting when it
//! is sent. A read joins the next round trip, never one already in flight (which may have left
//! before a write the caller saw acknowledged), so each answer is at least the sequence stored
//! when the read was asked for. Under load the round trips run back to back, each answering
//! all the reads that arrived during the one before: the database sees one query per round
//! trip, not one per request.
//!
//! The reads run on a connection of their own, outside the pool (a pooled connection may be
//! waited for by a caller that blocks a thread, and these must never wait behind one), opened
//! at the first read and again after one fails; a failed round trip fails the reads it
//! answers, and their callers fall back to a read of their own.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use tokio::sync::oneshot;
use tokio_postgres::{Client, NoTls, Statement};

use super::{PostgresStore, describe};
use crate::store::Error;

/// The reads waiting for the next round trip, and the connection they run on.
pub(super) struct Sequences {
    display: PathBuf,
    config: tokio_postgres::Config,
    batching: Mutex<Batching>,
    /// Used by the one task that runs round trips; kept between them.
    connection: Mutex<Option<(Client, Statement)>>,
    /// Round trips made, for the tests.
    #[cfg(test)]
    round_trips: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct Batching {
    /// A task is running round trips; it takes what waits when its round trip is done.
    running: bool,
    waiting: Vec<Waiting>,
}

struct Waiting {
    workspace: String,
    answer: oneshot::Sender<Result<u64, String>>,
}

impl Sequences {
    pub(super) fn new(display: PathBuf, config: tokio_postgres::Config) -> Self {
        Self {
            display,
            config,
            batching: Mutex::default(),
            connection: Mutex::default(),
            #[cfg(test)]
            round_trips: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn batching(&self) -> MutexGuard<'_, Batching> {
        self.batching.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn connection(&self) -> MutexGuard<'_, Option<(Client, Statement)>> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs round trips while reads wait.
    async fn run(self: Arc<Self>) {
        loop {
            let batch = {
                let mut batching = self.batching();
                if batching.waiting.is_empty() {
                    batching.running = false;
                    return;
                }
                std::mem::take(&mut batching.waiting)
            };
            let names: Vec<&str> = batch.iter().map(|read| read.workspace.as_str()).collect();
            let answered = self.round_trip(&names).await;
            for read in batch {
                let answer = match &answered {
                    Ok(sequences) => Ok(sequences.get(&read.workspace).copied().unwrap_or(0)),
                    Err(message) => Err(message.clone()),
                };
                // The caller may have gone (its request was cancelled).
                read.answer.send(answer).ok();
            }
        }
    }

    /// One query for the sequences of `names` (a workspace not stored yet is at 0).
    async fn round_trip(&self, names: &[&str]) -> Result<HashMap<String, u64>, String> {
        #[cfg(test)]
        self.round_trips
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let kept = self.connection().take();
        let (client, statement) = match kept {
            Some((client, statement)) if !client.is_closed() => (client, statement),
            _ => self.connect().await.map_err(|error| describe(&error))?,
        };
        let rows = client
            .query(&statement, &[&names])
            .await
            .map_err(|error| describe(&error))?;
        let mut sequences = HashMap::with_capacity(rows.len());
        for row in &rows {
            let name: String = row.try_get(0).map_err(|error| describe(&error))?;
            let sequence: i64 = row.try_get(1).map_err(|error| describe(&error))?;
            sequences.insert(name, u64::try_from(sequence).unwrap_or(0));
        }
        *self.connection() = Some((client, statement));
        Ok(sequences)
    }

    async fn connect(&self) -> Result<(Client, Statement), tokio_postgres::Error> {
        let (client, connection) = self.config.connect(NoTls).await?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "the connection reading change sequences ended");
            }
        });
        let statement = client
            .prepare("SELECT name, sequence FROM workspaces WHERE name = ANY($1)")
            .await?;
        Ok((client, statement))
    }
}

impl PostgresStore {
    /// The workspace's sequence from the next shared round trip.
    pub(super) fn shared_sequence(
        &self,
        workspace: &str,
    ) -> Option<BoxFuture<'static, Result<u64, Error>>> {
        let runtime = self.runtime.as_ref()?;
        let (answer, answered) = oneshot::channel();
        let start = {
            let mut batching = self.sequences.batching();
            batching.waiting.push(Waiting {
                workspace: workspace.to_owned(),
                answer,
            });
            !std::mem::replace(&mut batching.running, true)
        };
        if start {
            runtime.spawn(Arc::clone(&self.sequences).run());
        }
        let sequences = Arc::clone(&self.sequences);
        Some(Box::pin(async move {
            let failed = |message: String| Error::Database {
                path: sequences.display.clone(),
                message,
            };
            match answered.await {
                Ok(answer) => answer.map_err(failed),
                Err(_) => Err(failed("the store closed".to_owned())),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::super::{PostgresOptions, testing};
    use super::*;
    use crate::store::{Batch, Store};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shared_reads_see_every_commit_made_before_they_were_asked_for_and_share_round_trips() {
        let Some(url) = testing::database() else {
            return;
        };
        let store = PostgresStore::open(&url, PostgresOptions::default()).unwrap();
        let unknown = store
            .shared_sequence("never-written")
            .unwrap()
            .await
            .unwrap();
        assert_eq!(unknown, 0);
        for round in 1..=20_u64 {
            let committing = Arc::clone(&store);
            tokio::task::spawn_blocking(move || {
                let batch = Batch {
                    written: vec![crate::store::tests::record("x", "value")],
                    removed: Vec::new(),
                };
                committing.commit("w", &batch).unwrap();
            })
            .await
            .unwrap();
            // Many reads at once, for two workspaces: each answer is at least the commit's.
            let reads: Vec<_> = (0..16)
                .map(|index| {
                    let workspace = if index % 2 == 0 { "w" } else { "other" };
                    store.shared_sequence(workspace).unwrap()
                })
                .collect();
            let before = store.sequences.round_trips.load(Ordering::Relaxed);
            let answers = futures::future::join_all(reads).await;
            for (index, answer) in answers.into_iter().enumerate() {
                let expected = if index % 2 == 0 { round } else { 0 };
                assert_eq!(answer.unwrap(), expected, "round {round}, read {index}");
            }
            // The first read leaves at once; the others, asked for while it is in flight,
            // share the next round trip.
            let made = store.sequences.round_trips.load(Ordering::Relaxed) - before;
            assert!(made <= 3, "16 reads took {made} round trips");
        }
    }
}
