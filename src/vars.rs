//! Variables: the capacity-bounded store of named text values at the heart of the workspace.
//!
//! This module owns the [`VariableSystem`] store; its parts are
//! - `variable.rs`: the model — [`VarType`], [`ValueKind`], the [`Record`] of every field that
//!   the store keeps and an export carries, the [`Variable`] handed out, and the writes
//!   ([`NewVariable`], [`VariablePatch`]);
//! - `names.rs`: the rules for valid names ([`validate_name`]);
//! - `clock.rs`: [`Timestamp`]s, the injectable [`Clock`] and the one [`wall_clock`];
//! - character windows come from the ground floor's [`crate::text`] ([`Chunk`], [`window`]);
//! - `eviction.rs`: which variables go when the store is over capacity (caches first, then the
//!   least recently used; `keep` never), and the ordered index that keeps that cheap.
//!
//! It is pure: no I/O, no async and no protocol types, so the server layer can wrap it however
//! it likes.

mod clock;
mod eviction;
#[cfg(test)]
mod fixtures;
mod names;
mod variable;

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

pub use crate::text::{Chunk, window};
pub use clock::{Clock, ManualClock, SystemClock, Timestamp, readable_time, wall_clock};
use eviction::EvictionOrder;
pub use names::validate_name;
pub use variable::{
    NewVariable, Record, ValueKind, VarType, Variable, VariablePatch, encode_value,
};

/// Errors raised by the variable store and its parsers.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Error {
    /// No variable has this name.
    #[error("variable `{name}` not found")]
    NotFound { name: String },
    /// The name breaks one of the rules checked by [`validate_name`].
    #[error("invalid variable name `{name}`: {reason}")]
    InvalidName { name: String, reason: String },
    /// The text is not the serialized name of any [`VarType`].
    #[error(
        "unknown variable type `{value}`: expected one of RULE, ToolCallResult, ToolCallArgs, MessageCache, LLMAdd, USER_ADD"
    )]
    UnknownType { value: String },
}

/// What a write did: whether it created the variable, and which variables it evicted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WriteOutcome {
    pub created: bool,
    pub evicted: Vec<Arc<str>>,
}

/// Which variables [`VariableSystem::list`] returns; the filters combine with AND.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only variables of this type.
    pub var_type: Option<VarType>,
    /// Only variables carrying exactly this tag.
    pub tag: Option<String>,
    /// Only variables whose name, description or a tag contains this text, ignoring case.
    pub search: Option<String>,
}

/// What [`VariableSystem::remove`] did with each requested name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RemoveOutcome {
    pub removed: Vec<String>,
    /// `RULE` variables, which cannot be removed and were kept.
    pub refused: Vec<String>,
    pub missing: Vec<String>,
}

/// The capacity-bounded variable store. Over capacity, it evicts as `eviction.rs` describes:
/// caches first, then the least recently used; never a `keep` variable, nor the variable a write
/// wrote.
pub struct VariableSystem {
    capacity: usize,
    clock: Arc<dyn Clock>,
    /// Boxed so hash buckets stay small: at large capacities probing then touches fewer cache
    /// lines, which measured about 25% faster inserts than storing variables inline.
    variables: HashMap<Arc<str>, Box<Variable>, foldhash::fast::RandomState>,
    /// The evictable (non-`keep`) variables in eviction order; kept in step with `variables`.
    eviction: EvictionOrder,
    /// Bytes of every value held, kept in step with `variables` (for the workspace's byte cap).
    bytes: usize,
    /// While a change is tried ([`Self::begin_journal`]): each variable it touched as it was
    /// before (`None`: it did not exist), first touch only, to roll the change back.
    journal: Option<Vec<(Arc<str>, Option<Record>)>>,
}

impl fmt::Debug for VariableSystem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("VariableSystem")
            .field("capacity", &self.capacity)
            .field("len", &self.variables.len())
            .finish_non_exhaustive()
    }
}

