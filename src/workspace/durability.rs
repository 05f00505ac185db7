//! How the workspace keeps memory and the store in step: catching up with other processes
//! before a read, committing a write (and undoing it in memory when the commit fails or another
//! process committed first, then deciding it again), and the batched writes of visits and
//! lazily written variables.

use std::collections::HashSet;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use super::{Error, State, VariableEvent, Workspace, names_of};
use crate::store::{self, Batch, Visit};
use crate::vars::Variable;

/// Visits waiting to be written before a batch goes out.
const VISIT_BATCH: usize = 512;

/// How many times catching up is tried again when another process commits during it.
const ATTEMPTS: usize = 32;

/// How long a write keeps deciding itself again while other processes commit before it: a
/// competing writer delays it, and never makes it fail, unless the workspace is written faster
/// than one commit can be decided for this long.
const CONTENTION_DEADLINE: Duration = Duration::from_secs(5);

/// The longest pause before a write is decided again; the pauses double from
/// [`FIRST_PAUSE`] up to it, and a random part of each is taken (full jitter), so that two
/// processes that lost to each other do not try again in lockstep.
const LONGEST_PAUSE: Duration = Duration::from_millis(32);
const FIRST_PAUSE: Duration = Duration::from_micros(500);

/// What a change made in memory, for [`Workspace::commit_with`] to commit.
pub(super) struct Applied<T> {
    pub(super) outcome: T,
    pub(super) written: Vec<String>,
    pub(super) removed: Vec<String>,
}

impl Workspace {
    /// Writes pending visits (`last_visited`, reference counts).
    pub fn flush_visits(&self) {
        let mut state = self.lock();
        self.write_visits(&mut state);
    }

    /// Writes the lazily written variables still waiting for their batch.
    pub fn flush_unsaved(&self) {
        let mut state = self.lock();
        if let Err(error) = self.persist_lazy(&mut state) {
            tracing::warn!(%error, "cannot write cached variables");
        }
    }

    pub(super) fn visited(&self, state: &mut State, name: &Arc<str>) {
        if self.store.is_none() {
            return;
        }
        state.visited.insert(Arc::clone(name));
        if state.visited.len() >= VISIT_BATCH {
            self.write_visits(state);
        }
    }

    pub(super) fn write_visits(&self, state: &mut State) {
        let Some(store) = &self.store else { return };
        let visits: Vec<Visit> = state
            .visited
            .drain()
            .filter_map(|name| state.system.peek(&name))
            .map(|variable| Visit {
                name: variable.name.to_string(),
                last_visited: variable.last_visited,
                reference_count: variable.reference_count,
            })
            .collect();
        if visits.is_empty() {
            return;
        }
        if let Err(error) = self.round_trip(|| store.record_visits(&self.name, &visits)) {
            tracing::warn!(%error, "cannot record variable visits");
        }
    }

