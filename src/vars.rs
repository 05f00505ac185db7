//! Variables: the capacity-bounded store of named text values at the heart of the workspace.
//!
//! This module owns the domain model of variables (their kinds, value encoding, timestamps and
//! metadata), the rules for valid names, and the [`VariableSystem`] store itself, including its
//! eviction policy. It is pure: no I/O, no async and no protocol types, so the server layer can
//! wrap it however it likes.
//!
//! # Eviction
//!
//! When a write leaves the store holding more than [`VariableSystem::capacity`] variables,
//! cached values go first ([`VarType::is_cache`]: tool results and arguments the executor stored
//! on its own, cached messages), whatever their times, so that a burst of tool calls never
//! evicts what the model or the user wrote. Within each class the least recently used go
//! first: oldest `last_visited`, ties broken by `updated`, then `created`, then name. Variables
//! marked `keep` are never evicted, so a store holding only such variables may exceed its
//! capacity. A variable is never evicted by its own write.
//!
//! Eviction must stay cheap at large capacities, so the store keeps an ordered index of the
//! evictable (non-`keep`) variables beside the name map. Every touch re-keys the variable in that
//! index, and eviction pops its first entry: no sort and no scan per write.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest variable name accepted by [`validate_name`], in Unicode characters.
const MAX_NAME_CHARS: usize = 256;

/// Characters that would make `$VAR_REF{{name:start:length}}` ambiguous.
const RESERVED_NAME_CHARS: [char; 3] = ['{', '}', ':'];

/// The last microsecond that RFC 3339 (four-digit years) can represent: 9999-12-31T23:59:59.999999Z.
const MAX_RFC3339_MICROS: u64 = 253_402_300_800_000_000 - 1;

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

/// The kind of a variable, by the name it is serialized under.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub enum VarType {
    /// A rule the agent must follow; rules cannot be removed.
    #[serde(rename = "RULE")]
    Rule,
    /// The result of a tool call.
    ToolCallResult,
    /// The arguments of a tool call.
    ToolCallArgs,
    /// A cached chat message.
    MessageCache,
    /// A value the model chose to store.
    #[serde(rename = "LLMAdd")]
    LlmAdd,
    /// A value the user chose to store.
    #[serde(rename = "USER_ADD")]
    UserAdd,
}

impl VarType {
    /// Every variable type, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::Rule,
        Self::ToolCallResult,
        Self::ToolCallArgs,
        Self::MessageCache,
        Self::LlmAdd,
        Self::UserAdd,
    ];

    /// The serialized name, e.g. `"RULE"` or `"ToolCallResult"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rule => "RULE",
            Self::ToolCallResult => "ToolCallResult",
            Self::ToolCallArgs => "ToolCallArgs",
            Self::MessageCache => "MessageCache",
            Self::LlmAdd => "LLMAdd",
            Self::UserAdd => "USER_ADD",
        }
    }
}

impl VarType {
    /// Whether values of this type are a cache (recomputable, stored without being asked for),
    /// evicted before anything the model or the user wrote.
    pub fn is_cache(self) -> bool {
        matches!(
            self,
            Self::ToolCallResult | Self::ToolCallArgs | Self::MessageCache
        )
    }
}

impl fmt::Display for VarType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for VarType {
    type Err = Error;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|var_type| var_type.as_str() == value)
            .ok_or_else(|| Error::UnknownType {
                value: value.to_owned(),
            })
    }
}

/// Whether a value was written as text or as a JSON-encoded non-string
/// (object, array, number, boolean or null).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ValueKind {
    Text,
    Json,
}

/// Encodes a JSON value for storage: strings are stored as their text, anything else JSON-encoded.
pub fn encode_value(value: serde_json::Value) -> (String, ValueKind) {
    match value {
        serde_json::Value::String(text) => (text, ValueKind::Text),
        other => (other.to_string(), ValueKind::Json),
    }
}

/// Microseconds since the Unix epoch.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// Formats as RFC 3339 with microseconds, e.g. `2024-05-01T12:00:00.000000Z`.
    /// Instants past the end of year 9999 render as its last microsecond.
    pub fn to_rfc3339(self) -> String {
        let micros = self.0.min(MAX_RFC3339_MICROS);
        humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_micros(micros)).to_string()
    }
}

