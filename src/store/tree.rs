//! How snapshot and template values are laid out in a store: as trees of content-addressed
//! nodes. Every object, array or string whose JSON is 64 bytes or longer becomes a node keyed by
//! the first 128 bits of its SHA-256 (hex), and its parent refers to it as `{"__vmRef": "<hash>"}`
//! — a value pool, applied at every level. Two snapshots that differ in one field share
//! every node off that field's path, so a long chat whose state barely changes stays small.
//!
//! A container with more than [`CHUNK`] children is cut into chunks of [`CHUNK`] children, and
//! the chunks are joined by a spine (`{"__vmJoin": [<chunk>, …]}`, itself cut the same way when
//! long), so no node grows with the container: appending an item to a long array, or a key to a
//! large object, rewrites its last chunk and one spine node per level, not the whole container.
//!
//! An [`Encoded`] batch remembers how it laid out the last value it was given (a mirror of
//! fragments), so a chat processed message by message re-encodes only the paths each message
//! [`Changed`]: the cost of a snapshot follows what changed, not the size of the state.
//!
//! An object the user wrote with the single key `__vmRef`, `__vmJoin` (or `__vmEscaped`) is
//! wrapped as `{"__vmEscaped": …}` so that it never reads back as a reference or a spine.
//! Depth is checked both ways: a value nesting deeper than [`nesting::MAX_DEPTH`] is refused on
//! writing, and reading refuses (with a message, never a crash) anything deeper than twice that.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::json::nesting::{self, TooDeep};

/// Values this long (as JSON, in bytes) or longer become nodes of their own.
const NODE_BYTES: usize = 64;
/// Children per chunk, and parts per spine node: a container with more children than this is
/// stored as a spine of chunks, so a node holds at most this many children's fragments.
pub const CHUNK: usize = 16;
pub const REFERENCE: &str = "__vmRef";
const ESCAPED: &str = "__vmEscaped";
const JOIN: &str = "__vmJoin";
/// Reading refuses values nesting deeper than this: every value a write accepts reads back.
const READ_DEPTH: usize = 2 * nesting::MAX_DEPTH;

/// Where a new snapshot belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotKey {
    pub id: String,
    pub chat_file: String,
    pub message_id: Option<u64>,
    pub swipe_id: Option<u64>,
    /// Microseconds since 1970; `None` is now (an import keeps the original time).
    pub created_at: Option<i64>,
    /// What its message changed, in one line (for the chat's floor list).
    pub summary: Option<String>,
    /// The bytes of the nodes laid out for it that earlier snapshots of its batch did not share.
    pub stored_bytes: Option<u64>,
}

/// What changed in a value since it was last laid out: the paths written, or everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changed {
    everything: bool,
    paths: Vec<Vec<String>>,
}

impl Changed {
    pub fn new() -> Self {
        Self::default()
    }

    /// The value at `segments` (and everything below it) may have changed. A new array item or
    /// object member is named by its own path; a removal names the container it was removed
    /// from (an array's later items move).
    pub fn path(&mut self, segments: &[String]) {
        if !self.everything {
            self.paths.push(segments.to_vec());
        }
    }

    /// Anything may have changed (a user function replaced the whole value).
    pub fn everything(&mut self) {
        self.everything = true;
        self.paths.clear();
    }

    /// Whether anything may have changed (no paths are known).
    pub fn is_everything(&self) -> bool {
        self.everything
    }

    /// The paths written, in the order they were; empty when [`Changed::is_everything`].
    pub fn paths(&self) -> &[Vec<String>] {
        &self.paths
    }
}

/// The changed paths as a tree: `whole` where a path ends.
#[derive(Debug, Default)]
struct Dirty {
    whole: bool,
    below: HashMap<String, Dirty>,
}

impl Dirty {
    fn of(changed: &Changed) -> Self {
        let mut root = Self {
            whole: changed.everything,
            below: HashMap::new(),
        };
        for path in &changed.paths {
            let mut node = &mut root;
            for segment in path {
                if node.whole {
                    break;
                }
                node = node.below.entry(segment.clone()).or_default();
            }
            node.whole = true;
            node.below.clear();
        }
        root
    }
}

/// How one value was laid out: the text its parent writes for it (inline JSON or a reference),
/// and its children's layouts.
#[derive(Debug)]
struct Mirror {
    fragment: String,
    shape: Shape,
}

