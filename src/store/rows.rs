//! What the stored rows mean, whichever database holds them: which values go to the value pool
//! and under which key, how a variable's columns become a [`Record`], when removals are pruned,
//! and the walk over snapshot tree nodes that keeps their reference counts (writing the nodes a
//! batch adds, freeing those nothing refers to any more). Each store supplies the statements
//! through [`NodeTable`]; the rules live here once.

use std::collections::HashMap;
use std::sync::Arc;

use super::tree::{self, Encoded};
use crate::vars::{Record, Timestamp, ValueKind, VarType};

/// Values this long (in characters) or longer go to the value pool.
const POOLED_CHARS: usize = 64;

/// Removals are pruned in steps of this many changes; a process further behind reloads in full.
pub(super) const REMOVAL_WINDOW: u64 = 1_000;

/// What `SnapshotUpdate` leaves as a floor's summary: the calls no longer made the state.
pub(super) const EDITED: &str = "edited in place (SnapshotUpdate)";

/// The value pool's key of a value that goes to the pool (its SHA-256 in hex); `None` for a
/// value short enough to be stored inline.
pub(super) fn pool_key(value: &str) -> Option<String> {
    value
        .chars()
        .nth(POOLED_CHARS - 1)
        .map(|_| crate::digest::sha256_hex(value.as_bytes()))
}

/// The sequence below which a commit reaching `sequence` prunes removals, when it does.
pub(super) fn removals_pruned_below(sequence: u64) -> Option<u64> {
    sequence
        .is_multiple_of(REMOVAL_WINDOW)
        .then(|| sequence - REMOVAL_WINDOW)
}

/// A timestamp as the stores keep it (microseconds).
pub(super) fn micros(timestamp: Timestamp) -> i64 {
    i64::try_from(timestamp.0).unwrap_or(i64::MAX)
}

/// A stored count or sequence (never negative when written by us).
pub(super) fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A count or sequence as the stores keep it.
pub(super) fn stored_count(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(super) fn kind_name(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::Text => "text",
        ValueKind::Json => "json",
    }
}

/// The tags as their column holds them (JSON text).
pub(super) fn tags_text(tags: &[String]) -> String {
    serde_json::to_string(tags).unwrap_or_else(|_| "[]".to_owned())
}

/// A variable's columns as read.
pub(super) struct VariableRow {
    pub(super) name: String,
    pub(super) value: String,
    pub(super) kind: String,
    pub(super) var_type: String,
    pub(super) desc: Option<String>,
    pub(super) tags: String,
    pub(super) keep: bool,
    pub(super) created: i64,
    pub(super) updated: i64,
    pub(super) last_visited: i64,
    pub(super) reference_count: i64,
}

impl VariableRow {
    /// The record; the error names the column that does not parse.
    pub(super) fn into_record(self) -> Result<Record, String> {
        let kind = match self.kind.as_str() {
            "json" => ValueKind::Json,
            _ => ValueKind::Text,
        };
        let var_type: VarType = self
            .var_type
            .parse()
            .map_err(|error: crate::vars::Error| format!("var_type: {error}"))?;
        let tags: Vec<String> =
            serde_json::from_str(&self.tags).map_err(|error| format!("tags: {error}"))?;
        let timestamp = |value: i64| Timestamp(count(value));
        Ok(Record {
            name: Arc::from(self.name),
            value: Arc::from(self.value),
            kind,
            var_type,
            desc: self.desc,
            tags,
            keep: self.keep,
            created: timestamp(self.created),
            updated: timestamp(self.updated),
            last_visited: timestamp(self.last_visited),
            reference_count: count(self.reference_count),
        })
    }
}

/// The statements the node walks need, run inside the caller's transaction. A node's count is
/// one per row whose root it is (kept by the database's triggers) plus one per reference in the
/// body of another stored node (kept by the walks).
pub(super) trait NodeTable {
    type Error;
    /// Stores a node the table does not hold, with `refs` references; `false` when it held it.
    fn insert(&mut self, hash: &str, body: &str, refs: i64) -> Result<bool, Self::Error>;
    /// Adds a reference to a stored node; `false` when there is no such node.
    fn add_reference(&mut self, hash: &str) -> Result<bool, Self::Error>;
    /// The nodes whose count is zero or less.
    fn unreferenced(&mut self) -> Result<Vec<String>, Self::Error>;
    /// Deletes a node whose count is zero or less and returns its body.
    fn delete_unreferenced(&mut self, hash: &str) -> Result<Option<String>, Self::Error>;
    /// Takes a reference away; returns the count left (`None` when there is no such node).
    fn release(&mut self, hash: &str) -> Result<Option<i64>, Self::Error>;
    /// An error for a batch laid out against nodes that are gone.
    fn gone(message: String) -> Self::Error;
}

/// Stores the nodes of the batch reachable from `roots` that the table does not hold, and
/// counts their references; returns how many it stored and their bytes. A root gets no count
/// here: the row that names it adds one. Nodes the batch laid out but no root reaches are not
/// stored.
pub(super) fn write_nodes<'a, Table: NodeTable>(
    table: &mut Table,
    nodes: &Encoded,
    roots: impl IntoIterator<Item = &'a str>,
) -> Result<(u64, u64), Table::Error> {
    let bodies: HashMap<&str, &str> = nodes
        .nodes
        .iter()
        .map(|(hash, body)| (hash.as_str(), body.as_str()))
        .collect();
    let (mut count, mut bytes) = (0, 0);
    // (hash, whether a new node refers to it): the roots first, then what new nodes refer to.
    let mut pending: Vec<(String, bool)> = roots
        .into_iter()
        .map(|root| (root.to_owned(), false))
        .collect();
    let mut children = Vec::new();
    while let Some((hash, referred)) = pending.pop() {
        let added = match bodies.get(hash.as_str()) {
            Some(body) => table.insert(&hash, body, i64::from(referred))?,
            None => false,
        };
        if added {
            let body = bodies[hash.as_str()];
            count += 1;
            bytes += body.len() as u64;
            tree::references(body, &mut children);
            pending.extend(children.drain(..).map(|child| (child, true)));
        } else if referred && !table.add_reference(&hash)? {
            // Laid out against an earlier batch whose nodes are gone (the chat was deleted
            // while it was being processed): storing the reference would leave it dangling.
            // (A root that is gone fails the rows' foreign key.)
            return Err(Table::gone(format!(
                "snapshot node {hash} is no longer stored; process the chat again"
            )));
        }
    }
    Ok((count, bytes))
}

/// Frees every node nothing refers to any more, and in turn the nodes only those referred to.
pub(super) fn free_unreferenced<Table: NodeTable>(table: &mut Table) -> Result<(), Table::Error> {
    let mut pending = table.unreferenced()?;
    let mut children = Vec::new();
    while let Some(hash) = pending.pop() {
        let Some(body) = table.delete_unreferenced(&hash)? else {
            continue;
        };
        tree::references(&body, &mut children);
        for child in children.drain(..) {
            if table.release(&child)?.is_some_and(|left| left <= 0) {
                pending.push(child);
            }
        }
    }
    Ok(())
}
