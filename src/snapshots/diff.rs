//! What changed between two states: an RFC 6902 JSON Patch (`SnapshotDiff`), and the one-line
//! summary a floor keeps of what its message changed (`SnapshotList`).
//!
//! The patch uses `add`, `remove` and `replace` only, with JSON Pointer paths (`/角色/金币`,
//! `~0` for `~` and `~1` for `/` in keys). Objects are compared key by key; arrays item by item
//! over their common length, then the extra items are added at their indexes or removed from
//! the end backwards, so that applying the operations in order turns `from` into `to`.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::json::path::value_at;
use crate::store::tree::Changed;

/// One JSON Patch operation.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Operation {
    /// `add`, `remove` or `replace`.
    pub op: Op,
    /// A JSON Pointer into the state.
    pub path: String,
    /// The new value (absent for `remove`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Add,
    Remove,
    Replace,
}

/// The operations that turn `from` into `to`.
pub fn diff(from: &Value, to: &Value) -> Vec<Operation> {
    let mut operations = Vec::new();
    compare(from, to, &mut String::new(), &mut operations);
    operations
}

fn compare(from: &Value, to: &Value, path: &mut String, out: &mut Vec<Operation>) {
    match (from, to) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in old {
                let length = push(path, key);
                match new.get(key) {
                    Some(other) => compare(value, other, path, out),
                    None => out.push(operation(Op::Remove, path, None)),
                }
                path.truncate(length);
            }
            for (key, value) in new.iter().filter(|(key, _)| !old.contains_key(*key)) {
                let length = push(path, key);
                out.push(operation(Op::Add, path, Some(value)));
                path.truncate(length);
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            let common = old.len().min(new.len());
            for index in 0..common {
                let length = push(path, &index.to_string());
                compare(&old[index], &new[index], path, out);
                path.truncate(length);
            }
            for (index, value) in new.iter().enumerate().skip(common) {
                let length = push(path, &index.to_string());
                out.push(operation(Op::Add, path, Some(value)));
                path.truncate(length);
            }
            for index in (common..old.len()).rev() {
                let length = push(path, &index.to_string());
                out.push(operation(Op::Remove, path, None));
                path.truncate(length);
            }
        }
        _ if from == to => {}
        _ => out.push(operation(Op::Replace, path, Some(to))),
    }
}

fn operation(op: Op, path: &str, value: Option<&Value>) -> Operation {
    Operation {
        op,
        path: path.to_owned(),
        value: value.cloned(),
    }
}

/// Appends `/segment` (escaped) to a pointer; returns the length to truncate back to.
fn push(path: &mut String, segment: &str) -> usize {
    let length = path.len();
    path.push('/');
    for character in segment.chars() {
        match character {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            other => path.push(other),
        }
    }
    length
}

/// How many changes a summary names before it says how many more there are.
const SHOWN: usize = 3;
/// How many characters of a value a summary shows.
const VALUE_CHARACTERS: usize = 32;

/// One line of what a message changed: `角色.金币 = 547; 背包.2 = "治疗药水"; (+2 more)`.
/// With `before`, from the patch between the states; without it, from the paths the
/// built-ins wrote (`changed`) and their values in `after`.
pub fn summary(before: Option<&Value>, after: &Value, changed: &Changed) -> String {
    let lines: Vec<String> = match before {
        Some(before) => diff(before, after)
            .iter()
            .map(|operation| {
                let path = dotted(&pointer_segments(&operation.path));
                match &operation.value {
                    Some(value) => format!("{path} = {}", short(value)),
                    None => format!("{path} removed"),
                }
            })
            .collect(),
        None if changed.is_everything() => return "changed by a function".to_owned(),
        None => outermost(changed.paths())
            .into_iter()
            .map(|segments| match value_at(after, segments) {
                Some(value) => format!("{} = {}", dotted(segments), short(value)),
                None => format!("{} removed", dotted(segments)),
            })
            .collect(),
    };
    if lines.is_empty() {
        return "no change".to_owned();
    }
    let mut line = lines[..lines.len().min(SHOWN)].join("; ");
    if lines.len() > SHOWN {
        write!(line, "; (+{} more)", lines.len() - SHOWN).ok();
    }
    line
}