    /// The state, caught up with changes committed by other processes.
    pub(super) fn synced(&self) -> Result<MutexGuard<'_, State>, Error> {
        let mut state = self.lock();
        let Some(store) = &self.store else {
            return Ok(state);
        };
        if self.remote {
            return self.synced_remotely(state, store.as_ref());
        }
        if store.sequence(&self.name)? == state.seen {
            return Ok(state);
        }
        self.catch_up_fully(&mut state)?;
        Ok(state)
    }

    /// [`Workspace::synced`] on a database server: no round trip when the request's fence is
    /// one this process has caught up with (`fence.rs`).
    fn synced_remotely<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        store: &dyn store::Store,
    ) -> Result<MutexGuard<'a, State>, Error> {
        let stored = match self.fenced_sequence() {
            Some(fenced) if fenced <= state.seen => return Ok(state),
            Some(fenced) => fenced,
            None => self.round_trip(|| store.sequence(&self.name))?,
        };
        if stored == state.seen {
            return Ok(state);
        }
        self.round_trip(|| self.catch_up_fully(&mut state))?;
        Ok(state)
    }

    /// Catches up, again while another process commits before its eviction can.
    fn catch_up_fully(&self, state: &mut State) -> Result<(), Error> {
        // An eviction after catching up commits only if nothing came between; else again.
        let mut attempt = 1;
        while !self.catch_up(state)? && attempt < ATTEMPTS {
            attempt += 1;
        }
        Ok(())
    }

    /// Applies what other processes committed since this one last caught up, announces it,
    /// then evicts what a full workspace no longer holds; `false` when another process
    /// committed before that eviction could (it is undone, and the caller catches up again).
    fn catch_up(&self, state: &mut State) -> Result<bool, Error> {
        let Some(store) = &self.store else {
            return Ok(true);
        };
        // Lazy writes go out first: catching up may reload the whole workspace from the store.
        self.persist_lazy(state)?;
        let changes = store.changes(&self.name, state.seen)?;
        let mut events = Vec::new();
        if changes.complete {
            let kept: HashSet<&str> = changes.written.iter().map(|v| &*v.name).collect();
            let gone: Vec<String> = state
                .system
                .iter()
                .map(|variable| variable.name.to_string())
                .filter(|name| !kept.contains(name.as_str()))
                .collect();
            events.extend(
                gone.into_iter()
                    .filter(|name| state.system.forget(name))
                    .map(|name| (name, VariableEvent::Removed)),
            );
        }
        for name in changes.removed {
            if state.system.forget(&name) {
                events.push((name, VariableEvent::Removed));
            }
        }
        for variable in changes.written {
            let event = if state.system.peek(&variable.name).is_some() {
                VariableEvent::Updated
            } else {
                VariableEvent::Created
            };
            events.push((variable.name.to_string(), event));
            state.system.restore(variable);
        }
        state.seen = changes.sequence;
        let evicted = state.system.evict();
        let committed = self.persist(state, &[], &names_of(&evicted))?;
        if committed {
            events.extend(
                evicted
                    .iter()
                    .map(|name| (name.to_string(), VariableEvent::Removed)),
            );
        }
        for (name, event) in events {
            self.announce(Arc::from(name.as_str()), event);
        }
        Ok(committed)
    }

    /// Catches up with other processes now, announcing what they changed to this process's
    /// subscribers (a change heard of from another process).
    pub fn catch_up_now(&self) -> Result<(), Error> {
        match &self.store {
            // On a database server the sequence is read before the workspace is taken, so that
            // the requests it serves meanwhile wait only when there is something to catch up.
            Some(store) if self.remote => {
                let stored = store.sequence(&self.name)?;
                let mut state = self.lock();
                if stored != state.seen {
                    self.round_trip(|| self.catch_up_fully(&mut state))?;
                }
            }
            _ => drop(self.synced()?),
        }
        Ok(())
    }

    /// Runs `apply` on the caught-up state and commits the variables it names as written and
    /// removed, only if no other process committed since this one caught up; when one did, the
    /// change is undone, and caught up and applied again. The caller announces the outcome
    /// once it holds the state no more.
    pub(super) fn commit_with<T>(
        &self,
        mut apply: impl FnMut(&mut State) -> Result<Applied<T>, Error>,
    ) -> Result<T, Error> {
        if self.remote
            && let Some(store) = &self.store
        {
            return self.commit_unlocked(store.as_ref(), apply);
        }
        let mut lost = 0_u32;
        let mut started = None;
        loop {
            let mut state = self.synced()?;
            let applied = apply(&mut state)?;
            if self.persist(&mut state, &applied.written, &applied.removed)? {
                return Ok(applied.outcome);
            }
            drop(state);
            // Only a lost race pays for the clock and the pause.
            let started = *started.get_or_insert_with(Instant::now);
            lost += 1;
            if started.elapsed() >= CONTENTION_DEADLINE {
                return Err(self.contended(lost));
            }
            self.lost_race(pause(lost));
        }
    }

    /// [`Workspace::commit_with`] on a database server, without holding the workspace across
    /// the commit's round trip: the change is decided on the caught-up state and rolled back at
    /// once (so that the requests served meanwhile read only what is committed), the batch it
    /// makes is committed with the workspace free (also after other processes' commits that
    /// touched none of its variables, [`store::Store::commit_unaffected`]), then put in memory
    /// when nothing came between — else the next catch-up reads it from the store. This process's writers take turns, one commit
    /// in flight at a time (they would only lose the race to each other otherwise).
    fn commit_unlocked<T>(
        &self,
        store: &dyn store::Store,
        mut apply: impl FnMut(&mut State) -> Result<Applied<T>, Error>,
    ) -> Result<T, Error> {
        let mut lost = 0_u32;
        let mut started = None;
        loop {
            let turn = self.turn_to_commit();
            let (outcome, batch, expected, capacity) = {
                let mut state = self.synced()?;
                state.system.begin_journal();
                let applied = apply(&mut state);
                let decided = applied.map(|applied| {
                    let batch = Self::batch(&state, &applied.written, &applied.removed);
                    (applied.outcome, batch)
                });
                state.system.roll_back();
                let (outcome, batch) = decided?;
                if batch.is_empty() {
                    return Ok(outcome);
                }
                (outcome, batch, state.seen, state.system.capacity())
            };
            let committed = self.round_trip_unheld(|| {
                store.commit_unaffected(&self.name, expected, capacity, &batch)
            })?;
            let mut state = self.lock();
            if let Some(commit) = committed {
                // A catch-up made meanwhile read this commit from the store, and maybe later
                // ones that the batch must not overwrite.
                if state.seen == commit.before {
                    for record in &batch.written {
                        state.system.restore(record.clone());
                    }
                    for name in &batch.removed {
                        state.system.forget(name);
                    }
                    state.seen = commit.after;
                }
                let committed: HashSet<&str> = batch
                    .written
                    .iter()
                    .map(|record| &*record.name)
                    .chain(batch.removed.iter().map(String::as_str))
                    .collect();
                state
                    .unsaved
                    .retain(|name| !committed.contains(name.as_str()));
                return Ok(outcome);
            }
            // Another process came first: nothing of this change was shown; catch up and
            // decide it again.
            drop(state);
            drop(turn);
            let started = *started.get_or_insert_with(Instant::now);
            lost += 1;
            if started.elapsed() >= CONTENTION_DEADLINE {
                return Err(self.contended(lost));
            }
            self.lost_race(pause(lost));
        }
    }

    /// Why a write gave up after other processes committed before it for
    /// [`CONTENTION_DEADLINE`].
    fn contended(&self, lost: u32) -> Error {
        let location = self.store.as_ref().map_or_else(
            || std::path::PathBuf::from("memory"),
            |store| store.location().to_owned(),
        );
        Error::Store(store::Error::Database {
            path: location,
            message: format!(
                "other instances wrote to workspace `{}` before this write for {} s ({lost} \
                 times in a row), so it was not made; nothing was changed, try again",
                self.name,
                CONTENTION_DEADLINE.as_secs()
            ),
        })
    }

    /// Commits the lazy writes still waiting, whatever other processes committed meanwhile
    /// (their rows are whole, and catching up reads them back).
    pub(super) fn persist_lazy(&self, state: &mut State) -> Result<(), Error> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let batch = Self::batch(state, &[], &[]);
        if batch.is_empty() {
            return Ok(());
        }
        let commit = self.round_trip(|| store.commit(&self.name, &batch))?;
        if commit.before == state.seen {
            state.seen = commit.after;
        }
        state.unsaved.clear();
        Ok(())
    }

    /// What a commit of `written` and `removed` writes, with the lazy writes still waiting.
    fn batch(state: &State, written: &[String], removed: &[String]) -> Batch {
        let mut batch = Batch {
            written: written
                .iter()
                .filter_map(|name| state.system.peek(name))
                .map(Variable::to_record)
                .collect(),
            removed: removed.to_vec(),
        };
        for name in &state.unsaved {
            if written.contains(name) || removed.contains(name) {
                continue;
            }
            match state.system.peek(name) {
                Some(variable) => batch.written.push(variable.to_record()),
                None => batch.removed.push(name.clone()),
            }
        }
        batch
    }

    /// Commits what changed in memory, with the lazy writes still waiting, only if no other
    /// process committed since this one caught up. When one did (`false`), or the commit
    /// fails, puts the stored rows of `written` and `removed` back in memory and announces
    /// them (lazy writes wait for the next commit).
    pub(super) fn persist(
        &self,
        state: &mut State,
        written: &[String],
        removed: &[String],
    ) -> Result<bool, Error> {
        let Some(store) = &self.store else {
            return Ok(true);
        };
        let batch = Self::batch(state, written, removed);
        if batch.is_empty() {
            return Ok(true);
        }
        match self.round_trip(|| store.commit_after(&self.name, state.seen, &batch)) {
            Ok(Some(commit)) => {
                state.seen = commit.after;
                state.unsaved.clear();
                Ok(true)
            }
            Ok(None) => {
                // Another process came first: what it wrote replaces this change in memory,
                // and this process's subscribers hear of it like of any other change.
                self.undo(state, written.iter().chain(removed));
                for name in written.iter().chain(removed) {
                    let event = if state.system.peek(name).is_some() {
                        VariableEvent::Updated
                    } else {
                        VariableEvent::Removed
                    };
                    self.announce(Arc::from(name.as_str()), event);
                }
                Ok(false)
            }
            Err(error) => {
                self.undo(state, written.iter().chain(removed));
                Err(error.into())
            }
        }
    }

    /// Restores variables from the store after a failed commit.
    pub(super) fn undo<'a>(&self, state: &mut State, names: impl Iterator<Item = &'a String>) {
        let Some(store) = &self.store else { return };
        for name in names {
            match self.round_trip(|| store.variable(&self.name, name)) {
                Ok(Some(stored)) => state.system.restore(stored),
                Ok(None) => {
                    state.system.forget(name);
                }
                Err(error) => {
                    tracing::error!(%error, %name, "cannot restore a variable after a failed write");
                }
            }
        }
    }
}

