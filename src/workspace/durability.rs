//! How the workspace keeps memory and the store in step: catching up with other processes
//! before a read, committing a write (and undoing it in memory when the commit fails), and the
//! batched writes of visits and lazily written variables.

use std::collections::HashSet;
use std::sync::{Arc, MutexGuard};

use super::{Error, State, VariableEvent, Workspace, names_of};
use crate::store::{Batch, Visit};
use crate::vars::{Variable, WriteOutcome};

/// Visits waiting to be written before a batch goes out.
const VISIT_BATCH: usize = 512;

impl Workspace {
    /// Writes pending visits (`last_visited`, reference counts).
    pub fn flush_visits(&self) {
        let mut state = self.lock();
        self.write_visits(&mut state);
    }

    /// Writes the lazily written variables still waiting for their batch.
    pub fn flush_unsaved(&self) {
        let mut state = self.lock();
        if let Err(error) = self.persist(&mut state, &[], &[]) {
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
        if let Err(error) = store.record_visits(&self.name, &visits) {
            tracing::warn!(%error, "cannot record variable visits");
        }
    }

    /// The state, caught up with changes committed by other processes.
    pub(super) fn synced(&self) -> Result<MutexGuard<'_, State>, Error> {
        let mut state = self.lock();
        let Some(store) = &self.store else {
            return Ok(state);
        };
        if store.sequence(&self.name)? == state.seen {
            return Ok(state);
        }
        // Lazy writes go out first: catching up may reload the whole workspace from the store.
        self.persist(&mut state, &[], &[])?;
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
        self.persist(&mut state, &[], &names_of(&evicted))?;
        events.extend(
            evicted
                .iter()
                .map(|name| (name.to_string(), VariableEvent::Removed)),
        );
        for (name, event) in events {
            self.announce(Arc::from(name.as_str()), event);
        }
        Ok(state)
    }

    pub(super) fn persist_write(
        &self,
        state: &mut State,
        name: &Arc<str>,
        outcome: &WriteOutcome,
    ) -> Result<(), Error> {
        self.persist(state, &[name.to_string()], &names_of(&outcome.evicted))
    }

    /// Commits what changed in memory, with the lazy writes still waiting; on failure, puts
    /// the stored rows of `written` and `removed` back in memory (lazy writes wait for the next
    /// commit).
    pub(super) fn persist(
        &self,
        state: &mut State,
        written: &[String],
        removed: &[String],
    ) -> Result<(), Error> {
        let Some(store) = &self.store else {
            return Ok(());
        };
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
        if batch.is_empty() {
            return Ok(());
        }
        match store.commit(&self.name, &batch) {
            Ok(commit) => {
                if commit.before == state.seen {
                    state.seen = commit.after;
                }
                state.unsaved.clear();
                Ok(())
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
            match store.variable(&self.name, name) {
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