/// The written paths without repeats and without those inside another written path, in the
/// order first written.
fn outermost(paths: &[Vec<String>]) -> Vec<&[String]> {
    let mut kept: Vec<&[String]> = Vec::new();
    for path in paths {
        if kept.iter().any(|other| path.starts_with(other)) {
            continue;
        }
        kept.retain(|other| !other.starts_with(path));
        kept.push(path);
    }
    kept
}

fn pointer_segments(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect()
}

fn dotted(segments: &[String]) -> String {
    if segments.is_empty() {
        "(the state)".to_owned()
    } else {
        segments.join(".")
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > VALUE_CHARACTERS {
        format!(
            "{}…",
            text.chars().take(VALUE_CHARACTERS).collect::<String>()
        )
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshots::builtins::PatchOperation;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use serde_json::json;

    /// Applies a patch with the JSON Patch syntax's own operations, as a client applying the
    /// diff through `<JSONPatch>` would.
    fn apply(from: &Value, operations: &[Operation]) -> Value {
        let mut state = from.clone();
        for operation in operations {
            let operation: PatchOperation =
                serde_json::from_value(serde_json::to_value(operation).unwrap()).unwrap();
            operation.apply(&mut state).unwrap();
        }
        state
    }

    #[test]
    fn a_patch_names_each_change_with_escaped_pointers() {
        let from =
            json!({"角色": {"金币": 500, "名字": "张三"}, "背包": ["剑", "盾", "药"], "a/b~c": 1});
        let to = json!({"角色": {"金币": 550}, "背包": ["剑"], "a/b~c": 2, "新": {"x": [1]}});
        let patch = diff(&from, &to);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([
                {"op": "replace", "path": "/角色/金币", "value": 550},
                {"op": "remove", "path": "/角色/名字"},
                {"op": "remove", "path": "/背包/2"},
                {"op": "remove", "path": "/背包/1"},
                {"op": "replace", "path": "/a~1b~0c", "value": 2},
                {"op": "add", "path": "/新", "value": {"x": [1]}}
            ])
        );
        assert_eq!(apply(&from, &patch), to);
        assert_eq!(diff(&to, &to), vec![]);
    }

    #[test]
    fn summaries_come_from_the_patch_or_the_written_paths() {
        let before = json!({"角色": {"金币": 500}, "背包": []});
        let after = json!({"角色": {"金币": 547}, "背包": ["治疗药水"]});
        let none = Changed::new();
        assert_eq!(
            summary(Some(&before), &after, &none),
            "角色.金币 = 547; 背包.0 = \"治疗药水\""
        );
        let mut changed = Changed::new();
        changed.path(&["角色".to_owned(), "金币".to_owned()]);
        changed.path(&["背包".to_owned()]);
        changed.path(&["背包".to_owned(), "0".to_owned()]);
        changed.path(&["gone".to_owned()]);
        assert_eq!(
            summary(None, &after, &changed),
            "角色.金币 = 547; 背包 = [\"治疗药水\"]; gone removed"
        );
        assert_eq!(summary(Some(&after), &after, &none), "no change");
        let mut everything = Changed::new();
        everything.everything();
        assert_eq!(summary(None, &after, &everything), "changed by a function");
        let many = json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": "x".repeat(50)});
        assert_eq!(
            summary(Some(&json!({})), &many, &none),
            "a = 1; b = 2; c = 3; (+2 more)"
        );
    }

    fn state() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-5i64..5).prop_map(Value::from),
            prop::sample::select(vec!["剑", "a/b", "~x", ""]).prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
                prop::collection::btree_map(
                    prop::sample::select(vec!["a", "b", "角色", "x/y", "~0"]),
                    inner,
                    0..5
                )
                .prop_map(|members| {
                    Value::Object(
                        members
                            .into_iter()
                            .map(|(key, value)| (key.to_owned(), value))
                            .collect(),
                    )
                }),
            ]
        })
    }

    proptest! {
        /// Applying the diff of two states to the first gives the second.
        #[test]
        fn diff_then_apply_gives_the_target(from in state(), to in state()) {
            let from = json!({"s": from});
            let to = json!({"s": to});
            prop_assert_eq!(apply(&from, &diff(&from, &to)), to);
        }
    }
}
