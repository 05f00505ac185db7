//! A workspace: the variables, and the `ask-once` approvals remembered for them, that sessions
//! share. Every mutation goes through here, so that it is made durable before it is
//! acknowledged and subscribers (the `var://` resources) hear about it.
//!
//! With a store, each mutation is applied in memory, committed as one transaction, and undone
//! in memory (from the stored rows) when the commit fails, so a failed write changes nothing.
//! Values that can be recomputed from files on disk (the cached results of the skill tools) are
//! the exception: they are usable at once in this process (`ReadVar`, `$VAR_REF`) and written
//! lazily, in batches, with the next durable commit, before catching up with another process,
//! and at the end. A crash loses at most one batch of them, which the next call recomputes.
//! Reads first catch up with changes other processes made (one cheap sequence read when there
//! are none). Reads also move `last_visited`; those visits are written in batches, not one
//! transaction per read, and at the end.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::json::nesting;
use crate::json::path::Path;
use crate::json::strings;
use crate::refs;
use crate::store::{self, Batch, Store, Visit};
use crate::vars::{
    self, Chunk, Clock, ListFilter, NewVariable, RemoveOutcome, Variable, VariablePatch,
    VariableSystem, WriteOutcome,
};

/// Visits waiting to be written before a batch goes out.
const VISIT_BATCH: usize = 512;

/// Lazily written variables (written or evicted) waiting before a batch goes out.
const UNSAVED_BATCH: usize = 64;

/// Why a workspace operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Variable(#[from] vars::Error),
    #[error(transparent)]
    Reference(#[from] refs::Error),
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("{0}")]
    Full(String),
}

/// A change that subscribers may care about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Variable {
        name: Arc<str>,
        event: VariableEvent,
    },
    /// The state document was written.
    State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariableEvent {
    Created,
    Updated,
    /// Removed, by a call, by eviction, or by another process.
    Removed,
}

struct State {
    system: VariableSystem,
    /// The store's change sequence this process has caught up with.
    seen: u64,
    /// Variables read since visits were last written.
    visited: HashSet<Arc<str>>,
    /// Names changed in memory but not yet in the store (lazy writes and what they evicted):
    /// written if the variable exists, removed otherwise.
    unsaved: HashSet<String>,
}

pub struct Workspace {
    name: String,
    state: Mutex<State>,
    approvals: Mutex<HashSet<String>>,
    /// The state document when there is no store (with one, it is read and written through).
    state_document: Mutex<Value>,
    store: Option<Arc<dyn Store>>,
    changes: broadcast::Sender<Change>,
    /// Most bytes the workspace may hold (variable values and the state's JSON text).
    max_bytes: Option<usize>,
    /// The state document's JSON text length when it was last read or written here.
    state_bytes: AtomicUsize,
}

impl Workspace {
    /// A workspace that lives in memory only.
    pub fn in_memory(name: impl Into<String>, capacity: usize, clock: Arc<dyn Clock>) -> Self {
        let (changes, _) = broadcast::channel(1024);
        Self {
            name: name.into(),
            state: Mutex::new(State {
                system: VariableSystem::new(capacity, clock),
                seen: 0,
                visited: HashSet::new(),
                unsaved: HashSet::new(),
            }),
            approvals: Mutex::default(),
            state_document: Mutex::new(Value::Object(serde_json::Map::new())),
            store: None,
            changes,
            max_bytes: None,
            state_bytes: AtomicUsize::new(2),
        }
    }