/// A source of timestamps, injectable so tests can control time.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The wall clock made strictly increasing: each call returns the later of the system time and
/// the previous result plus one microsecond, so no two events share a timestamp.
#[derive(Debug, Default)]
pub struct SystemClock {
    last: AtomicU64,
}

impl SystemClock {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let wall = wall_clock_micros();
        let mut previous = self.last.load(Ordering::Relaxed);
        loop {
            let next = wall.max(previous.saturating_add(1));
            match self.last.compare_exchange_weak(
                previous,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Timestamp(next),
                Err(actual) => previous = actual,
            }
        }
    }
}

/// The system time in microseconds since the epoch; 0 before the epoch, saturating far after it.
fn wall_clock_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
        })
}

/// A test clock: the first call returns the start value, and each call advances it by one.
#[derive(Debug)]
pub struct ManualClock {
    next: AtomicU64,
}

impl ManualClock {
    pub fn new(start: u64) -> Self {
        Self {
            next: AtomicU64::new(start),
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.next.fetch_add(1, Ordering::Relaxed))
    }
}

/// A stored variable.
///
/// Only the store creates variables (its private character count must match the value), so
/// code outside this module reads them but cannot build one with a struct literal.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    pub name: Arc<str>,
    /// Always text; non-string values are stored JSON-encoded with `kind` [`ValueKind::Json`].
    pub value: Arc<str>,
    pub kind: ValueKind,
    pub desc: Option<String>,
    pub var_type: VarType,
    pub tags: Vec<String>,
    /// A kept variable is never evicted.
    pub keep: bool,
    pub created: Timestamp,
    pub updated: Timestamp,
    pub last_visited: Timestamp,
    /// How many `$VAR_REF` resolutions have read this variable.
    pub reference_count: u64,
    /// The Unicode scalar count of `value`, computed once per write.
    char_count: usize,
}

impl Variable {
    /// The length of the value in Unicode scalar values.
    pub fn char_len(&self) -> usize {
        self.char_count
    }

    fn set_value(&mut self, value: String, kind: ValueKind) {
        self.char_count = value.chars().count();
        self.value = value.into();
        self.kind = kind;
    }

    /// Whether `needle` (already lowercase) occurs in the name, description or any tag,
    /// ignoring case.
    fn metadata_contains(&self, needle: &str) -> bool {
        let contains = |text: &str| text.to_lowercase().contains(needle);
        contains(&self.name)
            || self.desc.as_deref().is_some_and(contains)
            || self.tags.iter().any(|tag| contains(tag))
    }
}

/// A complete variable to insert: created, or replacing an existing one of that name.
#[derive(Debug, Clone)]
pub struct NewVariable {
    pub name: String,
    pub value: String,
    pub kind: ValueKind,
    pub var_type: VarType,
    pub desc: Option<String>,
    pub tags: Vec<String>,
    pub keep: bool,
}

impl NewVariable {
    /// A text variable with no description, no tags, and not kept.
    pub fn text(name: impl Into<String>, value: impl Into<String>, var_type: VarType) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            kind: ValueKind::Text,
            var_type,
            desc: None,
            tags: Vec::new(),
            keep: false,
        }
    }
}

/// Every field of a variable as it was stored, for [`VariableSystem::restore`].
#[derive(Debug, Clone, PartialEq)]
pub struct RestoredVariable {
    pub name: String,
    pub value: Arc<str>,
    pub kind: ValueKind,
    pub desc: Option<String>,
    pub var_type: VarType,
    pub tags: Vec<String>,
    pub keep: bool,
    pub created: Timestamp,
    pub updated: Timestamp,
    pub last_visited: Timestamp,
    pub reference_count: u64,
}

impl From<&Variable> for RestoredVariable {
    fn from(variable: &Variable) -> Self {
        Self {
            name: variable.name.to_string(),
            value: Arc::clone(&variable.value),
            kind: variable.kind,
            desc: variable.desc.clone(),
            var_type: variable.var_type,
            tags: variable.tags.clone(),
            keep: variable.keep,
            created: variable.created,
            updated: variable.updated,
            last_visited: variable.last_visited,
            reference_count: variable.reference_count,
        }
    }
}

