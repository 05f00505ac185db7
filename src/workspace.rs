//! A workspace: the variables, the state document (`state_document.rs`) and the `ask-once`
//! approvals that sessions share. Every mutation goes through here, so that it is made durable
//! before it is acknowledged and subscribers (the `var://` and `state://` resources) hear of it.
//!
//! With a store, each mutation is applied in memory, committed as one transaction, and undone
//! in memory (from the stored rows) when the commit fails, so a failed write changes nothing.
//! On a database server it is decided in memory, rolled back there, committed without holding
//! the workspace, then put back: requests served meanwhile never see it before it is durable.
//! Values that can be recomputed from files on disk (the cached results of the skill tools) are
//! the exception: they are usable at once in this process (`ReadVar`, `$VAR_REF`) and written
//! lazily, in batches, with the next durable commit, before catching up with another process,
//! and at the end. A crash loses at most one batch of them, which the next call recomputes.
//! Reads first catch up with changes other processes made (one cheap sequence read when there
//! are none). Reads also move `last_visited`; those visits are written in batches, not one
//! transaction per read, and at the end. `durability.rs` holds that bookkeeping: catching up,
//! committing, undoing, and the batches; `own_writes.rs` a writer's own writes (`WriteVar`,
//! `AppWriteVar`).

mod durability;
mod fence;
mod own_writes;
mod state_document;
pub mod switches;
mod windows;

use durability::Applied;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::json::compact_length;
pub use fence::PendingFence;
pub use own_writes::{Author, OwnWrite, RuleRefused, Written};
pub use switches::{Switches, Target};

use crate::json::strings;
use crate::refs;
use crate::store::{self, Store};
use crate::vars::{
    self, Chunk, Clock, ListFilter, NewVariable, RemoveOutcome, ValueKind, Variable, VariablePatch,
    VariableSystem, WriteOutcome,
};

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
    /// A write that may displace nothing ([`Room::Free`]) found no free room.
    #[error("{0}")]
    NoRoom(String),
}

