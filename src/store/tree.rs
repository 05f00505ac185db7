//! How snapshot and template values are laid out in a store: as trees of content-addressed
//! nodes. Every object, array or string whose JSON is 64 bytes or longer becomes a node keyed by
//! the first 128 bits of its SHA-256 (hex), and its parent refers to it as `{"__vmRef": "<hash>"}`
//! — seed 002's value pool, applied at every level. Two snapshots that differ in one field share
//! every node off that field's path, so a long chat whose state barely changes stays small.
//!
//! Encoding writes JSON text directly (no intermediate values) and remembers the nodes it has
//! made, so the unchanged subtrees of consecutive snapshots cost a map lookup, not a hash. An
//! object the user wrote with the single key `__vmRef` (or `__vmEscaped`) is wrapped as
//! `{"__vmEscaped": …}` so that it never reads back as a reference.

use std::collections::HashMap;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Values this long (as JSON, in bytes) or longer become nodes of their own.
const NODE_BYTES: usize = 64;
pub const REFERENCE: &str = "__vmRef";
const ESCAPED: &str = "__vmEscaped";
/// Nesting deeper than this is refused on reading (`serde_json` refuses deeper text anyway).
const MAX_DEPTH: usize = 256;

/// Where a new snapshot belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotKey {
    pub id: String,
    pub chat_file: String,
    pub message_id: Option<u64>,
    pub swipe_id: Option<u64>,
    /// Microseconds since 1970; `None` is now (an import keeps the original time).
    pub created_at: Option<i64>,
}

/// Snapshots laid out as nodes, ready for one transaction.
#[derive(Debug, Default)]
pub struct Encoded {
    /// Distinct nodes `(hash, body)` made by this batch; the store may hold some already.
    pub nodes: Vec<(String, String)>,
    /// Each snapshot with its root node.
    pub snapshots: Vec<(SnapshotKey, String)>,
    made: HashMap<String, usize, foldhash::fast::RandomState>,
}

impl Encoded {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.snapshots.is_empty()
    }

    /// Lays out one snapshot.
    pub fn add(&mut self, key: SnapshotKey, value: &Value) {
        let root = self.root(value);
        self.snapshots.push((key, root));
    }

    /// Lays out a value; returns its root node's hash (the root is always a node).
    pub fn root(&mut self, value: &Value) -> String {
        let mut body = Vec::new();
        self.write(value, &mut body);
        let body = String::from_utf8(body).unwrap_or_default();
        if let Some(hash) = reference_in(&body) {
            return hash.to_owned();
        }
        self.node(body)
    }

    fn node(&mut self, body: String) -> String {
        if let Some(index) = self.made.get(&body) {
            return self.nodes[*index].0.clone();
        }
        let digest = Sha256::digest(body.as_bytes());
        let hash = hex(&digest[..16]);
        self.made.insert(body.clone(), self.nodes.len());
        self.nodes.push((hash.clone(), body));
        hash
    }

    /// Writes `value` into `out`: inline when short, else (cut back out) as a reference to a
    /// node.
    fn write(&mut self, value: &Value, out: &mut Vec<u8>) {
        let start = out.len();
        match value {
            Value::Object(members) => {
                let escaped = members.len() == 1
                    && (members.contains_key(REFERENCE) || members.contains_key(ESCAPED));
                if escaped {
                    out.extend_from_slice(b"{\"__vmEscaped\":");
                }
                out.push(b'{');
                for (index, (key, child)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    write_scalar(out, key.as_str());
                    out.push(b':');
                    self.write(child, out);
                }
                out.push(b'}');
                if escaped {
                    out.push(b'}');
                }
            }
            Value::Array(items) => {
                out.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    self.write(item, out);
                }
                out.push(b']');
            }
            Value::String(text) => write_scalar(out, text.as_str()),
            scalar => {
                write_scalar(out, scalar);
                return;
            }
        }
        if out.len() - start < NODE_BYTES {
            return;
        }
        let body = out.split_off(start);
        let hash = self.node(String::from_utf8(body).unwrap_or_default());
        out.extend_from_slice(b"{\"__vmRef\":\"");
        out.extend_from_slice(hash.as_bytes());
        out.extend_from_slice(b"\"}");
    }
}

fn write_scalar(out: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    // Writing a JSON scalar into memory cannot fail.
    serde_json::to_writer(out, value).ok();
}

/// The hash when `body` is exactly one reference.
fn reference_in(body: &str) -> Option<&str> {
    body.strip_prefix("{\"__vmRef\":\"")?.strip_suffix("\"}")
}

