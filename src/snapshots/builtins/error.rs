//! Why a built-in call or a JSON Patch operation was refused: one variant per mistake, each
//! carrying the offending value, its text the one the call's error shows.

use crate::json::{nesting, path};

/// Why a built-in call or a JSON Patch operation was refused: each names the offending value
/// (a value as `builtins::show` writes it) and says how to fix the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{usage} takes {expected} argument{}, not {found}", if *expected == 1 { "" } else { "s" })]
    Arity {
        usage: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("ASSIGN(path, object) or ASSIGN(path, key, value) takes 2 or 3 arguments, not {found}")]
    AssignArity { found: usize },
    #[error("{usage}: the amount must be a number, not {amount}")]
    NotAnAmount { usage: &'static str, amount: String },
    #[error("TIME(time): the time must be text such as \"2024-10-20T15:30:00Z\", not {time}")]
    TimeNotText { time: String },
    #[error("TIME(time): the time is empty")]
    EmptyTime,
    #[error("{name} is a syntax, not a callable function")]
    NotCallable { name: &'static str },
    #[error("a key must be text or a number, not {key}")]
    Key { key: String },
    #[error("the path must be text such as \"角色.名字\", not {path}")]
    PathNotText { path: String },
    #[error("path `{path}` has an empty segment; separate names with single dots")]
    EmptySegment { path: String },
    #[error("path `{path}` has a `[` that is not closed")]
    Unclosed { path: String },
    #[error("path `{path}`: expected `]` after the quoted key")]
    QuotedKeyUnclosed { path: String },
    #[error("path `{path}` has an empty `[]`")]
    EmptyBrackets { path: String },
    #[error("path `{path}`: write a `.` after `]`")]
    NoDotAfterBracket { path: String },
    #[error("path `{path}` ends with a dot")]
    TrailingDot { path: String },
    #[error("the path is empty: name a field such as \"角色.名字\"")]
    EmptyPath,
    #[error("path `{shown}…` has {segments} segments: a snapshot {}", nesting::TooDeep { depth: *segments })]
    TooManySegments { shown: String, segments: usize },
    #[error(transparent)]
    Dotted(#[from] path::Error),
    #[error("writing {value} at `{path}` would make the snapshot {too_deep}")]
    TooDeep {
        value: String,
        path: String,
        too_deep: nesting::TooDeep,
    },
    #[error("`{path}` holds {found}, not a number; SET it to a number first")]
    NotANumber { path: String, found: String },
    #[error("`{path}` holds {found}, not an array; APPEND adds to arrays")]
    AppendToNonArray { path: String, found: &'static str },
    #[error(
        "`{path}` holds {found}, not an array; REMOVE takes items out of arrays (UNSET deletes a field)"
    )]
    RemoveFromNonArray { path: String, found: &'static str },
    #[error("`{path}` has no item {item} (and no such index)")]
    NoSuchItem { path: String, item: String },
    #[error("ASSIGN merges an object into `{path}`, but got {value}; use SET to replace it")]
    AssignNotObject { path: String, value: String },
    #[error(
        "`{path}` holds {found}; ASSIGN merges into objects and appends to arrays (SET replaces)"
    )]
    AssignInto { path: String, found: &'static str },
    #[error("`{op}` on `{path}` needs a `value`")]
    NeedsValue { op: String, path: String },
    #[error("remove: nothing at `{path}`")]
    NothingToRemove { path: String },
    #[error("move to `{path}` needs a `from`")]
    NeedsFrom { path: String },
    #[error("move: nothing at `{from}`")]
    NothingToMove { from: String },
    #[error("unknown JSON Patch op `{op}`: use replace, add, remove, delta, insert or move")]
    UnknownOp { op: String },
    #[error("`{path}`: index `{index}` is not within the array ({items} items)")]
    IndexOutside {
        path: String,
        index: String,
        items: usize,
    },
    #[error("insert: `{path}` exists already; use replace")]
    Exists { path: String },
}
