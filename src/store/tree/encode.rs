//! Laying values out as nodes: an [`Encoded`] batch turns each snapshot's value into nodes, and
//! lays out again only what [`Changed`] names when it was given the value before.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};

use super::changed::{Changed, Dirty};
use super::mirror::{ArrayLayout, Children, Mirror, ObjectLayout, Shape, positions};
use super::node::{REFERENCE, join, reference_in, scalar};
use crate::json::nesting::{self, TooDeep};

/// Values this long (as JSON, in bytes) or longer become nodes of their own.
const NODE_BYTES: usize = 64;
/// Children per chunk, and parts per spine node: a container with more children than this is
/// stored as a spine of chunks, so a node holds at most this many children's fragments.
pub const CHUNK: usize = 16;

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
        let hash = crate::digest::hex(&crate::digest::sha256(body.as_bytes())[..16]);
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

/// A container `depth` levels below the root makes the value at least `depth + 1` deep.
fn check_depth(depth: usize) -> Result<(), TooDeep> {
    if depth >= nesting::MAX_DEPTH {
        Err(TooDeep { depth: depth + 1 })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tree::decode;
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
