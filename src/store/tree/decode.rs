//! Reading a tree back from its root: references followed, spines joined, escapes undone, and
//! anything nested deeper than a write could have made refused with a message.

use serde_json::{Map, Value};

use super::node::{ESCAPED, JOIN, REFERENCE};
use crate::json::nesting;

/// Reading refuses values nesting deeper than this: every value a write accepts reads back.
const READ_DEPTH: usize = 2 * nesting::MAX_DEPTH;

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

/// The hashes a node's body refers to, each as often as it does: exactly the references
/// [`decode`] follows (a user's object escaped as `{"__vmEscaped": {"__vmRef": …}}` is not
/// one), since the store counts them to know when a node is no longer used.
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
            Value::Object(members) if members.len() == 1 => {
                if let Some(Value::String(hash)) = members.get(REFERENCE) {
                    found.push(hash.clone());
                } else if let Some(Value::Object(escaped)) = members.get(ESCAPED) {
                    pending.extend(escaped.values());
                } else {
                    pending.extend(members.values());
                }
            }
            Value::Object(members) => pending.extend(members.values()),
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tree::Encoded;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::collections::HashMap;

    /// Every node's references, found by reading each node back the way [`decode`] does.
    fn followed(encoded: &Encoded) -> Vec<String> {
        let nodes: HashMap<&str, &str> = encoded
            .nodes
            .iter()
            .map(|(hash, body)| (hash.as_str(), body.as_str()))
            .collect();
        let whole = |hash: &str| {
            decode(
                hash,
                &mut |wanted: &str| Ok::<_, String>(nodes[wanted].to_owned()),
                |message| message,
            )
            .unwrap()
        };
        let mut read = Vec::new();
        for (hash, _) in &encoded.nodes {
            let mut first = true;
            decode(
                hash,
                &mut |wanted: &str| {
                    // The node itself; each node it refers to is read as an empty value of its
                    // kind (a spine joins parts of one kind), so only its own references count.
                    if std::mem::take(&mut first) {
                        return Ok(nodes[wanted].to_owned());
                    }
                    read.push(wanted.to_owned());
                    Ok::<_, String>(
                        match whole(wanted) {
                            Value::Array(_) => "[]",
                            Value::Object(_) => "{}",
                            _ => "0",
                        }
                        .to_owned(),
                    )
                },
                |message| message,
            )
            .unwrap();
        }
        read.sort();
        read
    }

    #[test]
    fn references_are_exactly_those_a_read_follows() {
        let long = "x".repeat(80);
        let value = json!({
            "odd": {"__vmRef": "0123456789abcdef0123456789abcdef"},
            "escaped": {"__vmEscaped": {"__vmRef": long}},
            "many": (0..40).map(|index| format!("{long}{index}")).collect::<Vec<_>>(),
            "twice": [long, long],
            "plain": {"__vmRef": long, "other": 1}
        });
        let mut encoded = Encoded::new();
        encoded.root(&value).unwrap();
        let mut found = Vec::new();
        for (_, body) in &encoded.nodes {
            references(body, &mut found);
        }
        found.sort();
        assert_eq!(found, followed(&encoded));
        assert!(
            !found.contains(&"0123456789abcdef0123456789abcdef".to_owned()),
            "a user's object that looks like a reference is not one"
        );
    }
}
