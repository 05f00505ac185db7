//! How a workspace on a database server (PostgreSQL) serves a request without holding up the
//! others: the request's check of the stored change sequence is made before the request takes
//! the workspace, as a shared read that blocks no thread ([`Store::shared_sequence`]); the
//! request then waits, without blocking a thread either, while another holds the workspace
//! across a round trip (a catch-up, a batch of lazy writes or visits); and, once in, it reads
//! from memory when the sequence it was given is one this process has caught up with. Those
//! round trips are made with the thread's runtime worker handed to the other requests
//! (`block_in_place`). A write's commit holds no workspace at all (`durability.rs`): the
//! writers of this process take turns on a lock of their own, waited for off the worker.
//!
//! The sequence read is the request's fence: every write acknowledged on any instance before
//! the request arrived is at or below it. It holds for the request's task and for a short
//! while ([`FENCE_LIFETIME`]), and is dropped when a commit finds that another instance wrote
//! after it; past it, or off the request's task, reads check the sequence themselves.
//!
//! [`Store::shared_sequence`]: crate::store::Store::shared_sequence

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::{MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use super::Workspace;
use crate::store;

/// How long a fence is trusted: a call that runs longer (a plan waiting for the user) checks
/// the sequence again on its next read.
const FENCE_LIFETIME: Duration = Duration::from_millis(250);

tokio::task_local! {
    static FENCE: Cell<Option<Fence>>;
}

/// The sequence a request's shared read found, for one workspace.
#[derive(Debug, Clone, Copy)]
struct Fence {
    /// The workspace's address: a fence is for the workspace that took it.
    workspace: usize,
    sequence: u64,
    taken: Instant,
}

/// A request's sequence read, in flight.
pub struct PendingFence<'a> {
    workspace: &'a Workspace,
    reading: BoxFuture<'static, Result<u64, store::Error>>,
}

impl Workspace {
    /// The shared sequence read a request on this workspace awaits before it is served; `None`
    /// when the store answers every read itself (memory, SQLite).
    pub fn fence(&self) -> Option<PendingFence<'_>> {
        if !self.remote {
            return None;
        }
        let reading = self.store.as_ref()?.shared_sequence(&self.name)?;
        Some(PendingFence {
            workspace: self,
            reading,
        })
    }

    /// The sequence this request's fence gives, while it holds.
    pub(super) fn fenced_sequence(&self) -> Option<u64> {
        let fence = FENCE.try_with(Cell::get).ok().flatten()?;
        let mine = fence.workspace == std::ptr::from_ref(self) as usize;
        (mine && fence.taken.elapsed() < FENCE_LIFETIME).then_some(fence.sequence)
    }

    /// Pauses after a write lost the race to another process's commit, before it is decided
    /// again: off the runtime's worker, and without the request's fence (the other process
    /// wrote after it).
    pub(super) fn lost_race(&self, pause: Duration) {
        if self.remote {
            FENCE.try_with(|fence| fence.set(None)).ok();
        }
        off_runtime(|| std::thread::sleep(pause));
    }

    /// Waits, without blocking the thread, until no call holds the workspace across a round
    /// trip.
    async fn settled(&self) {
        loop {
            if self.busy.load(Ordering::Acquire) == 0 {
                return;
            }
            let notified = self.settled.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.busy.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Runs `round_trip` (a store call made while holding the workspace) with the worker
    /// thread's runtime handed to other requests, and tells the requests waiting in
    /// [`PendingFence::around`] to wait until it is done.
    pub(super) fn round_trip<T>(&self, round_trip: impl FnOnce() -> T) -> T {
        if !self.remote {
            return round_trip();
        }
        self.busy.fetch_add(1, Ordering::AcqRel);
        let _done = Done(self);
        off_runtime(round_trip)
    }
}

impl Workspace {
    /// Runs `round_trip`, a store call made without holding the workspace, with the worker
    /// thread's runtime handed to other requests.
    pub(super) fn round_trip_unheld<T>(&self, round_trip: impl FnOnce() -> T) -> T {
        debug_assert!(
            self.remote,
            "only a database server's round trips are handed off"
        );
        off_runtime(round_trip)
    }

    /// This process's turn to commit a write (one commit in flight at a time), waited for off
    /// the runtime's worker when another writer has it.
    pub(super) fn turn_to_commit(&self) -> MutexGuard<'_, ()> {
        match self.committing.try_lock() {
            Ok(turn) => turn,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => off_runtime(|| {
                self.committing
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
            }),
        }
    }
}

/// Marks the end of a round trip made holding the workspace.
struct Done<'a>(&'a Workspace);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        if self.0.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.settled.notify_waiters();
        }
    }
}

/// Runs `work`, which blocks its thread, with the runtime's worker handed to other tasks when
/// the thread is one (a current-thread runtime has no other worker to hand it to).
fn off_runtime<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

impl PendingFence<'_> {
    /// Runs `call` once the sequence read is answered and no call holds the workspace across
    /// a round trip, with the answer as its fence. A failed read leaves the call without a
    /// fence (its reads check the sequence themselves, and report the failure).
    pub async fn around<F: Future>(self, call: F) -> F::Output {
        let asked = Instant::now();
        let fence = match self.reading.await {
            Ok(sequence) => Some(Fence {
                workspace: std::ptr::from_ref(self.workspace) as usize,
                sequence,
                taken: asked,
            }),
            Err(error) => {
                tracing::debug!(%error, "the shared sequence read failed; reads check it alone");
                None
            }
        };
        self.workspace.settled().await;
        FENCE.scope(Cell::new(fence), call).await
    }
}