/// Hexadecimal digits of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut text, byte| {
            write!(text, "{byte:02x}").ok();
            text
        })
}

/// Reads a tree back from its root; `body` fetches a node's text by hash.
pub fn decode<E>(
    root: &str,
    body: &mut impl FnMut(&str) -> Result<String, E>,
    corrupt: impl Fn(String) -> E + Copy,
) -> Result<Value, E> {
    let value = parse(root, body, corrupt)?;
    resolve(value, body, corrupt, 0)
}

fn parse<E>(
    hash: &str,
    body: &mut impl FnMut(&str) -> Result<String, E>,
    corrupt: impl Fn(String) -> E,
) -> Result<Value, E> {
    let text = body(hash)?;
    serde_json::from_str(&text).map_err(|error| corrupt(format!("snapshot node {hash}: {error}")))
}

fn resolve<E>(
    value: Value,
    body: &mut impl FnMut(&str) -> Result<String, E>,
    corrupt: impl Fn(String) -> E + Copy,
    depth: usize,
) -> Result<Value, E> {
    if depth > MAX_DEPTH {
        return Err(corrupt("a snapshot nests too deep".to_owned()));
    }
    match value {
        Value::Object(mut members) if members.len() == 1 => {
            if let Some(Value::String(hash)) = members.get(REFERENCE) {
                let inner = parse(&hash.clone(), body, corrupt)?;
                return resolve(inner, body, corrupt, depth + 1);
            }
            if let Some(Value::Object(_)) = members.get(ESCAPED)
                && let Some(Value::Object(inner)) = members.shift_remove(ESCAPED)
            {
                return resolve_members(inner, body, corrupt, depth);
            }
            resolve_members(members, body, corrupt, depth)
        }
        Value::Object(members) => resolve_members(members, body, corrupt, depth),
        Value::Array(items) => items
            .into_iter()
            .map(|item| resolve(item, body, corrupt, depth + 1))
            .collect::<Result<_, E>>()
            .map(Value::Array),
        scalar => Ok(scalar),
    }
}

fn resolve_members<E>(
    members: Map<String, Value>,
    body: &mut impl FnMut(&str) -> Result<String, E>,
    corrupt: impl Fn(String) -> E + Copy,
    depth: usize,
) -> Result<Value, E> {
    members
        .into_iter()
        .map(|(key, child)| Ok((key, resolve(child, body, corrupt, depth + 1)?)))
        .collect::<Result<Map<String, Value>, E>>()
        .map(Value::Object)
}

/// The hashes a node's body refers to.
pub fn references(body: &str, found: &mut Vec<String>) {
    if !body.contains(REFERENCE) {
        return;
    }
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        collect(&value, found);
    }
}

fn collect(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            if members.len() == 1
                && let Some(Value::String(hash)) = members.get(REFERENCE)
            {
                found.push(hash.clone());
                return;
            }
            members.values().for_each(|child| collect(child, found));
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn round_trip(value: &Value) -> Value {
        let mut encoded = Encoded::new();
        let root = encoded.root(value);
        let nodes: HashMap<String, String> = encoded.nodes.into_iter().collect();
        decode(
            &root,
            &mut |hash: &str| {
                nodes
                    .get(hash)
                    .cloned()
                    .ok_or_else(|| format!("missing {hash}"))
            },
            |message| message,
        )
        .unwrap()
    }

    #[test]
    fn values_round_trip_including_lookalikes_of_references() {
        for value in [
            json!({"a": "x".repeat(100), "b": [1, 2, {"c": "y".repeat(70)}], "n": null}),
            json!({"odd": {"__vmRef": "not a reference"}, "odder": {"__vmEscaped": {"a": "z".repeat(80)}}}),
            json!({"__vmRef": "abc"}),
            json!("a long string at the root, longer than sixty-four bytes in all......"),
            json!(42),
            json!([]),
        ] {
            assert_eq!(round_trip(&value), value);
        }
    }

    #[test]
    fn unchanged_subtrees_are_made_once() {
        let mut encoded = Encoded::new();
        let mut state = json!({"world": {"description": "d".repeat(200)}, "hero": {"gold": 1, "name": "Zhang San the Brave", "bio": "b".repeat(100)}});
        encoded.root(&state);
        let first = encoded.nodes.len();
        state["hero"]["gold"] = json!(2);
        encoded.root(&state);
        assert_eq!(
            encoded.nodes.len(),
            first + 2,
            "a new hero node and a new root"
        );
    }
}
