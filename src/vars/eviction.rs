//! Eviction: which variables leave the [`VariableSystem`] when a write takes it over capacity.
//!
//! When a write leaves the store holding more than [`VariableSystem::capacity`] variables,
//! cached values go first ([`VarType::is_cache`](super::VarType::is_cache): tool results and
//! arguments the executor stored on its own, cached messages), whatever their times, so that a
//! burst of tool calls never evicts what the model or the user wrote. Within each class the
//! least recently used go first: oldest `last_visited`, ties broken by `updated`, then
//! `created`, then name. Variables marked `keep` are never evicted, so a store holding only such
//! variables may exceed its capacity. A variable is never evicted by its own write.
//!
//! Eviction must stay cheap at large capacities, so the store keeps an ordered index of the
//! evictable (non-`keep`) variables beside the name map (`EvictionOrder`). Every touch
//! re-keys the variable in that index, and eviction pops its first entry: no sort and no scan
//! per write.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{Timestamp, Variable, VariableSystem};

/// The position of an evictable variable in the eviction order: oldest first.
///
/// Field order matters: the derived `Ord` compares the class (caches first), then
/// `last_visited`, then `updated`, then `created`, then `name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct EvictionKey {
    /// `false` for a cache, which sorts before `true`: what the model or the user wrote.
    written_on_purpose: bool,
    last_visited: Timestamp,
    updated: Timestamp,
    created: Timestamp,
    name: Arc<str>,
}

impl EvictionKey {
    fn of(variable: &Variable) -> Self {
        Self {
            written_on_purpose: !variable.var_type.is_cache(),
            last_visited: variable.last_visited,
            updated: variable.updated,
            created: variable.created,
            name: Arc::clone(&variable.name),
        }
    }
}

/// The evictable (non-`keep`) variables of a store in eviction order, kept in step with its
/// name map: every variable enters when it is stored and leaves when it is removed.
#[derive(Debug, Default, PartialEq)]
pub(super) struct EvictionOrder(BTreeSet<EvictionKey>);

impl EvictionOrder {
    /// Adds a variable just stored, unless it is kept.
    pub(super) fn enter(&mut self, variable: &Variable) {
        if !variable.keep {
            self.0.insert(EvictionKey::of(variable));
        }
    }

    /// Removes a variable about to be removed or changed.
    pub(super) fn leave(&mut self, variable: &Variable) {
        if !variable.keep {
            self.0.remove(&EvictionKey::of(variable));
        }
    }

    /// Applies `change` to a variable while keeping its entry current: the old key leaves, and
    /// the new key enters if the variable is still evictable.
    pub(super) fn reindexed(
        &mut self,
        variable: &mut Variable,
        change: impl FnOnce(&mut Variable),
    ) {
        self.leave(variable);
        change(variable);
        self.enter(variable);
    }