/// A container's layout is boxed: most values are scalars, and a chat's long arrays hold many.
#[derive(Debug)]
enum Shape {
    Scalar,
    Array(Box<ArrayLayout>),
    Object(Box<ObjectLayout>),
}

/// `spine[0]` holds the chunks' fragments, `spine[1]` the fragments of the spine nodes joining
/// them, and so on; empty when the container is small enough to be one node.
#[derive(Debug)]
struct ArrayLayout {
    items: Vec<Mirror>,
    spine: Vec<Vec<String>>,
}

#[derive(Debug)]
struct ObjectLayout {
    members: Vec<(String, Mirror)>,
    positions: HashMap<String, usize>,
    spine: Vec<Vec<String>>,
}

/// Snapshots laid out as nodes, ready for one transaction.
#[derive(Debug, Default)]
pub struct Encoded {
    /// Distinct nodes `(hash, body)` made by this batch; the store may hold some already.
    pub nodes: Vec<(String, String)>,
    /// Each snapshot with its root node.
    pub snapshots: Vec<(SnapshotKey, String)>,
    made: HashSet<String, foldhash::fast::RandomState>,
    /// The layout of the last value added, for [`Encoded::add_changed`].
    last: Option<Mirror>,
}

impl Encoded {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.snapshots.is_empty()
    }

    /// Lays out one snapshot.
    pub fn add(&mut self, key: SnapshotKey, value: &Value) -> Result<(), TooDeep> {
        let root = self.root(value)?;
        self.snapshots.push((key, root));
        Ok(())
    }

    /// Lays out one snapshot that differs from the last one added (in this batch or an
    /// earlier one, see [`Encoded::committed`]) only where `changed` says: only those paths
    /// are encoded again.
    pub fn add_changed(
        &mut self,
        key: SnapshotKey,
        value: &Value,
        changed: &Changed,
    ) -> Result<(), TooDeep> {
        let mirror = match self.last.take() {
            Some(mut mirror) => {
                self.update(&mut mirror, value, &Dirty::of(changed), 0)?;
                mirror
            }
            None => self.build(value, 0)?,
        };
        let root = self.root_of(&mirror);
        self.last = Some(mirror);
        self.snapshots.push((key, root));
        Ok(())
    }

    /// The batch has been stored: forget its nodes and snapshots, keep the last layout.
    pub fn committed(&mut self) {
        self.nodes.clear();
        self.snapshots.clear();
        self.made.clear();
    }

    /// Lays out a value; returns its root node's hash (the root is always a node).
    pub fn root(&mut self, value: &Value) -> Result<String, TooDeep> {
        let mirror = self.build(value, 0)?;
        let root = self.root_of(&mirror);
        self.last = Some(mirror);
        Ok(root)
    }

    fn root_of(&mut self, mirror: &Mirror) -> String {
        match reference_in(&mirror.fragment) {
            Some(hash) => hash.to_owned(),
            None => self.node(mirror.fragment.clone()),
        }
    }

    fn node(&mut self, body: String) -> String {
        let digest = Sha256::digest(body.as_bytes());
        let hash = hex(&digest[..16]);
        if self.made.insert(hash.clone()) {
            self.nodes.push((hash.clone(), body));
        }
        hash
    }

    /// How a parent writes a child whose JSON is `body`: inline when short, else a reference.
    fn fragment(&mut self, body: String) -> String {
        if body.len() < NODE_BYTES {
            return body;
        }
        let hash = self.node(body);
        format!("{{\"{REFERENCE}\":\"{hash}\"}}")
    }

    /// Lays out `value`, found `depth` containers below the root.
    fn build(&mut self, value: &Value, depth: usize) -> Result<Mirror, TooDeep> {
        let shape = match value {
            Value::Array(items) => {
                check_depth(depth)?;
                Shape::Array(Box::new(ArrayLayout {
                    items: items
                        .iter()
                        .map(|item| self.build(item, depth + 1))
                        .collect::<Result<_, _>>()?,
                    spine: Vec::new(),
                }))
            }
            Value::Object(members) => {
                check_depth(depth)?;
                let members = members
                    .iter()
                    .map(|(key, child)| Ok((key.clone(), self.build(child, depth + 1)?)))
                    .collect::<Result<Vec<_>, TooDeep>>()?;
                Shape::Object(Box::new(ObjectLayout {
                    positions: positions(&members),
                    members,
                    spine: Vec::new(),
                }))
            }
            Value::String(text) => {
                let fragment = self.fragment(scalar(text.as_str()));
                return Ok(Mirror {
                    fragment,
                    shape: Shape::Scalar,
                });
            }
            other => {
                return Ok(Mirror {
                    fragment: scalar(other),
                    shape: Shape::Scalar,
                });
            }
        };
        let mut mirror = Mirror {
            fragment: String::new(),
            shape,
        };
        self.finish(&mut mirror, None);
        Ok(mirror)
    }

    /// Lays out `value` again where `dirty` says it changed, reusing the rest of `mirror`.
    fn update(
        &mut self,
        mirror: &mut Mirror,
        value: &Value,
        dirty: &Dirty,
        depth: usize,
    ) -> Result<(), TooDeep> {
        if dirty.whole {
            *mirror = self.build(value, depth)?;
            return Ok(());
        }
        let mut touched = BTreeSet::new();
        let reused = match (&mut mirror.shape, value) {
            (Shape::Array(layout), Value::Array(items)) => {
                self.update_items(&mut layout.items, items, dirty, depth, &mut touched)?
            }
            (Shape::Object(layout), Value::Object(members)) => {
                let ObjectLayout {
                    members: laid,
                    positions,
                    ..
                } = &mut **layout;
                self.update_members(laid, positions, members, dirty, depth, &mut touched)?
            }
            _ => false,
        };
        if !reused {
            *mirror = self.build(value, depth)?;
        } else if !touched.is_empty() {
            self.finish(mirror, Some(&touched));
        }
        Ok(())
    }

    /// Updates an array's changed items and lays out the appended ones; `false` when the
    /// array must be laid out again whole (it shrank, or a change is not at an index).
    fn update_items(
        &mut self,
        laid: &mut Vec<Mirror>,
        items: &[Value],
        dirty: &Dirty,
        depth: usize,
        touched: &mut BTreeSet<usize>,
    ) -> Result<bool, TooDeep> {
        if items.len() < laid.len() {
            return Ok(false);
        }
        for (key, below) in &dirty.below {
            let Ok(index) = key.parse::<usize>() else {
                return Ok(false);
            };
            if index < laid.len() {
                self.update(&mut laid[index], &items[index], below, depth + 1)?;
                touched.insert(index);
            }
        }
        for (index, item) in items.iter().enumerate().skip(laid.len()) {
            laid.push(self.build(item, depth + 1)?);
            touched.insert(index);
        }
        Ok(true)
    }

    /// Updates an object's changed members and lays out the added ones (new keys come last);
    /// `false` when the object must be laid out again whole (a member was removed).
    fn update_members(
        &mut self,
        laid: &mut Vec<(String, Mirror)>,
        positions: &mut HashMap<String, usize>,
        members: &Map<String, Value>,
        dirty: &Dirty,
        depth: usize,
        touched: &mut BTreeSet<usize>,
    ) -> Result<bool, TooDeep> {
        if members.len() < laid.len() {
            return Ok(false);
        }
        for (key, below) in &dirty.below {
            let Some(child) = members.get(key) else {
                return Ok(false);
            };
            if let Some(&index) = positions.get(key) {
                self.update(&mut laid[index].1, child, below, depth + 1)?;
                touched.insert(index);
            }
        }
        let added = members.len() - laid.len();
        let mut new: Vec<(&String, &Value)> = members.iter().rev().take(added).collect();
        new.reverse();
        for (key, child) in new {
            if positions.contains_key(key) {
                return Ok(false);
            }
            touched.insert(laid.len());
            positions.insert(key.clone(), laid.len());
            laid.push((key.clone(), self.build(child, depth + 1)?));
        }
        Ok(true)
    }

    /// Writes a container's fragment from its children's: one node when it is small, else
    /// chunks and a spine, made again only where `touched` children are (all when `None`).
    fn finish(&mut self, mirror: &mut Mirror, touched: Option<&BTreeSet<usize>>) {
        let (children, spine) = match &mut mirror.shape {
            Shape::Scalar => return,
            Shape::Array(layout) => {
                let ArrayLayout { items, spine } = &mut **layout;
                (Children::Items(items), spine)
            }
            Shape::Object(layout) => {
                let ObjectLayout { members, spine, .. } = &mut **layout;
                (Children::Members(members), spine)
            }
        };
        let count = children.len();
        if count <= CHUNK {
            spine.clear();
            let body = children.write(0..count);
            mirror.fragment = self.fragment(body);
            return;
        }
        let mut changed: BTreeSet<usize> = touched
            .map(|touched| touched.iter().map(|index| index / CHUNK).collect())
            .unwrap_or_default();
        let mut below = count;
        let mut level = 0;
        loop {
            let parts = below.div_ceil(CHUNK);
            if spine.len() <= level {
                spine.push(Vec::new());
            }
            let before = spine[level].len();
            let redo: Vec<usize> = if touched.is_none() {
                (0..parts).collect()
            } else {
                changed
                    .iter()
                    .copied()
                    .filter(|index| *index < before.min(parts))
                    .chain(before.min(parts)..parts)
                    .collect()
            };
            spine[level].truncate(parts);
            for &index in &redo {
                let range = index * CHUNK..below.min((index + 1) * CHUNK);
                let body = if level == 0 {
                    children.write(range)
                } else {
                    join(&spine[level - 1][range])
                };
                let fragment = self.fragment(body);
                if index < spine[level].len() {
                    spine[level][index] = fragment;
                } else {
                    spine[level].push(fragment);
                }
            }
            if parts <= CHUNK {
                spine.truncate(level + 1);
                break;
            }
            changed = redo.iter().map(|index| index / CHUNK).collect();
            below = parts;
            level += 1;
        }
        let body = join(&spine[level]);
        mirror.fragment = self.fragment(body);
    }
}