impl VariableSystem {
    pub const DEFAULT_CAPACITY: usize = 1000;

    /// An empty store holding at most `capacity` evictable variables.
    ///
    /// A write never evicts the variable it wrote, so a capacity of 0 still keeps the most
    /// recently written variable.
    pub fn new(capacity: usize, clock: Arc<dyn Clock>) -> Self {
        Self {
            capacity,
            clock,
            variables: HashMap::default(),
            eviction: EvictionOrder::default(),
            bytes: 0,
            journal: None,
        }
    }

    /// Starts recording what each change does to the variables, so that [`Self::roll_back`] can
    /// undo it (a change decided in memory, then committed elsewhere before it is shown).
    pub fn begin_journal(&mut self) {
        self.journal = Some(Vec::new());
    }

    /// Undoes every change since [`Self::begin_journal`], and stops recording.
    pub fn roll_back(&mut self) {
        let Some(journal) = self.journal.take() else {
            return;
        };
        for (name, before) in journal.into_iter().rev() {
            match before {
                Some(record) => self.restore(record),
                None => {
                    self.discard(&name);
                }
            }
        }
    }

    /// Records `name` as it is now, before a change to it, while a journal is kept.
    fn journal(&mut self, name: &str) {
        if let Some(journal) = &mut self.journal
            && !journal.iter().any(|(touched, _)| &**touched == name)
        {
            let before = self
                .variables
                .get(name)
                .map(|variable| variable.to_record());
            journal.push((Arc::from(name), before));
        }
    }