    /// Opens a durable workspace: loads what the store holds, then evicts (durably) whatever a
    /// smaller capacity no longer allows.
    pub fn open(
        name: impl Into<String>,
        capacity: usize,
        clock: Arc<dyn Clock>,
        store: Arc<dyn Store>,
    ) -> Result<Self, Error> {
        let mut workspace = Self::in_memory(name, capacity, clock);
        let loaded = store.load(&workspace.name)?;
        {
            let state = workspace
                .state
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            for variable in loaded.variables {
                state.system.restore(variable);
            }
            state.seen = loaded.sequence;
        }
        let state_bytes = json_length(&store.state(&workspace.name)?);
        workspace.state_bytes = AtomicUsize::new(state_bytes);
        workspace.store = Some(store);
        let mut state = workspace.lock();
        let evicted = state.system.evict();
        workspace.persist(&mut state, &[], &names_of(&evicted))?;
        drop(state);
        Ok(workspace)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the workspace is stored, if anywhere.
    pub fn store(&self) -> Option<&Arc<dyn Store>> {
        self.store.as_ref()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Creates or replaces a variable, durably.
    pub fn insert(&self, variable: NewVariable) -> Result<WriteOutcome, Error> {
        let mut outcomes = self.insert_all(vec![variable])?;
        Ok(outcomes.pop().unwrap_or_default())
    }

    /// Creates or replaces several variables in one durable commit (a tool's cached result and
    /// arguments).
    pub fn insert_all(&self, variables: Vec<NewVariable>) -> Result<Vec<WriteOutcome>, Error> {
        let mut state = self.synced()?;
        if self.max_bytes.is_some() {
            let system = &state.system;
            let before = system.bytes() + self.state_bytes.load(Ordering::Relaxed);
            let mut after = before;
            for variable in &variables {
                let replaced = system.peek(&variable.name).map_or(0, |old| old.value.len());
                after = (after + variable.value.len()).saturating_sub(replaced);
            }
            self.check_bytes(before, after).map_err(Error::Full)?;
        }
        let mut written = Vec::with_capacity(variables.len());
        let mut outcomes = Vec::with_capacity(variables.len());
        for variable in variables {
            written.push(Arc::<str>::from(variable.name.as_str()));
            outcomes.push(state.system.insert(variable));
        }
        let removed: Vec<Arc<str>> = outcomes
            .iter()
            .flat_map(|outcome| outcome.evicted.iter().cloned())
            .collect();
        self.persist(&mut state, &names_of(&written), &names_of(&removed))?;
        drop(state);
        for (name, outcome) in written.into_iter().zip(&outcomes) {
            self.announce_write(name, outcome);
        }
        Ok(outcomes)
    }

    /// Creates or replaces variables that can be recomputed from files on disk (a skill tool's
    /// cached result and arguments): in memory at once, in the store lazily, in a batch. Nothing
    /// is lost but the cache when the process dies before the batch goes out.
    pub fn insert_all_lazily(
        &self,
        variables: Vec<NewVariable>,
    ) -> Result<Vec<WriteOutcome>, Error> {
        if self.store.is_none() {
            return self.insert_all(variables);
        }
        let mut state = self.synced()?;
        let mut written = Vec::with_capacity(variables.len());
        let mut outcomes = Vec::with_capacity(variables.len());
        for variable in variables {
            written.push(Arc::<str>::from(variable.name.as_str()));
            let outcome = state.system.insert(variable);
            state
                .unsaved
                .extend(outcome.evicted.iter().map(ToString::to_string));
            outcomes.push(outcome);
        }
        state.unsaved.extend(names_of(&written));
        if state.unsaved.len() >= UNSAVED_BATCH {
            self.persist(&mut state, &[], &[])?;
        }
        drop(state);
        for (name, outcome) in written.into_iter().zip(&outcomes) {
            self.announce_write(name, outcome);
        }
        Ok(outcomes)
    }

    /// Changes fields of an existing variable, durably.
    pub fn update(&self, name: &str, patch: VariablePatch) -> Result<WriteOutcome, Error> {
        let mut state = self.synced()?;
        if let Some((value, _)) = &patch.value
            && self.max_bytes.is_some()
        {
            let replaced = state.system.peek(name).map_or(0, |old| old.value.len());
            let before = state.system.bytes() + self.state_bytes.load(Ordering::Relaxed);
            let after = (before + value.len()).saturating_sub(replaced);
            self.check_bytes(before, after).map_err(Error::Full)?;
        }
        let outcome = state.system.update(name, patch)?;
        let name: Arc<str> = Arc::from(name);
        self.persist_write(&mut state, &name, &outcome)?;
        drop(state);
        self.announce_write(name, &outcome);
        Ok(outcome)
    }

    /// Removes variables (never rules), durably.
    pub fn remove(&self, names: &[String]) -> Result<RemoveOutcome, Error> {
        let mut state = self.synced()?;
        let outcome = state.system.remove(names);
        self.persist(&mut state, &[], &outcome.removed)?;
        drop(state);
        for name in &outcome.removed {
            self.announce(Arc::from(name.as_str()), VariableEvent::Removed);
        }
        Ok(outcome)
    }

    /// A copy of the variable, counted as a visit.
    pub fn get(&self, name: &str) -> Result<Option<Variable>, Error> {
        let mut state = self.synced()?;
        let found = state.system.get(name).cloned();
        if let Some(variable) = &found {
            self.visited(&mut state, &variable.name);
        }
        Ok(found)
    }

    /// A copy of the variable as this process last saw it, not counted as a visit.
    pub fn peek(&self, name: &str) -> Option<Variable> {
        self.lock().system.peek(name).cloned()
    }

    pub fn read_chunk(
        &self,
        name: &str,
        start: usize,
        length: Option<usize>,
    ) -> Result<Chunk, Error> {
        let mut state = self.synced()?;
        let chunk = state.system.read_chunk(name, start, length)?;
        if let Some(shared) = state
            .system
            .peek(name)
            .map(|variable| Arc::clone(&variable.name))
        {
            self.visited(&mut state, &shared);
        }
        Ok(chunk)
    }

    pub fn list(&self, filter: &ListFilter) -> Result<Vec<Variable>, Error> {
        let state = self.synced()?;
        Ok(state.system.list(filter).into_iter().cloned().collect())
    }

    /// Resolves every `$VAR_REF{{…}}` in a tool's arguments, in place, paying from `budget`
    /// (one per call; a plan's steps share theirs).
    pub fn resolve_references(
        &self,
        arguments: &mut Value,
        budget: &refs::Budget,
    ) -> Result<(), Error> {
        if !contains_reference(arguments) {
            return Ok(());
        }
        let mut state = self.synced()?;
        // Each variable is recorded once, however many times it is expanded.
        let mut used: HashSet<Arc<str>> = HashSet::new();
        let resolved = {
            let system = &mut state.system;
            let mut lookup = |name: &str| {
                let found = system.resolve_reference(name);
                if found.is_some() && !used.contains(name) {
                    used.insert(Arc::<str>::from(name));
                }
                found
            };
            refs::resolve_value_within(arguments, &mut lookup, budget)
        };
        for name in &used {
            self.visited(&mut state, name);
        }
        Ok(resolved?)
    }

    /// Runs `f` with the variable system, after catching up with other processes.
    pub fn with_variables<T>(&self, f: impl FnOnce(&VariableSystem) -> T) -> Result<T, Error> {
        let state = self.synced()?;
        Ok(f(&state.system))
    }

    pub fn is_approved(&self, key: &str) -> bool {
        if self.approvals().contains(key) {
            return true;
        }
        let Some(store) = &self.store else {
            return false;
        };
        match store.is_approved(&self.name, key) {
            Ok(approved) => approved,
            Err(error) => {
                tracing::warn!(%error, "cannot read remembered approvals; asking again");
                false
            }
        }
    }

    pub fn remember_approval(&self, key: String) {
        if let Some(store) = &self.store
            && let Err(error) = store.remember_approval(&self.name, &key)
        {
            tracing::warn!(%error, "cannot store an approval; it holds until the server stops");
        }
        self.approvals().insert(key);
    }

    /// The plans' state document.
    pub fn state(&self) -> Result<Value, Error> {
        match &self.store {
            Some(store) => Ok(store.state(&self.name)?),
            None => Ok(self
                .state_document
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()),
        }
    }

    /// The state document's value at a path, if any (without copying the rest of it when the
    /// state lives in memory).
    pub fn state_at(&self, path: &Path) -> Result<Option<Value>, Error> {
        if self.store.is_some() {
            return Ok(path.get(&self.state()?).cloned());
        }
        let document = self
            .state_document
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(path.get(&document).cloned())
    }

    /// Writes a value into the state document at a path, atomically: a refused write (a
    /// scalar in the way, a gap in an array, a value nesting too deep, past the byte cap)
    /// changes nothing and comes back as the inner `Err`.
    pub fn write_state(&self, path: &Path, value: &Value) -> Result<Result<(), String>, Error> {
        if let Err(too_deep) = nesting::check(value, path.segments().len()) {
            return Ok(Err(format!(
                "cannot write `{path}`: the value written there {too_deep}"
            )));
        }
        let variable_bytes = self.lock().system.bytes();
        let mut state_bytes = 0;
        let mut set = |document: &mut Value| {
            let current = json_length(document);
            let replaced = path.get(document).map_or(0, json_length);
            let projected =
                (current + json_length(value) + path.to_string().len()).saturating_sub(replaced);
            self.check_bytes(variable_bytes + current, variable_bytes + projected)?;
            path.set(document, value.clone())
                .map_err(|error| error.to_string())?;
            state_bytes = projected;
            Ok(())
        };
        let outcome = if let Some(store) = &self.store {
            store.update_state(&self.name, &mut set)?.map(drop)
        } else {
            // A refused `Path::set` leaves the document as it was, so no copy is needed.
            set(&mut self
                .state_document
                .lock()
                .unwrap_or_else(PoisonError::into_inner))
        };
        if outcome.is_ok() {
            self.state_bytes.store(state_bytes, Ordering::Relaxed);
            if self.changes.receiver_count() > 0 {
                self.changes.send(Change::State).ok();
            }
        }
        Ok(outcome)
    }

    /// Caps the workspace's bytes (variable values and the state document's JSON text).
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: Option<u64>) -> Self {
        self.max_bytes = max_bytes.map(|bytes| usize::try_from(bytes).unwrap_or(usize::MAX));
        self
    }

    /// Refuses a write that grows the workspace past its cap, with a message saying what to do.
    /// A write that does not grow it passes even over the cap (a cap lowered below what is
    /// stored), so the workspace can always be trimmed and rewritten.
    fn check_bytes(&self, before: usize, after: usize) -> Result<(), String> {
        match self.max_bytes {
            Some(cap) if after > cap && after > before => Err(format!(
                "workspace `{}` would hold {after} bytes, over its cap of {cap} bytes; remove variables with RemoveVars (or state with WriteState), or raise workspace_max_bytes in the config file (--workspace-max-bytes)",
                self.name
            )),
            _ => Ok(()),
        }
    }

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

    fn visited(&self, state: &mut State, name: &Arc<str>) {
        if self.store.is_none() {
            return;
        }
        state.visited.insert(Arc::clone(name));
        if state.visited.len() >= VISIT_BATCH {
            self.write_visits(state);
        }
    }

    fn write_visits(&self, state: &mut State) {
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
    fn synced(&self) -> Result<MutexGuard<'_, State>, Error> {
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

    fn persist_write(
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
    fn persist(
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
    fn undo<'a>(&self, state: &mut State, names: impl Iterator<Item = &'a String>) {
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

    fn announce_write(&self, name: Arc<str>, outcome: &WriteOutcome) {
        let event = if outcome.created {
            VariableEvent::Created
        } else {
            VariableEvent::Updated
        };
        self.announce(name, event);
        for evicted in &outcome.evicted {
            self.announce(Arc::clone(evicted), VariableEvent::Removed);
        }
    }

    fn announce(&self, name: Arc<str>, event: VariableEvent) {
        // Sending fails only when nobody listens, which is normal.
        if self.changes.receiver_count() > 0 {
            self.changes.send(Change::Variable { name, event }).ok();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn approvals(&self) -> MutexGuard<'_, HashSet<String>> {
        self.approvals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        self.flush_unsaved();
        self.flush_visits();
    }
}

fn names_of(names: &[Arc<str>]) -> Vec<String> {
    names.iter().map(ToString::to_string).collect()
}

/// The length of a value's compact JSON text, counted without building it.
fn json_length(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => 0,
    }
}

/// Whether any string in the arguments could hold a `$VAR_REF` (so plain calls skip the lock).
fn contains_reference(value: &Value) -> bool {
    strings::iter(value).any(refs::contains_reference)
}

/// Whether any string in the arguments could hold a `$VAR_REF` or a `†` reference.
pub fn contains_any_reference(value: &Value) -> bool {
    strings::iter(value)
        .any(|text| refs::contains_reference(text) || refs::dagger::contains_reference(text))
}