/// A container's children, to write a run of them as JSON.
enum Children<'a> {
    Items(&'a [Mirror]),
    Members(&'a [(String, Mirror)]),
}

impl Children<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Items(items) => items.len(),
            Self::Members(members) => members.len(),
        }
    }

    /// `[…]` or `{…}` of the children in `range`, escaped when it would read as a reference.
    fn write(&self, range: Range<usize>) -> String {
        let mut out = String::new();
        match self {
            Self::Items(items) => {
                out.push('[');
                for (index, item) in items[range].iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    out.push_str(&item.fragment);
                }
                out.push(']');
            }
            Self::Members(members) => {
                let members = &members[range];
                let escaped = members.len() == 1 && is_reserved(&members[0].0);
                if escaped {
                    out.push_str("{\"");
                    out.push_str(ESCAPED);
                    out.push_str("\":");
                }
                out.push('{');
                for (index, (key, member)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    out.push_str(&scalar(key.as_str()));
                    out.push(':');
                    out.push_str(&member.fragment);
                }
                out.push('}');
                if escaped {
                    out.push('}');
                }
            }
        }
        out
    }
}

fn join(parts: &[String]) -> String {
    format!("{{\"{JOIN}\":[{}]}}", parts.join(","))
}

fn positions(members: &[(String, Mirror)]) -> HashMap<String, usize> {
    members
        .iter()
        .enumerate()
        .map(|(index, (key, _))| (key.clone(), index))
        .collect()
}

