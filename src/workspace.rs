//! A workspace: the variables, and the `ask-once` approvals remembered for them, that one or more
//! sessions share. Every mutation goes through here so that subscribers (the `var://` resources)
//! hear about it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::refs;
use crate::vars::{
    self, Chunk, Clock, ListFilter, NewVariable, RemoveOutcome, Variable, VariablePatch,
    VariableSystem, WriteOutcome,
};

/// A change that subscribers may care about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Variable {
        name: Arc<str>,
        event: VariableEvent,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariableEvent {
    Created,
    Updated,
    /// Removed, by a call or by eviction.
    Removed,
}

pub struct Workspace {
    name: String,
    variables: Mutex<VariableSystem>,
    approvals: Mutex<HashSet<String>>,
    changes: broadcast::Sender<Change>,
}

impl Workspace {
    pub fn new(name: impl Into<String>, capacity: usize, clock: Arc<dyn Clock>) -> Self {
        let (changes, _) = broadcast::channel(1024);
        Self {
            name: name.into(),
            variables: Mutex::new(VariableSystem::new(capacity, clock)),
            approvals: Mutex::default(),
            changes,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Creates or replaces a variable.
    pub fn insert(&self, variable: NewVariable) -> WriteOutcome {
        let name: Arc<str> = Arc::from(variable.name.as_str());
        let outcome = self.variables().insert(variable);
        self.announce_write(name, &outcome);
        outcome
    }

    pub fn update(&self, name: &str, patch: VariablePatch) -> Result<WriteOutcome, vars::Error> {
        let outcome = self.variables().update(name, patch)?;
        self.announce_write(Arc::from(name), &outcome);
        Ok(outcome)
    }

    pub fn remove(&self, names: &[String]) -> RemoveOutcome {
        let outcome = self.variables().remove(names);
        for name in &outcome.removed {
            self.announce(Arc::from(name.as_str()), VariableEvent::Removed);
        }
        outcome
    }

    /// A copy of the variable, counted as a visit.
    pub fn get(&self, name: &str) -> Option<Variable> {
        self.variables().get(name).cloned()
    }

    /// A copy of the variable, not counted as a visit.
    pub fn peek(&self, name: &str) -> Option<Variable> {
        self.variables().peek(name).cloned()
    }

    pub fn read_chunk(
        &self,
        name: &str,
        start: usize,
        length: Option<usize>,
    ) -> Result<Chunk, vars::Error> {
        self.variables().read_chunk(name, start, length)
    }

    pub fn list(&self, filter: &ListFilter) -> Vec<Variable> {
        self.variables().list(filter).into_iter().cloned().collect()
    }

    /// Resolves every `$VAR_REF{{…}}` in a tool's arguments, in place.
    pub fn resolve_references(&self, arguments: &mut Value) -> Result<(), refs::Error> {
        let mut variables = self.variables();
        let mut lookup = |name: &str| variables.resolve_reference(name);
        refs::resolve_value(arguments, &mut lookup)
    }

    /// Runs `f` with the variable system locked; for callers that need several steps at once.
    pub fn with_variables<T>(&self, f: impl FnOnce(&mut VariableSystem) -> T) -> T {
        f(&mut self.variables())
    }

    pub fn is_approved(&self, key: &str) -> bool {
        self.approvals().contains(key)
    }

    pub fn remember_approval(&self, key: String) {
        self.approvals().insert(key);
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

    fn variables(&self) -> MutexGuard<'_, VariableSystem> {
        self.variables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn approvals(&self) -> MutexGuard<'_, HashSet<String>> {
        self.approvals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