    /// Bytes of every value held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.variables.len()
    }

    pub fn is_empty(&self) -> bool {
        self.variables.is_empty()
    }

    /// Changes the capacity, evicting as needed; returns the evicted names, oldest first.
    pub fn set_capacity(&mut self, capacity: usize) -> Vec<Arc<str>> {
        self.capacity = capacity;
        self.evict_over_capacity(None)
    }

    /// Creates the variable, or replaces every field of an existing one except `created` and
    /// `reference_count`. Sets `updated` and `last_visited` to now (and `created` when new),
    /// then evicts while the store is over capacity.
    ///
    /// The name is not validated here: callers taking names from users check them with
    /// [`validate_name`] first.
    pub fn insert(&mut self, variable: NewVariable) -> WriteOutcome {
        self.journal(&variable.name);
        let now = self.clock.now();
        // One hash lookup serves both paths; the candidate key is dropped if the name exists.
        let candidate: Arc<str> = Arc::from(variable.name.as_str());
        let (name, created) = match self.variables.entry(candidate) {
            Entry::Occupied(mut slot) => {
                let existing = slot.get_mut();
                self.bytes =
                    (self.bytes + variable.value.len()).saturating_sub(existing.value.len());
                self.eviction.reindexed(existing, |existing| {
                    let name = Arc::clone(&existing.name);
                    *existing = variable.into_variable(
                        name,
                        existing.created,
                        existing.reference_count,
                        now,
                    );
                });
                (Arc::clone(&existing.name), false)
            }
            Entry::Vacant(slot) => {
                self.bytes += variable.value.len();
                let name = Arc::clone(slot.key());
                let created = variable.into_variable(Arc::clone(&name), now, 0, now);
                self.eviction.enter(slot.insert(Box::new(created)));
                (name, true)
            }
        };
        let evicted = self.evict_over_capacity(Some(&name));
        WriteOutcome { created, evicted }
    }

    /// Applies a patch to an existing variable, sets `updated` and `last_visited` to now, then
    /// evicts while the store is over capacity.
    pub fn update(&mut self, name: &str, patch: VariablePatch) -> Result<WriteOutcome, Error> {
        self.journal(name);
        let variable = self
            .variables
            .get_mut(name)
            .ok_or_else(|| Error::NotFound {
                name: name.to_owned(),
            })?;
        let now = self.clock.now();
        if let Some((value, _)) = &patch.value {
            self.bytes = (self.bytes + value.len()).saturating_sub(variable.value.len());
        }
        self.eviction
            .reindexed(variable, |variable| variable.apply(patch, now));
        let name = Arc::clone(&variable.name);
        let evicted = self.evict_over_capacity(Some(&name));
        Ok(WriteOutcome {
            created: false,
            evicted,
        })
    }

    /// Read access that counts as a visit (`last_visited` becomes now).
    pub fn get(&mut self, name: &str) -> Option<&Variable> {
        self.visit(name).map(|variable| &*variable)
    }

    /// Read access that touches nothing.
    pub fn peek(&self, name: &str) -> Option<&Variable> {
        self.variables.get(name).map(|variable| &**variable)
    }

    /// A window of `length` characters (`None` = to the end) starting at character `start`,
    /// clamped to the end of the value: a start past the end gives empty text. Counts as a
    /// visit. Costs time proportional to the window's end, not the value's length.
    pub fn read_chunk(
        &mut self,
        name: &str,
        start: usize,
        length: Option<usize>,
    ) -> Result<Chunk, Error> {
        let variable = self.visit(name).ok_or_else(|| Error::NotFound {
            name: name.to_owned(),
        })?;
        Ok(crate::text::chunk_of(
            &variable.value,
            variable.char_len(),
            start,
            length,
        ))
    }

    /// Resolves a `$VAR_REF`: returns the value and its kind, counts as a visit and increments
    /// `reference_count`.
    pub fn resolve_reference(&mut self, name: &str) -> Option<(Arc<str>, ValueKind)> {
        let variable = self.visit(name)?;
        variable.count_reference();
        Some((Arc::clone(&variable.value), variable.kind))
    }

    /// The variables matching every filter, sorted by name. Does not count as a visit.
    ///
    /// `search` matches names, descriptions and tags, ignoring case; it never looks at values.
    pub fn list(&self, filter: &ListFilter) -> Vec<&Variable> {
        let needle = filter.search.as_deref().map(str::to_lowercase);
        let mut matching: Vec<&Variable> = self
            .iter()
            .filter(|variable| {
                filter
                    .var_type
                    .is_none_or(|wanted| variable.var_type == wanted)
            })
            .filter(|variable| {
                filter
                    .tag
                    .as_ref()
                    .is_none_or(|wanted| variable.tags.contains(wanted))
            })
            .filter(|variable| {
                needle
                    .as_deref()
                    .is_none_or(|needle| variable.metadata_contains(needle))
            })
            .collect();
        matching.sort_unstable_by(|left, right| left.name.cmp(&right.name));
        matching
    }

    /// Removes the named variables. `RULE` variables are refused and kept, unknown names are
    /// reported as missing; each name is reported once, in the order given.
    pub fn remove(&mut self, names: &[String]) -> RemoveOutcome {
        self.remove_of(names, false)
    }

    /// As [`Self::remove`], `RULE` variables too: a group's rules withdrawn by the server when
    /// the tools they teach are off.
    pub fn remove_with_rules(&mut self, names: &[String]) -> RemoveOutcome {
        self.remove_of(names, true)
    }

    fn remove_of(&mut self, names: &[String], rules: bool) -> RemoveOutcome {
        let mut outcome = RemoveOutcome::default();
        let mut seen = HashSet::with_capacity(names.len());
        for name in names {
            if !seen.insert(name.as_str()) {
                continue;
            }
            let report = match self
                .variables
                .get(name.as_str())
                .map(|found| found.var_type)
            {
                None => &mut outcome.missing,
                Some(VarType::Rule) if !rules => &mut outcome.refused,
                Some(_) => {
                    self.discard(name);
                    &mut outcome.removed
                }
            };
            report.push(name.clone());
        }
        outcome
    }

    /// Puts a variable in place exactly as recorded, timestamps and counts included, replacing
    /// any variable of that name. Used to load a workspace from the store and to apply changes
    /// made by another process; it does not evict (call [`Self::evict`] afterwards).
    pub fn restore(&mut self, record: Record) {
        self.discard(&record.name);
        let restored = Variable::new(record);
        self.eviction.enter(&restored);
        self.bytes += restored.value.len();
        self.variables
            .insert(Arc::clone(&restored.name), Box::new(restored));
    }

    /// Removes a variable whatever its type (a removal made by another process, or a write
    /// undone); returns whether it existed.
    pub fn forget(&mut self, name: &str) -> bool {
        self.discard(name)
    }

    /// Evicts while the store is over capacity; returns the evicted names.
    pub fn evict(&mut self) -> Vec<Arc<str>> {
        self.evict_over_capacity(None)
    }

    /// Every variable, in no particular order. Does not count as a visit.
    pub fn iter(&self) -> impl Iterator<Item = &Variable> {
        self.variables.values().map(|variable| &**variable)
    }

    /// Marks a variable as visited now and returns it.
    fn visit(&mut self, name: &str) -> Option<&mut Variable> {
        let variable = self.variables.get_mut(name)?;
        let now = self.clock.now();
        self.eviction
            .reindexed(variable, |variable| variable.visit(now));
        Some(variable)
    }

    /// Removes a variable and its eviction key; returns whether it existed.
    fn discard(&mut self, name: &str) -> bool {
        self.journal(name);
        let Some(variable) = self.variables.remove(name) else {
            return false;
        };
        self.bytes = self.bytes.saturating_sub(variable.value.len());
        self.eviction.leave(&variable);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pretty_assertions::assert_eq;

    use super::fixtures::{
        assert_index_consistent, insert_text, names, sorted_names, store, strings,
    };
    use super::*;

    /// Every variable as a record, by name.
    fn records(store: &VariableSystem) -> Vec<Record> {
        let mut all: Vec<Record> = store.iter().map(Variable::to_record).collect();
        all.sort_by(|left, right| left.name.cmp(&right.name));
        all
    }

    #[test]
    fn a_journaled_change_rolls_back_to_exactly_what_was_there() {
        let mut store = store(3);
        for name in ["a", "b", "c"] {
            insert_text(&mut store, name);
        }
        store.get("a");
        let before = records(&store);
        let bytes = store.bytes();
        store.begin_journal();
        // A new variable evicts the least recently used (b), a replacement, a patch, a removal.
        let outcome = store.insert(NewVariable::text("d", "new", VarType::LlmAdd));
        assert_eq!(outcome.evicted, vec![Arc::<str>::from("b")]);
        store.insert(NewVariable::text("a", "replaced", VarType::UserAdd));
        let patch = VariablePatch {
            desc: Some("changed".to_owned()),
            ..VariablePatch::default()
        };
        store.update("c", patch).unwrap();
        store.remove(&strings(&["d", "c"]));
        store.roll_back();
        assert_eq!(records(&store), before);
        assert_eq!(store.bytes(), bytes);
        assert_index_consistent(&store);
        // Not journaled any more: a change stays.
        store.roll_back();
        insert_text(&mut store, "e");
        assert_eq!(sorted_names(&store), strings(&["a", "c", "e"]));
    }

    #[test]
    fn insert_creates_a_variable_stamped_with_the_write_time() {
        let mut store = store(10);

        let outcome = store.insert(NewVariable::text("greeting", "hello", VarType::UserAdd));

        assert_eq!(
            outcome,
            WriteOutcome {
                created: true,
                evicted: Vec::new()
            }
        );
        let variable = store.peek("greeting").cloned();
        let variable = variable.as_ref();
        assert_eq!(variable.map(|variable| &*variable.value), Some("hello"));
        assert_eq!(
            variable.map(|variable| variable.kind),
            Some(ValueKind::Text)
        );
        assert_eq!(
            variable.map(|variable| variable.var_type),
            Some(VarType::UserAdd)
        );
        assert_eq!(
            variable.map(|variable| variable.created),
            Some(Timestamp(1))
        );
        assert_eq!(
            variable.map(|variable| variable.updated),
            Some(Timestamp(1))
        );
        assert_eq!(
            variable.map(|variable| variable.last_visited),
            Some(Timestamp(1))
        );
        assert_eq!(variable.map(|variable| variable.reference_count), Some(0));
        assert_eq!(store.len(), 1);
        assert!(!store.is_empty());
    }

    #[test]
    fn get_counts_as_a_visit_but_peek_does_not() {
        let mut store = store(10);
        insert_text(&mut store, "a");

        let peeked = store.peek("a").map(|variable| variable.last_visited);
        let got = store.get("a").map(|variable| variable.last_visited);

        assert_eq!(peeked, Some(Timestamp(1)));
        assert_eq!(got, Some(Timestamp(2)));
        assert_eq!(
            store.peek("a").map(|variable| variable.updated),
            Some(Timestamp(1))
        );
        assert_eq!(store.get("missing"), None);
        assert_eq!(store.peek("missing"), None);
    }

    #[test]
    fn insert_over_an_existing_name_replaces_all_but_created_and_reference_count() {
        let mut store = store(10);
        store.insert(NewVariable {
            desc: Some("old".to_owned()),
            tags: strings(&["old"]),
            ..NewVariable::text("a", "first", VarType::LlmAdd)
        });
        store.resolve_reference("a");

        let outcome = store.insert(NewVariable::text("a", "second", VarType::UserAdd));

        assert_eq!(
            outcome,
            WriteOutcome {
                created: false,
                evicted: Vec::new()
            }
        );
        let variable = store.peek("a").cloned();
        assert_eq!(
            variable.as_ref().map(|variable| &*variable.value),
            Some("second")
        );
        assert_eq!(
            variable.as_ref().map(|variable| variable.var_type),
            Some(VarType::UserAdd)
        );
        assert_eq!(
            variable.as_ref().and_then(|variable| variable.desc.clone()),
            None
        );
        assert_eq!(
            variable.as_ref().map(|variable| variable.tags.len()),
            Some(0)
        );
        assert_eq!(
            variable.as_ref().map(|variable| variable.created),
            Some(Timestamp(1))
        );
        assert_eq!(
            variable.as_ref().map(|variable| variable.updated),
            Some(Timestamp(3))
        );
        assert_eq!(
            variable.as_ref().map(|variable| variable.reference_count),
            Some(1)
        );
        assert_eq!(store.len(), 1);
        assert_index_consistent(&store);
    }

    #[test]
    fn update_changes_only_the_fields_the_patch_names() {
        let mut store = store(10);
        store.insert(NewVariable {
            desc: Some("a description".to_owned()),
            ..NewVariable::text("a", "value", VarType::LlmAdd)
        });

        let outcome = store.update(
            "a",
            VariablePatch {
                tags: Some(strings(&["fresh"])),
                ..VariablePatch::default()
            },
        );

        assert_eq!(outcome, Ok(WriteOutcome::default()));
        let variable = store.peek("a").cloned();
        assert_eq!(
            variable.as_ref().map(|variable| &*variable.value),
            Some("value")
        );
        assert_eq!(
            variable
                .as_ref()
                .and_then(|variable| variable.desc.as_deref()),
            Some("a description")
        );
        assert_eq!(
            variable.as_ref().map(|variable| variable.tags.clone()),
            Some(strings(&["fresh"]))
        );
        assert_eq!(
            variable.as_ref().map(|variable| variable.created),
            Some(Timestamp(1))
        );
        assert_eq!(
            variable.as_ref().map(|variable| variable.updated),
            Some(Timestamp(2))
        );
        assert_eq!(
            variable.as_ref().map(|variable| variable.last_visited),
            Some(Timestamp(2))
        );
    }

    #[test]
    fn update_of_a_missing_name_is_not_found() {
        let mut store = store(10);

        let result = store.update("ghost", VariablePatch::default());

        assert_eq!(
            result,
            Err(Error::NotFound {
                name: "ghost".to_owned()
            })
        );
        assert_eq!(
            result.map_err(|error| error.to_string()),
            Err("variable `ghost` not found".to_owned())
        );
    }

    #[test]
    fn json_values_keep_their_kind_through_writes_and_references() {
        let mut store = store(10);
        let (value, kind) = encode_value(serde_json::json!({"count": 3}));
        store.insert(NewVariable {
            kind,
            ..NewVariable::text("object", value, VarType::ToolCallResult)
        });

        assert_eq!(
            store.resolve_reference("object"),
            Some((Arc::from(r#"{"count":3}"#), ValueKind::Json))
        );
        let patch = VariablePatch {
            value: Some(encode_value(serde_json::json!([1, 2]))),
            ..VariablePatch::default()
        };
        assert_eq!(
            store.update("object", patch).map(|outcome| outcome.created),
            Ok(false)
        );
        assert_eq!(
            store.peek("object").map(|variable| (
                &*variable.value,
                variable.kind,
                variable.char_len()
            )),
            Some(("[1,2]", ValueKind::Json, 5))
        );
        assert_eq!(
            encode_value(serde_json::json!("plain")),
            ("plain".to_owned(), ValueKind::Text)
        );
    }

    #[test]
    fn resolve_reference_counts_the_reference_and_the_visit() {
        let mut store = store(10);
        insert_text(&mut store, "a");

        store.resolve_reference("a");
        let resolved = store.resolve_reference("a");

        assert_eq!(resolved, Some((Arc::from("value of a"), ValueKind::Text)));
        assert_eq!(
            store.peek("a").map(|variable| variable.reference_count),
            Some(2)
        );
        assert_eq!(
            store.peek("a").map(|variable| variable.last_visited),
            Some(Timestamp(3))
        );
        assert_eq!(store.resolve_reference("missing"), None);
    }

    #[test]
    fn read_chunk_windows_multibyte_text_by_characters() {
        let mut store = store(10);
        store.insert(NewVariable::text(
            "text",
            "héllo wörld 😀 ünïcode",
            VarType::UserAdd,
        ));

        let first = store.read_chunk("text", 0, Some(5));
        let middle = store.read_chunk("text", 6, Some(8));
        let rest = store.read_chunk("text", 12, None);

        let chunk = |text: &str, start, end, has_more| Chunk {
            text: text.to_owned(),
            start,
            end,
            total: 21,
            has_more,
        };
        assert_eq!(first, Ok(chunk("héllo", 0, 5, true)));
        assert_eq!(middle, Ok(chunk("wörld 😀 ", 6, 14, true)));
        assert_eq!(rest, Ok(chunk("😀 ünïcode", 12, 21, false)));
        assert_eq!(store.peek("text").map(Variable::char_len), Some(21));
    }

    #[test]
    fn read_chunk_clamps_windows_that_run_past_the_end() {
        let mut store = store(10);
        store.insert(NewVariable::text("short", "ab😀", VarType::UserAdd));

        let overlong = store.read_chunk("short", 1, Some(100));
        let beyond = store.read_chunk("short", 10, Some(2));
        let empty_window = store.read_chunk("short", 1, Some(0));

        let chunk = |text: &str, start, end, has_more| Chunk {
            text: text.to_owned(),
            start,
            end,
            total: 3,
            has_more,
        };
        assert_eq!(overlong, Ok(chunk("b😀", 1, 3, false)));
        assert_eq!(beyond, Ok(chunk("", 3, 3, false)));
        assert_eq!(empty_window, Ok(chunk("", 1, 1, true)));
    }

    #[test]
    fn read_chunk_of_a_missing_name_is_not_found() {
        let mut store = store(10);

        assert_eq!(
            store.read_chunk("ghost", 0, None),
            Err(Error::NotFound {
                name: "ghost".to_owned()
            })
        );
    }

    fn listing_fixture() -> VariableSystem {
        let mut store = store(10);
        store.insert(NewVariable {
            desc: Some("The Weather report".to_owned()),
            ..NewVariable::text("forecast", "sunny", VarType::ToolCallResult)
        });
        store.insert(NewVariable {
            tags: strings(&["Draft", "email"]),
            ..NewVariable::text("letter", "weather is nice", VarType::LlmAdd)
        });
        store.insert(NewVariable {
            tags: strings(&["email"]),
            ..NewVariable::text("Rule/Style/Tone", "be kind", VarType::Rule)
        });
        store.insert(NewVariable::text("args", "{}", VarType::ToolCallArgs));
        store
    }

    #[test]
    fn list_without_filters_returns_everything_sorted_by_name() {
        let store = listing_fixture();

        let listed = store.list(&ListFilter::default());

        assert_eq!(
            names(&listed),
            strings(&["Rule/Style/Tone", "args", "forecast", "letter"])
        );
    }

    #[test]
    fn list_filters_by_type_and_by_exact_tag() {
        let store = listing_fixture();
        let by_type = ListFilter {
            var_type: Some(VarType::Rule),
            ..ListFilter::default()
        };
        let by_tag = ListFilter {
            tag: Some("email".to_owned()),
            ..ListFilter::default()
        };
        let by_tag_case = ListFilter {
            tag: Some("draft".to_owned()),
            ..ListFilter::default()
        };

        assert_eq!(names(&store.list(&by_type)), strings(&["Rule/Style/Tone"]));
        assert_eq!(
            names(&store.list(&by_tag)),
            strings(&["Rule/Style/Tone", "letter"])
        );
        assert_eq!(names(&store.list(&by_tag_case)), Vec::<String>::new());
    }

    #[test]
    fn list_search_ignores_case_over_names_descriptions_and_tags_but_not_values() {
        let store = listing_fixture();
        let search = |text: &str| ListFilter {
            search: Some(text.to_owned()),
            ..ListFilter::default()
        };

        assert_eq!(
            names(&store.list(&search("WEATHER"))),
            strings(&["forecast"])
        );
        assert_eq!(names(&store.list(&search("draft"))), strings(&["letter"]));
        assert_eq!(
            names(&store.list(&search("rule/"))),
            strings(&["Rule/Style/Tone"])
        );
        assert_eq!(names(&store.list(&search("sunny"))), Vec::<String>::new());
    }

    #[test]
    fn list_filters_combine_with_and_and_do_not_visit() {
        let store = listing_fixture();
        let filter = ListFilter {
            var_type: Some(VarType::LlmAdd),
            tag: Some("email".to_owned()),
            search: Some("let".to_owned()),
        };

        let listed = store.list(&filter);

        assert_eq!(names(&listed), strings(&["letter"]));
        assert_eq!(
            listed.first().map(|variable| variable.last_visited),
            Some(Timestamp(2))
        );
    }

    #[test]
    fn remove_refuses_rules_reports_missing_names_and_reports_each_name_once() {
        let mut store = listing_fixture();
        let request = strings(&[
            "letter",
            "ghost",
            "Rule/Style/Tone",
            "letter",
            "args",
            "ghost",
        ]);

        let outcome = store.remove(&request);

        assert_eq!(
            outcome,
            RemoveOutcome {
                removed: strings(&["letter", "args"]),
                refused: strings(&["Rule/Style/Tone"]),
                missing: strings(&["ghost"]),
            }
        );
        assert_eq!(
            sorted_names(&store),
            strings(&["Rule/Style/Tone", "forecast"])
        );
        assert_index_consistent(&store);
    }
}