/// What a write may displace to make room for itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// Whatever eviction chooses, and a variable of the same name is replaced.
    Evicting,
    /// Nothing: the write is refused when one of its names is taken or the workspace is at its
    /// capacity (a read-only principal's cached result, which must not displace what a writing
    /// principal stored).
    Free,
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
    /// The tool groups and tools switched at runtime, for this workspace.
    switches: Switches,
    /// The store is a database server: its round trips are made with the runtime's worker
    /// handed on, and requests wait for them without blocking a thread (`fence.rs`).
    remote: bool,
    /// Round trips made holding the workspace, in flight (`fence.rs`).
    busy: AtomicUsize,
    /// Told when the last of them ends.
    settled: tokio::sync::Notify,
    /// Held by the writer whose commit is in flight, on a database server (`durability.rs`).
    committing: Mutex<()>,
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
            switches: Switches::default(),
            remote: false,
            busy: AtomicUsize::new(0),
            settled: tokio::sync::Notify::new(),
            committing: Mutex::new(()),
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
        let state_bytes = compact_length(&store.state(&workspace.name)?);
        workspace.state_bytes = AtomicUsize::new(state_bytes);
        workspace.switches = Switches::restored(store.tool_switches(&workspace.name)?);
        workspace.remote = store.round_trips();
        workspace.store = Some(store);
        let mut state = workspace.lock();
        let evicted = state.system.evict();
        // When another process wrote meanwhile, the next read catches up and evicts then.
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
        self.insert_all_within(variables, Room::Evicting)
    }

    /// As [`Workspace::insert_all`], displacing only what `room` allows.
    pub fn insert_all_within(
        &self,
        variables: Vec<NewVariable>,
        room: Room,
    ) -> Result<Vec<WriteOutcome>, Error> {
        let names: Vec<Arc<str>> = variables
            .iter()
            .map(|variable| Arc::<str>::from(variable.name.as_str()))
            .collect();
        let written = names_of(&names);
        // A copy per attempt: another process committing first undoes the attempt.
        let outcomes = self.commit_with(move |state| {
            if room == Room::Free {
                free_room(&state.system, &variables)?;
            }
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
            let outcomes: Vec<WriteOutcome> = variables
                .iter()
                .map(|variable| state.system.insert(variable.clone()))
                .collect();
            let removed: Vec<Arc<str>> = outcomes
                .iter()
                .flat_map(|outcome| outcome.evicted.iter().cloned())
                .collect();
            Ok(Applied {
                outcome: outcomes,
                written: written.clone(),
                removed: names_of(&removed),
            })
        })?;
        for (name, outcome) in names.into_iter().zip(&outcomes) {
            self.announce_write(name, outcome);
        }
        Ok(outcomes)
    }

    /// Creates or replaces variables that can be recomputed from files on disk (a skill tool's
    /// cached result and arguments): in memory at once, in the store lazily, in a batch. Nothing
    /// is lost but the cache when the process dies before the batch goes out.
    /// `room` says what they may displace.
    pub fn insert_all_lazily(
        &self,
        variables: Vec<NewVariable>,
        room: Room,
    ) -> Result<Vec<WriteOutcome>, Error> {
        if self.store.is_none() {
            return self.insert_all_within(variables, room);
        }
        let mut state = self.synced()?;
        if room == Room::Free {
            free_room(&state.system, &variables)?;
        }
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
            self.persist_lazy(&mut state)?;
        }
        drop(state);
        for (name, outcome) in written.into_iter().zip(&outcomes) {
            self.announce_write(name, outcome);
        }
        Ok(outcomes)
    }

    /// Changes fields of an existing variable, durably.
    pub fn update(&self, name: &str, patch: VariablePatch) -> Result<WriteOutcome, Error> {
        let outcome = self.commit_with(move |state| {
            if let Some((value, _)) = &patch.value
                && self.max_bytes.is_some()
            {
                let replaced = state.system.peek(name).map_or(0, |old| old.value.len());
                let before = state.system.bytes() + self.state_bytes.load(Ordering::Relaxed);
                let after = (before + value.len()).saturating_sub(replaced);
                self.check_bytes(before, after).map_err(Error::Full)?;
            }
            let outcome = state.system.update(name, patch.clone())?;
            let removed = names_of(&outcome.evicted);
            Ok(Applied {
                outcome,
                written: vec![name.to_owned()],
                removed,
            })
        })?;
        self.announce_write(Arc::from(name), &outcome);
        Ok(outcome)
    }

    /// Removes variables (never rules), durably.
    pub fn remove(&self, names: &[String]) -> Result<RemoveOutcome, Error> {
        self.remove_of(names, false)
    }

    /// Removes rule variables (and any others named), durably: the server withdrawing a
    /// group's rules.
    pub fn remove_rules(&self, names: &[String]) -> Result<RemoveOutcome, Error> {
        self.remove_of(names, true)
    }

    fn remove_of(&self, names: &[String], rules: bool) -> Result<RemoveOutcome, Error> {
        let outcome = self.commit_with(|state| {
            let outcome = if rules {
                state.system.remove_with_rules(names)
            } else {
                state.system.remove(names)
            };
            let removed = outcome.removed.clone();
            Ok(Applied {
                outcome,
                written: Vec::new(),
                removed,
            })
        })?;
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

    /// Whether a variable of that name exists, as this process last saw it (no copy, no visit).
    pub fn holds(&self, name: &str) -> bool {
        self.lock().system.peek(name).is_some()
    }

    /// Characters `start` on of a variable's value (`length` of them, or to the end), and
    /// whether the whole value is JSON text (written as a non-string value); a read counts as a
    /// visit.
    pub fn read_chunk(
        &self,
        name: &str,
        start: usize,
        length: Option<usize>,
    ) -> Result<(Chunk, ValueKind), Error> {
        let mut state = self.synced()?;
        let chunk = state.system.read_chunk(name, start, length)?;
        let mut kind = ValueKind::Text;
        if let Some((shared, its_kind)) =
            (state.system.peek(name)).map(|variable| (Arc::clone(&variable.name), variable.kind))
        {
            kind = its_kind;
            self.visited(&mut state, &shared);
        }
        Ok((chunk, kind))
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

    /// The tool groups and tools switched at runtime in this workspace.
    pub fn switches(&self) -> &Switches {
        &self.switches
    }

    /// Switches a group or a tool on or off in this workspace, durably; the caller announces it
    /// ([`Switches::announce`]) when that changed what is enabled.
    pub fn set_tool_switch(&self, target: Target, enabled: bool) -> Result<(), Error> {
        if let Some(store) = &self.store {
            store.set_tool_switch(&self.name, &target.to_string(), enabled)?;
        }
        self.switches.set(target, enabled);
        Ok(())
    }

    /// Reads the switches again after another process changed them; subscribers hear of it
    /// when a switch here changed.
    pub fn switches_changed_elsewhere(&self) -> Result<(), Error> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        if self.switches.merge(store.tool_switches(&self.name)?) {
            self.switches.announce();
        }
        Ok(())
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

/// Refuses a [`Room::Free`] write that would replace a variable or evict one.
fn free_room(system: &VariableSystem, variables: &[NewVariable]) -> Result<(), Error> {
    if let Some(taken) = variables
        .iter()
        .find(|variable| system.peek(&variable.name).is_some())
    {
        return Err(Error::NoRoom(format!(
            "a variable named `{}` exists and is not replaced",
            taken.name
        )));
    }
    if system.len() + variables.len() > system.capacity() {
        return Err(Error::NoRoom(format!(
            "the workspace holds {} variables of its capacity of {}, and a read-only \
             principal's result displaces nothing a writing principal stored",
            system.len(),
            system.capacity()
        )));
    }
    Ok(())
}

fn names_of(names: &[Arc<str>]) -> Vec<String> {
    names.iter().map(ToString::to_string).collect()
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