/// The pause after the `lost`-th lost race in a row: a random length up to
/// `FIRST_PAUSE · 2^(lost - 1)`, at most [`LONGEST_PAUSE`].
fn pause(lost: u32) -> Duration {
    let ceiling = FIRST_PAUSE
        .saturating_mul(1_u32 << lost.saturating_sub(1).min(16))
        .min(LONGEST_PAUSE);
    let mut random = [0_u8; 4];
    // Without randomness, the whole ceiling: still a backoff, only not jittered.
    if getrandom::fill(&mut random).is_err() {
        return ceiling;
    }
    let fraction = f64::from(u32::from_le_bytes(random)) / f64::from(u32::MAX);
    ceiling.mul_f64(fraction)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::store::{SqliteOptions, SqliteStore};
    use crate::vars::{ListFilter, NewVariable, SystemClock, VarType};

    #[test]
    fn pauses_grow_to_their_ceiling_and_stay_below_it() {
        for lost in 1..40 {
            let ceiling = (FIRST_PAUSE * 2_u32.pow((lost - 1).min(16))).min(LONGEST_PAUSE);
            let paused = pause(lost);
            assert!(paused <= ceiling, "{lost}: {paused:?} over {ceiling:?}");
        }
        assert_eq!(
            (FIRST_PAUSE * 2_u32.pow(6)).min(LONGEST_PAUSE),
            LONGEST_PAUSE
        );
    }

    /// Two processes' workspaces over one SQLite file, each with a connection of its own,
    /// writing at once past the capacity: every overflow evicts one variable, once.
    #[test]
    fn concurrent_writers_in_two_processes_keep_the_capacity_and_evict_once() {
        const CAPACITY: usize = 8;
        const WRITES: usize = 40;
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("synapse.db");
        let open = || {
            let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
            Arc::new(Workspace::open("w", CAPACITY, Arc::new(SystemClock::new()), store).unwrap())
        };
        let workspaces = [open(), open()];
        let writers: Vec<_> = workspaces
            .iter()
            .enumerate()
            .map(|(process, workspace)| {
                let workspace = Arc::clone(workspace);
                std::thread::spawn(move || {
                    let mut evicted = Vec::new();
                    for write in 0..WRITES {
                        let name = format!("p{process}-{write}");
                        let variable = NewVariable::text(name, "value", VarType::LlmAdd);
                        let outcome = workspace.insert(variable).unwrap();
                        evicted.extend(outcome.evicted.iter().map(ToString::to_string));
                    }
                    evicted
                })
            })
            .collect();
        let evicted: Vec<String> = writers
            .into_iter()
            .flat_map(|writer| writer.join().unwrap())
            .collect();
        let once: BTreeSet<&String> = evicted.iter().collect();
        assert_eq!(once.len(), evicted.len(), "evicted twice: {evicted:?}");
        let survivors: BTreeSet<String> = workspaces[0]
            .list(&ListFilter::default())
            .unwrap()
            .iter()
            .map(|variable| variable.name.to_string())
            .collect();
        assert_eq!(survivors.len(), CAPACITY);
        assert_eq!(evicted.len(), 2 * WRITES - CAPACITY);
        assert!(once.iter().all(|name| !survivors.contains(*name)));
    }
}
