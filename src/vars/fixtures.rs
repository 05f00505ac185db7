//! Helpers shared by the unit tests of the variable system and its eviction: stores on a
//! manual or frozen clock, writes of throwaway variables, and a check that the eviction order
//! is in step with the variables.

use std::sync::Arc;

use pretty_assertions::assert_eq;

use super::eviction::EvictionOrder;
use super::{
    Clock, ManualClock, NewVariable, Timestamp, VarType, Variable, VariableSystem, WriteOutcome,
};

/// A clock frozen at one instant, so every event ties on every timestamp.
pub(super) struct FixedClock(pub(super) Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
}

pub(super) fn store(capacity: usize) -> VariableSystem {
    VariableSystem::new(capacity, Arc::new(ManualClock::new(1)))
}

pub(super) fn insert_text(store: &mut VariableSystem, name: &str) -> WriteOutcome {
    store.insert(NewVariable::text(
        name,
        format!("value of {name}"),
        VarType::LlmAdd,
    ))
}

pub(super) fn kept(name: &str) -> NewVariable {
    NewVariable {
        keep: true,
        ..NewVariable::text(name, "kept", VarType::UserAdd)
    }
}

pub(super) fn names(variables: &[&Variable]) -> Vec<String> {
    variables
        .iter()
        .map(|variable| variable.name.to_string())
        .collect()
}

pub(super) fn arcs(names: &[&str]) -> Vec<Arc<str>> {
    names.iter().map(|name| Arc::from(*name)).collect()
}

pub(super) fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

pub(super) fn sorted_names(store: &VariableSystem) -> Vec<String> {
    let mut all: Vec<String> = store
        .iter()
        .map(|variable| variable.name.to_string())
        .collect();
    all.sort();
    all
}

/// The eviction order must hold exactly the non-keep variables, each under its current key.
pub(super) fn assert_index_consistent(store: &VariableSystem) {
    assert_eq!(store.eviction, EvictionOrder::of(store.iter()));
}