/// A partial update of an existing variable; `None` leaves a field unchanged.
#[derive(Debug, Clone, Default)]
pub struct VariablePatch {
    pub value: Option<(String, ValueKind)>,
    pub var_type: Option<VarType>,
    pub desc: Option<String>,
    pub tags: Option<Vec<String>>,
    pub keep: Option<bool>,
}

/// What a write did: whether it created the variable, and which variables it evicted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WriteOutcome {
    pub created: bool,
    pub evicted: Vec<Arc<str>>,
}

/// A window of a value, counted in Unicode characters.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Chunk {
    pub text: String,
    /// The first character of the window, clamped to `total`.
    pub start: usize,
    /// One past the last character of the window.
    pub end: usize,
    /// The length of the whole value.
    pub total: usize,
    /// Whether characters remain after `end`.
    pub has_more: bool,
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

/// Checks a user-chosen variable name.
///
/// A name has 1 to 256 characters, is not only whitespace, has no leading or trailing
/// whitespace, no control characters, and none of `{`, `}` and `:` (which would make
/// `$VAR_REF{{name:start:length}}` ambiguous). `/` is allowed: rule names look like
/// `Rule/Group/Name`.
pub fn validate_name(name: &str) -> Result<(), Error> {
    match name_problem(name) {
        None => Ok(()),
        Some(reason) => Err(Error::InvalidName {
            name: name.to_owned(),
            reason,
        }),
    }
}

/// What is wrong with a name and how to fix it, or `None` when it is valid.
fn name_problem(name: &str) -> Option<String> {
    let length = name.chars().count();
    if length == 0 {
        return Some(format!(
            "the name is empty; give the variable a name of 1 to {MAX_NAME_CHARS} characters"
        ));
    }
    if length > MAX_NAME_CHARS {
        return Some(format!(
            "the name is {length} characters long; shorten it to at most {MAX_NAME_CHARS}"
        ));
    }
    if name.chars().all(char::is_whitespace) {
        return Some("the name is only whitespace; use visible characters".to_owned());
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Some("the name starts or ends with whitespace; trim it".to_owned());
    }
    if let Some(control) = name.chars().find(|character| character.is_control()) {
        return Some(format!(
            "the name contains the control character U+{:04X}; remove it",
            u32::from(control)
        ));
    }
    name.chars()
        .find(|character| RESERVED_NAME_CHARS.contains(character))
        .map(|reserved| {
            format!(
                "the name contains `{reserved}`, which would make `$VAR_REF{{{{name:start:length}}}}` ambiguous; use another separator such as `/` or `_`"
            )
        })
}

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

/// Applies `change` to a variable while keeping its entry in the eviction index current: the
/// old key leaves the index, and the new key enters it if the variable is still evictable.
fn reindexed(
    index: &mut BTreeSet<EvictionKey>,
    variable: &mut Variable,
    change: impl FnOnce(&mut Variable),
) {
    if !variable.keep {
        index.remove(&EvictionKey::of(variable));
    }
    change(variable);
    if !variable.keep {
        index.insert(EvictionKey::of(variable));
    }
}

/// Applies a patch, stamping the variable as written at `now`.
fn apply_patch(variable: &mut Variable, patch: VariablePatch, now: Timestamp) {
    let VariablePatch {
        value,
        var_type,
        desc,
        tags,
        keep,
    } = patch;
    if let Some((value, kind)) = value {
        variable.set_value(value, kind);
    }
    if let Some(var_type) = var_type {
        variable.var_type = var_type;
    }
    if desc.is_some() {
        variable.desc = desc;
    }
    if let Some(tags) = tags {
        variable.tags = tags;
    }
    if let Some(keep) = keep {
        variable.keep = keep;
    }
    variable.updated = now;
    variable.last_visited = now;
}

/// Replaces every field of `variable` except `name`, `created` and `reference_count`.
fn replace_fields(variable: &mut Variable, new: NewVariable, now: Timestamp) {
    let NewVariable {
        name: _,
        value,
        kind,
        var_type,
        desc,
        tags,
        keep,
    } = new;
    variable.set_value(value, kind);
    variable.var_type = var_type;
    variable.desc = desc;
    variable.tags = tags;
    variable.keep = keep;
    variable.updated = now;
    variable.last_visited = now;
}