    /// The order a store holding `variables` must have, to check one kept in step.
    #[cfg(test)]
    pub(super) fn of<'a>(variables: impl Iterator<Item = &'a Variable>) -> Self {
        let mut order = Self::default();
        variables.for_each(|variable| order.enter(variable));
        order
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl VariableSystem {
    /// Evicts the oldest evictable variables, other than `protected`, until the store fits its
    /// capacity or nothing evictable remains. Returns the evicted names, oldest first.
    ///
    /// `protected` is the variable's own name `Arc`: index keys share it, so identity suffices.
    pub(super) fn evict_over_capacity(&mut self, protected: Option<&Arc<str>>) -> Vec<Arc<str>> {
        let mut evicted = Vec::new();
        let mut spared = None;
        while self.variables.len() > self.capacity {
            let Some(oldest) = self.eviction.0.pop_first() else {
                break;
            };
            if protected.is_some_and(|protected| Arc::ptr_eq(protected, &oldest.name)) {
                spared = Some(oldest);
                continue;
            }
            self.journal(&oldest.name);
            if let Some(variable) = self.variables.remove(&oldest.name) {
                self.bytes = self.bytes.saturating_sub(variable.value.len());
            }
            evicted.push(oldest.name);
        }
        if let Some(spared) = spared {
            self.eviction.0.insert(spared);
        }
        evicted
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pretty_assertions::assert_eq;

    use super::super::fixtures::{
        FixedClock, arcs, assert_index_consistent, insert_text, kept, sorted_names, store, strings,
    };
    use super::super::{
        NewVariable, Timestamp, VarType, VariablePatch, VariableSystem, WriteOutcome,
    };

    #[test]
    fn reading_a_variable_saves_it_and_the_least_recently_used_is_evicted() {
        let mut store = store(3);
        for name in ["a", "b", "c"] {
            insert_text(&mut store, name);
        }
        store.get("a");

        let outcome = insert_text(&mut store, "d");

        assert_eq!(
            outcome,
            WriteOutcome {
                created: true,
                evicted: arcs(&["b"])
            }
        );
        assert_eq!(sorted_names(&store), strings(&["a", "c", "d"]));
        assert_index_consistent(&store);
    }

    #[test]
    fn chunk_reads_and_references_also_count_as_visits_for_eviction() {
        let mut store = store(3);
        for name in ["a", "b", "c"] {
            insert_text(&mut store, name);
        }
        store.read_chunk("a", 0, Some(1)).ok();
        store.resolve_reference("b");

        assert_eq!(insert_text(&mut store, "d").evicted, arcs(&["c"]));
    }

    #[test]
    fn cached_values_are_evicted_before_what_the_model_or_user_wrote_whatever_their_times() {
        let mut store = store(3);
        store.insert(NewVariable::text("mine", "user", VarType::UserAdd));
        store.insert(NewVariable::text("noted", "model", VarType::LlmAdd));
        let cached = |name: &str, var_type| NewVariable::text(name, "cached", var_type);
        store.insert(cached("Tool_1_result", VarType::ToolCallResult));
        store.get("Tool_1_result");

        let first = store.insert(cached("Tool_1_args", VarType::ToolCallArgs));
        let second = store.insert(cached("Chat_message", VarType::MessageCache));
        store.get("Chat_message");
        let third = store.insert(NewVariable::text("later", "model", VarType::LlmAdd));

        assert_eq!(first.evicted, arcs(&["Tool_1_result"]));
        assert_eq!(second.evicted, arcs(&["Tool_1_args"]));
        assert_eq!(third.evicted, arcs(&["Chat_message"]));
        assert_eq!(sorted_names(&store), strings(&["later", "mine", "noted"]));
        assert_index_consistent(&store);
    }

    #[test]
    fn a_variable_changing_type_changes_class() {
        let mut store = store(2);
        store.insert(NewVariable::text("a", "x", VarType::ToolCallResult));
        store.insert(NewVariable::text("b", "x", VarType::LlmAdd));
        store
            .update(
                "a",
                VariablePatch {
                    var_type: Some(VarType::UserAdd),
                    ..VariablePatch::default()
                },
            )
            .unwrap();
        store.get("b");
        store.get("a");

        let outcome = store.insert(NewVariable::text("c", "x", VarType::ToolCallArgs));

        assert_eq!(outcome.evicted, arcs(&["b"]));
        assert_index_consistent(&store);
    }

    #[test]
    fn keep_variables_are_never_evicted_even_when_oldest() {
        let mut store = store(2);
        store.insert(kept("pinned"));
        insert_text(&mut store, "a");

        let outcome = insert_text(&mut store, "b");

        assert_eq!(outcome.evicted, arcs(&["a"]));
        assert_eq!(sorted_names(&store), strings(&["b", "pinned"]));
        assert_index_consistent(&store);
    }

    #[test]
    fn shrinking_the_capacity_evicts_the_oldest_first() {
        let mut store = store(5);
        for name in ["a", "b", "c", "d", "e"] {
            insert_text(&mut store, name);
        }
        store.get("a");

        let evicted = store.set_capacity(2);

        assert_eq!(evicted, arcs(&["b", "c", "d"]));
        assert_eq!(store.capacity(), 2);
        assert_eq!(sorted_names(&store), strings(&["a", "e"]));
        assert_index_consistent(&store);
    }

    #[test]
    fn a_store_of_only_kept_variables_may_exceed_its_capacity() {
        let mut store = store(2);
        for name in ["a", "b", "c"] {
            assert_eq!(store.insert(kept(name)).evicted, Vec::<Arc<str>>::new());
        }

        assert_eq!(store.set_capacity(1), Vec::<Arc<str>>::new());
        assert_eq!(store.len(), 3);
        assert_eq!(insert_text(&mut store, "d").evicted, Vec::<Arc<str>>::new());
        assert_eq!(store.len(), 4);
        assert_index_consistent(&store);
    }

    #[test]
    fn equal_timestamps_evict_in_name_order() {
        let mut store = VariableSystem::new(3, Arc::new(FixedClock(Timestamp(7))));
        for name in ["c", "b", "a"] {
            insert_text(&mut store, name);
        }

        let evicted = store.set_capacity(1);

        assert_eq!(evicted, arcs(&["a", "b"]));
        assert_eq!(sorted_names(&store), strings(&["c"]));
    }

    #[test]
    fn a_write_never_evicts_the_variable_it_wrote() {
        let mut store = VariableSystem::new(1, Arc::new(FixedClock(Timestamp(7))));
        insert_text(&mut store, "b");

        let outcome = insert_text(&mut store, "a");

        assert_eq!(
            outcome,
            WriteOutcome {
                created: true,
                evicted: arcs(&["b"])
            }
        );
        assert_eq!(sorted_names(&store), strings(&["a"]));
        assert_index_consistent(&store);
    }

    #[test]
    fn capacity_zero_keeps_only_the_latest_write() {
        let mut store = store(0);
        insert_text(&mut store, "a");

        assert_eq!(insert_text(&mut store, "b").evicted, arcs(&["a"]));
        assert_eq!(sorted_names(&store), strings(&["b"]));
        assert_eq!(store.set_capacity(0), arcs(&["b"]));
        assert!(store.is_empty());
    }

    #[test]
    fn toggling_keep_moves_a_variable_out_of_and_back_into_eviction() {
        let mut store = store(2);
        insert_text(&mut store, "a");
        insert_text(&mut store, "b");
        let pin = VariablePatch {
            keep: Some(true),
            ..VariablePatch::default()
        };
        store.update("a", pin).ok();
        assert_index_consistent(&store);

        assert_eq!(insert_text(&mut store, "c").evicted, arcs(&["b"]));
        assert_eq!(store.set_capacity(1), arcs(&["c"]));
        assert_eq!(insert_text(&mut store, "d").evicted, Vec::<Arc<str>>::new());

        let unpin = VariablePatch {
            keep: Some(false),
            ..VariablePatch::default()
        };
        assert_eq!(
            store.update("a", unpin).map(|outcome| outcome.evicted),
            Ok(arcs(&["d"]))
        );
        assert_index_consistent(&store);
        assert_eq!(insert_text(&mut store, "e").evicted, arcs(&["a"]));
        assert_eq!(sorted_names(&store), strings(&["e"]));
    }

    #[test]
    fn removed_variables_leave_the_eviction_order() {
        let mut store = store(3);
        for name in ["a", "b", "c"] {
            insert_text(&mut store, name);
        }
        store.insert(kept("pinned"));
        store.remove(&strings(&["a", "b", "pinned"]));
        assert_index_consistent(&store);

        assert_eq!(insert_text(&mut store, "d").evicted, Vec::<Arc<str>>::new());
        assert_eq!(insert_text(&mut store, "e").evicted, Vec::<Arc<str>>::new());
        assert_eq!(insert_text(&mut store, "f").evicted, arcs(&["c"]));
        assert_eq!(sorted_names(&store), strings(&["d", "e", "f"]));
    }

    /// A deterministic linear congruential generator, enough to shuffle operations.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, bound: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % bound
        }
    }

    fn random_step(store: &mut VariableSystem, random: &mut Lcg) {
        let name = format!("v{}", random.below(120));
        match random.below(10) {
            0..=3 => {
                insert_text(store, &name);
            }
            4 => {
                store.insert(kept(&name));
            }
            5 => {
                store.get(&name);
            }
            6 => {
                store.read_chunk(&name, 1, Some(3)).ok();
            }
            7 => {
                store.remove(std::slice::from_ref(&name));
            }
            _ => {
                let keep = Some(random.below(2) == 0);
                store
                    .update(
                        &name,
                        VariablePatch {
                            keep,
                            ..VariablePatch::default()
                        },
                    )
                    .ok();
            }
        }
    }

    #[test]
    fn the_eviction_index_stays_consistent_under_a_long_mixed_workload() {
        let mut store = store(50);
        let mut random = Lcg(42);
        for _ in 0..5_000 {
            random_step(&mut store, &mut random);

            let evictable = store.iter().filter(|variable| !variable.keep).count();
            assert_eq!(store.eviction.len(), evictable);
            let kept_count = store.len() - evictable;
            if kept_count < store.capacity() {
                assert!(
                    store.len() <= store.capacity(),
                    "len {} over capacity",
                    store.len()
                );
            }
        }
        assert_index_consistent(&store);
    }
}