fn is_reserved(key: &str) -> bool {
    key == REFERENCE || key == ESCAPED || key == JOIN
}

/// A container `depth` levels below the root makes the value at least `depth + 1` deep.
fn check_depth(depth: usize) -> Result<(), TooDeep> {
    if depth >= nesting::MAX_DEPTH {
        Err(TooDeep { depth: depth + 1 })
    } else {
        Ok(())
    }
}

fn scalar(value: &(impl serde::Serialize + ?Sized)) -> String {
    // Writing a JSON scalar into memory cannot fail.
    serde_json::to_string(value).unwrap_or_default()
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

/// Resolves references, spines and escapes in a value found `depth` containers below the root.
/// A reference or a spine is not a level of the value: only containers count.
fn resolve<E>(
    value: Value,
    body: &mut impl FnMut(&str) -> Result<String, E>,
    corrupt: impl Fn(String) -> E + Copy,
    depth: usize,
) -> Result<Value, E> {
    match value {
        Value::Object(mut members) if members.len() == 1 => {
            if let Some(Value::String(hash)) = members.get(REFERENCE) {
                let inner = parse(&hash.clone(), body, corrupt)?;
                return resolve(inner, body, corrupt, depth);
            }
            if let Some(Value::Array(_)) = members.get(JOIN)
                && let Some(Value::Array(parts)) = members.shift_remove(JOIN)
            {
                return join_parts(parts, body, corrupt, depth);
            }
            if let Some(Value::Object(_)) = members.get(ESCAPED)
                && let Some(Value::Object(inner)) = members.shift_remove(ESCAPED)
            {
                return resolve_members(inner, body, corrupt, depth);
            }
            resolve_members(members, body, corrupt, depth)
        }
        Value::Object(members) => resolve_members(members, body, corrupt, depth),
        Value::Array(items) => {
            too_deep(depth, corrupt)?;
            items
                .into_iter()
                .map(|item| resolve(item, body, corrupt, depth + 1))
                .collect::<Result<_, E>>()
                .map(Value::Array)
        }
        scalar => Ok(scalar),
    }
}

fn too_deep<E>(depth: usize, corrupt: impl Fn(String) -> E) -> Result<(), E> {
    if depth >= READ_DEPTH {
        return Err(corrupt(format!(
            "a snapshot nests deeper than {READ_DEPTH} levels (written by an older version); \
             SnapshotUpdate it with a flatter state"
        )));
    }
    Ok(())
}

/// A spine: its parts, read back, are the chunks of one array or one object.
fn join_parts<E>(
    parts: Vec<Value>,
    body: &mut impl FnMut(&str) -> Result<String, E>,
    corrupt: impl Fn(String) -> E + Copy,
    depth: usize,
) -> Result<Value, E> {
    let mut joined: Option<Value> = None;
    for part in parts {
        match (&mut joined, resolve(part, body, corrupt, depth)?) {
            (None, first @ (Value::Array(_) | Value::Object(_))) => joined = Some(first),
            (Some(Value::Array(items)), Value::Array(more)) => items.extend(more),
            (Some(Value::Object(members)), Value::Object(more)) => members.extend(more),
            _ => {
                return Err(corrupt(
                    "a snapshot spine joins parts of different kinds".to_owned(),
                ));
            }
        }
    }
    joined.ok_or_else(|| corrupt("a snapshot spine has no parts".to_owned()))
}

fn resolve_members<E>(
    members: Map<String, Value>,
    body: &mut impl FnMut(&str) -> Result<String, E>,
    corrupt: impl Fn(String) -> E + Copy,
    depth: usize,
) -> Result<Value, E> {
    too_deep(depth, corrupt)?;
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
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(members) => {
                if members.len() == 1
                    && let Some(Value::String(hash)) = members.get(REFERENCE)
                {
                    found.push(hash.clone());
                    continue;
                }
                pending.extend(members.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use serde_json::json;

    fn read(root: &str, nodes: &HashMap<String, String>) -> Result<Value, String> {
        decode(
            root,
            &mut |hash: &str| {
                nodes
                    .get(hash)
                    .cloned()
                    .ok_or_else(|| format!("missing {hash}"))
            },
            |message| message,
        )
    }

    fn round_trip(value: &Value) -> Value {
        let mut encoded = Encoded::new();
        let root = encoded.root(value).unwrap();
        let nodes: HashMap<String, String> = encoded.nodes.into_iter().collect();
        read(&root, &nodes).unwrap()
    }

    fn key(id: &str) -> SnapshotKey {
        SnapshotKey {
            id: id.to_owned(),
            chat_file: "chat".to_owned(),
            message_id: None,
            swipe_id: None,
            created_at: None,
            summary: None,
            stored_bytes: None,
        }
    }

    #[test]
    fn values_round_trip_including_lookalikes_of_references() {
        let many: Map<String, Value> = (0..40)
            .map(|index| (format!("k{index}"), json!(index)))
            .chain([("__vmJoin".to_owned(), json!([1]))])
            .collect();
        for value in [
            json!({"a": "x".repeat(100), "b": [1, 2, {"c": "y".repeat(70)}], "n": null}),
            json!({"odd": {"__vmRef": "not a reference"}, "odder": {"__vmEscaped": {"a": "z".repeat(80)}}}),
            json!({"__vmRef": "abc"}),
            json!({"__vmJoin": [[1], [2]]}),
            json!("a long string at the root, longer than sixty-four bytes in all......"),
            json!(42),
            json!([]),
            json!((0..1000).collect::<Vec<_>>()),
            Value::Object(many),
        ] {
            assert_eq!(round_trip(&value), value);
        }
    }

    #[test]
    fn an_append_rewrites_the_last_chunk_and_the_spine_only() {
        let mut encoded = Encoded::new();
        let mut state = json!({"history": []});
        let mut costs = Vec::new();
        let mut stored: HashMap<String, String> = HashMap::new();
        for index in 0..5_000 {
            let mut changed = Changed::new();
            state["history"]
                .as_array_mut()
                .unwrap()
                .push(json!(format!("message {index}: the hero walks on")));
            changed.path(&["history".to_owned(), index.to_string()]);
            encoded
                .add_changed(key(&index.to_string()), &state, &changed)
                .unwrap();
            costs.push(
                encoded
                    .nodes
                    .iter()
                    .map(|(_, body)| body.len())
                    .sum::<usize>(),
            );
            let root = encoded.snapshots[0].1.clone();
            stored.extend(std::mem::take(&mut encoded.nodes));
            if index % 997 == 0 {
                assert_eq!(read(&root, &stored).unwrap(), state);
            }
            encoded.committed();
        }
        let late = costs[4_000..].iter().max().unwrap();
        assert!(
            *late < 3 * 1024,
            "an append late in the chat wrote {late} bytes"
        );
    }

    #[test]
    fn nothing_deeper_than_the_limit_is_laid_out() {
        let mut value = json!(1);
        for _ in 0..nesting::MAX_DEPTH {
            value = json!([value]);
        }
        assert_eq!(round_trip(&value), value);
        let deeper = json!({ "a": value });
        assert_eq!(
            Encoded::new().root(&deeper),
            Err(TooDeep {
                depth: nesting::MAX_DEPTH + 1
            })
        );
    }

    /// One write the built-ins make: set a path, append to an array, or remove a member.
    #[derive(Debug, Clone)]
    enum Write {
        Set(Vec<String>, Value),
        Append(Vec<String>, Value),
        Unset(Vec<String>),
    }

    fn write() -> impl Strategy<Value = Write> {
        let path = prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "0", "1"]), 1..4)
            .prop_map(|segments| segments.into_iter().map(str::to_owned).collect::<Vec<_>>());
        let leaf = prop_oneof![
            any::<i64>().prop_map(Value::from),
            "[a-z]{0,80}".prop_map(Value::from),
            Just(json!({})),
            Just(json!([])),
        ];
        prop_oneof![
            (path.clone(), leaf.clone()).prop_map(|(path, value)| Write::Set(path, value)),
            (path.clone(), leaf).prop_map(|(path, value)| Write::Append(path, value)),
            path.prop_map(Write::Unset),
        ]
    }

    /// Applies a write the way the built-ins do; returns the changed path, if it applied.
    fn apply(state: &mut Value, write: &Write) -> Option<Vec<String>> {
        let target = crate::json::path::Path::from_segments(match write {
            Write::Set(path, _) | Write::Append(path, _) | Write::Unset(path) => path.clone(),
        })
        .ok()?;
        match write {
            Write::Set(path, value) => target.set(state, value.clone()).ok().map(|()| path.clone()),
            Write::Append(path, value) => match target.get_mut(state) {
                Some(Value::Array(items)) => {
                    items.push(value.clone());
                    let mut changed = path.clone();
                    changed.push((items.len() - 1).to_string());
                    Some(changed)
                }
                _ => target
                    .set(state, json!([value]))
                    .ok()
                    .map(|()| path.clone()),
            },
            Write::Unset(path) => target
                .remove(state)
                .map(|_| path[..path.len() - 1].to_vec()),
        }
    }

    proptest! {
        /// Laying out snapshot after snapshot from the changed paths alone reads back exactly
        /// what a layout from scratch does.
        #[test]
        fn incremental_layouts_read_back(batches in prop::collection::vec(prop::collection::vec(write(), 1..4), 1..40)) {
            let mut encoded = Encoded::new();
            let mut nodes: HashMap<String, String> = HashMap::new();
            let mut state = json!({"a": (0..40).collect::<Vec<_>>(), "b": {}});
            for (index, writes) in batches.iter().enumerate() {
                let mut changed = Changed::new();
                for write in writes {
                    if let Some(path) = apply(&mut state, write) {
                        changed.path(&path);
                    }
                }
                encoded.add_changed(key(&index.to_string()), &state, &changed).unwrap();
                nodes.extend(std::mem::take(&mut encoded.nodes));
                let root = encoded.snapshots.pop().unwrap().1;
                encoded.committed();
                prop_assert_eq!(read(&root, &nodes).unwrap(), state.clone());
            }
        }
    }
}