/// Builds a fresh variable called `name` (a shared copy of `new.name`), written at `now`.
fn create_variable(name: Arc<str>, new: NewVariable, now: Timestamp) -> Variable {
    let NewVariable {
        name: _,
        value,
        kind,
        var_type,
        desc,
        tags,
        keep,
    } = new;
    Variable {
        name,
        char_count: value.chars().count(),
        value: value.into(),
        kind,
        desc,
        var_type,
        tags,
        keep,
        created: now,
        updated: now,
        last_visited: now,
        reference_count: 0,
    }
}

/// The text after the first `count` characters (empty when there are fewer).
fn skip_chars(text: &str, count: usize) -> &str {
    text.char_indices()
        .nth(count)
        .map_or("", |(offset, _)| &text[offset..])
}

/// The first `count` characters of `text` (all of it when there are fewer).
fn take_chars(text: &str, count: usize) -> &str {
    text.char_indices()
        .nth(count)
        .map_or(text, |(offset, _)| &text[..offset])
}

/// A window of `value` (whose character count is `total`), clamped to its end.
/// A window of `length` characters (`None`: to the end) of any text, from character `start`,
/// clamped to the end; the same windows `ReadVar` gives, for other readers (`ReadState`).
pub fn window(text: &str, start: usize, length: Option<usize>) -> Chunk {
    chunk_of(text, text.chars().count(), start, length)
}

fn chunk_of(value: &str, total: usize, start: usize, length: Option<usize>) -> Chunk {
    let start = start.min(total);
    let remaining = total - start;
    let length = length.map_or(remaining, |length| length.min(remaining));
    let end = start + length;
    Chunk {
        text: take_chars(skip_chars(value, start), length).to_owned(),
        start,
        end,
        total,
        has_more: end < total,
    }
}

/// The capacity-bounded variable store.
pub struct VariableSystem {
    capacity: usize,
    clock: Arc<dyn Clock>,
    /// Boxed so hash buckets stay small: at large capacities probing then touches fewer cache
    /// lines, which measured about 25% faster inserts than storing variables inline.
    variables: HashMap<Arc<str>, Box<Variable>, foldhash::fast::RandomState>,
    /// The evictable (non-`keep`) variables in eviction order; kept in step with `variables`.
    eviction_index: BTreeSet<EvictionKey>,
    /// Bytes of every value held, kept in step with `variables` (for the workspace's byte cap).
    bytes: usize,
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
            eviction_index: BTreeSet::new(),
            bytes: 0,
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
        let now = self.clock.now();
        // One hash lookup serves both paths; the candidate key is dropped if the name exists.
        let candidate: Arc<str> = Arc::from(variable.name.as_str());
        let (name, created) = match self.variables.entry(candidate) {
            Entry::Occupied(mut slot) => {
                let existing = slot.get_mut();
                self.bytes =
                    (self.bytes + variable.value.len()).saturating_sub(existing.value.len());
                reindexed(&mut self.eviction_index, existing, |existing| {
                    replace_fields(existing, variable, now);
                });
                (Arc::clone(&existing.name), false)
            }
            Entry::Vacant(slot) => {
                self.bytes += variable.value.len();
                let name = Arc::clone(slot.key());
                let created =
                    slot.insert(Box::new(create_variable(Arc::clone(&name), variable, now)));
                if !created.keep {
                    self.eviction_index.insert(EvictionKey::of(created));
                }
                (name, true)
            }
        };
        let evicted = self.evict_over_capacity(Some(&name));
        WriteOutcome { created, evicted }
    }

    /// Applies a patch to an existing variable, sets `updated` and `last_visited` to now, then
    /// evicts while the store is over capacity.
    pub fn update(&mut self, name: &str, patch: VariablePatch) -> Result<WriteOutcome, Error> {
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
        reindexed(&mut self.eviction_index, variable, |variable| {
            apply_patch(variable, patch, now);
        });
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
        Ok(chunk_of(
            &variable.value,
            variable.char_count,
            start,
            length,
        ))
    }

    /// Resolves a `$VAR_REF`: returns the value and its kind, counts as a visit and increments
    /// `reference_count`.
    pub fn resolve_reference(&mut self, name: &str) -> Option<(Arc<str>, ValueKind)> {
        let variable = self.visit(name)?;
        variable.reference_count += 1;
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
                Some(VarType::Rule) => &mut outcome.refused,
                Some(_) => {
                    self.discard(name);
                    &mut outcome.removed
                }
            };
            report.push(name.clone());
        }
        outcome
    }

    /// Puts a variable in place exactly as given, timestamps and counts included, replacing any
    /// variable of that name. Used to load a workspace from the store and to apply changes made
    /// by another process; it does not evict (call [`Self::evict`] afterwards).
    pub fn restore(&mut self, variable: RestoredVariable) {
        let name: Arc<str> = Arc::from(variable.name.as_str());
        self.discard(&name);
        let restored = Variable {
            char_count: variable.value.chars().count(),
            name: Arc::clone(&name),
            value: variable.value,
            kind: variable.kind,
            desc: variable.desc,
            var_type: variable.var_type,
            tags: variable.tags,
            keep: variable.keep,
            created: variable.created,
            updated: variable.updated,
            last_visited: variable.last_visited,
            reference_count: variable.reference_count,
        };
        if !restored.keep {
            self.eviction_index.insert(EvictionKey::of(&restored));
        }
        self.bytes += restored.value.len();
        self.variables.insert(name, Box::new(restored));
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
        reindexed(&mut self.eviction_index, variable, |variable| {
            variable.last_visited = now;
        });
        Some(variable)
    }

    /// Removes a variable from the map and the eviction index.
    /// Removes a variable and its eviction key; returns whether it existed.
    fn discard(&mut self, name: &str) -> bool {
        let Some(variable) = self.variables.remove(name) else {
            return false;
        };
        self.bytes = self.bytes.saturating_sub(variable.value.len());
        if !variable.keep {
            self.eviction_index.remove(&EvictionKey::of(&variable));
        }
        true
    }

    /// Evicts the oldest evictable variables, other than `protected`, until the store fits its
    /// capacity or nothing evictable remains. Returns the evicted names, oldest first.
    ///
    /// `protected` is the variable's own name `Arc`: index keys share it, so identity suffices.
    fn evict_over_capacity(&mut self, protected: Option<&Arc<str>>) -> Vec<Arc<str>> {
        let mut evicted = Vec::new();
        let mut spared = None;
        while self.variables.len() > self.capacity {
            let Some(oldest) = self.eviction_index.pop_first() else {
                break;
            };
            if protected.is_some_and(|protected| Arc::ptr_eq(protected, &oldest.name)) {
                spared = Some(oldest);
                continue;
            }
            if let Some(variable) = self.variables.remove(&oldest.name) {
                self.bytes = self.bytes.saturating_sub(variable.value.len());
            }
            evicted.push(oldest.name);
        }
        if let Some(spared) = spared {
            self.eviction_index.insert(spared);
        }
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A clock frozen at one instant, so every event ties on every timestamp.
    struct FixedClock(Timestamp);

    impl Clock for FixedClock {
        fn now(&self) -> Timestamp {
            self.0
        }
    }

    fn store(capacity: usize) -> VariableSystem {
        VariableSystem::new(capacity, Arc::new(ManualClock::new(1)))
    }

    fn insert_text(store: &mut VariableSystem, name: &str) -> WriteOutcome {
        store.insert(NewVariable::text(
            name,
            format!("value of {name}"),
            VarType::LlmAdd,
        ))
    }

    fn kept(name: &str) -> NewVariable {
        NewVariable {
            keep: true,
            ..NewVariable::text(name, "kept", VarType::UserAdd)
        }
    }

    fn names(variables: &[&Variable]) -> Vec<String> {
        variables
            .iter()
            .map(|variable| variable.name.to_string())
            .collect()
    }

    fn arcs(names: &[&str]) -> Vec<Arc<str>> {
        names.iter().map(|name| Arc::from(*name)).collect()
    }

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    fn sorted_names(store: &VariableSystem) -> Vec<String> {
        let mut all: Vec<String> = store
            .iter()
            .map(|variable| variable.name.to_string())
            .collect();
        all.sort();
        all
    }

    /// The eviction index must hold exactly the non-keep variables, each under its current key.
    fn assert_index_consistent(store: &VariableSystem) {
        let expected: BTreeSet<EvictionKey> = store
            .iter()
            .filter(|variable| !variable.keep)
            .map(EvictionKey::of)
            .collect();
        assert_eq!(store.eviction_index, expected);
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

    #[test]
    fn validate_name_accepts_rule_paths_spaces_and_any_script() {
        for name in [
            "Rule/Agent/VarRef",
            "my var",
            "日本語",
            "x",
            &"n".repeat(256),
        ] {
            assert_eq!(validate_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn validate_name_rejects_names_that_are_empty_blank_padded_or_too_long() {
        let too_long = "n".repeat(257);
        for name in ["", "  ", " a", "a ", too_long.as_str()] {
            assert!(
                matches!(validate_name(name), Err(Error::InvalidName { name: rejected, .. }) if rejected == name),
                "{name:?} should be rejected"
            );
        }
    }

    #[test]
    fn validate_name_rejects_reference_syntax_and_control_characters() {
        for name in ["a:b", "a{b", "x}", "a\nb", "tab\there"] {
            assert!(validate_name(name).is_err(), "{name:?} should be rejected");
        }
    }

    #[test]
    fn invalid_name_errors_say_what_is_wrong_and_how_to_fix_it() {
        let message = |name: &str| validate_name(name).map_err(|error| error.to_string());

        assert_eq!(
            message("a:b"),
            Err("invalid variable name `a:b`: the name contains `:`, which would make \
                 `$VAR_REF{{name:start:length}}` ambiguous; use another separator such as `/` or `_`"
                .to_owned())
        );
        assert_eq!(
            message("a\nb"),
            Err("invalid variable name `a\nb`: the name contains the control character U+000A; remove it"
                .to_owned())
        );
        assert_eq!(
            message(" a"),
            Err(
                "invalid variable name ` a`: the name starts or ends with whitespace; trim it"
                    .to_owned()
            )
        );
    }

    #[test]
    fn var_types_round_trip_through_their_wire_names() {
        let names = [
            "RULE",
            "ToolCallResult",
            "ToolCallArgs",
            "MessageCache",
            "LLMAdd",
            "USER_ADD",
        ];
        for (var_type, name) in VarType::ALL.into_iter().zip(names) {
            assert_eq!(var_type.as_str(), name);
            assert_eq!(var_type.to_string(), name);
            assert_eq!(name.parse::<VarType>(), Ok(var_type));
            assert_eq!(
                serde_json::to_value(var_type).ok(),
                Some(serde_json::json!(name))
            );
            assert_eq!(
                serde_json::from_value::<VarType>(serde_json::json!(name)).ok(),
                Some(var_type)
            );
        }
    }

    #[test]
    fn unknown_var_types_are_rejected_with_the_accepted_names() {
        let error = "rule".parse::<VarType>();

        assert_eq!(
            error,
            Err(Error::UnknownType {
                value: "rule".to_owned()
            })
        );
        assert_eq!(
            error.map_err(|error| error.to_string()),
            Err("unknown variable type `rule`: expected one of RULE, ToolCallResult, ToolCallArgs, \
                 MessageCache, LLMAdd, USER_ADD"
                .to_owned())
        );
    }

    #[test]
    fn value_kinds_serialize_in_lowercase() {
        assert_eq!(
            serde_json::to_value(ValueKind::Text).ok(),
            Some(serde_json::json!("text"))
        );
        assert_eq!(
            serde_json::to_value(ValueKind::Json).ok(),
            Some(serde_json::json!("json"))
        );
    }

    #[test]
    fn timestamps_format_as_rfc3339_with_microseconds() {
        assert_eq!(Timestamp(0).to_rfc3339(), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            Timestamp(1_700_000_000_123_456).to_rfc3339(),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            Timestamp(u64::MAX).to_rfc3339(),
            "9999-12-31T23:59:59.999999Z"
        );
    }

    #[test]
    fn the_system_clock_never_repeats_or_goes_back() {
        let clock = SystemClock::new();
        let readings: Vec<Timestamp> = (0..10_000).map(|_| clock.now()).collect();

        assert!(readings.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(
            readings
                .first()
                .is_some_and(|first| first.0 > 1_600_000_000_000_000)
        );
    }

    #[test]
    fn the_manual_clock_starts_where_told_and_ticks_by_one() {
        let clock = ManualClock::new(40);

        assert_eq!(
            [clock.now(), clock.now(), clock.now()],
            [Timestamp(40), Timestamp(41), Timestamp(42)]
        );
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
            assert_eq!(store.eviction_index.len(), evictable);
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
