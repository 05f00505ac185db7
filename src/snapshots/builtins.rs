//! The built-in functions, native: `SET`, `ADD`, `SUB`, `APPEND`, `REMOVE`,
//! `ASSIGN`, `UNSET`, `TIME`, and the JSON Patch operations users bring from MVU.
//!
//! Paths are lodash-style (`角色.名字`, `背包[0]`, `a["b.c"]`). Unlike lodash, a write never
//! replaces a scalar standing in the way of a deeper path, and an array index never leaves a
//! gap: the call fails with a message naming the path, and the snapshot is left as it was.
//!
//! No write may make the snapshot nest deeper than [`nesting::MAX_DEPTH`] (the path's segments
//! plus the written value's depth): such a call fails like any other, so whatever is stored
//! reads back. Each call that applies says which path it changed, so that only that path is
//! laid out again when the snapshot is stored.

use serde_json::{Map, Number, Value};

use crate::json::nesting;
use crate::json::path::{self, Path};

mod error;

pub use error::Error;

/// A built-in function.
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
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Builtin {
    Set,
    Add,
    Sub,
    Append,
    Remove,
    Assign,
    Unset,
    Time,
    /// MVU's `_.set('path', old?, new);` family.
    Mvu,
    /// `<JSONPatch>[…]</JSONPatch>` blocks.
    JsonPatch,
}

impl Builtin {
    /// The `@.NAME(…)` functions, whose calls the native parser finds.
    pub const CALLABLE: [Self; 8] = [
        Self::Set,
        Self::Add,
        Self::Sub,
        Self::Append,
        Self::Remove,
        Self::Assign,
        Self::Unset,
        Self::Time,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Set => "SET",
            Self::Add => "ADD",
            Self::Sub => "SUB",
            Self::Append => "APPEND",
            Self::Remove => "REMOVE",
            Self::Assign => "ASSIGN",
            Self::Unset => "UNSET",
            Self::Time => "TIME",
            Self::Mvu => "MVU",
            Self::JsonPatch => "JSON_PATCH",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::CALLABLE
            .into_iter()
            .find(|builtin| builtin.name() == name)
    }

    /// Applies one call; returns the path it changed. On an error the snapshot is unchanged.
    pub fn apply(self, snapshot: &mut Value, arguments: &[Value]) -> Result<Vec<String>, Error> {
        match self {
            Self::Set => {
                let [path, value] = exactly(arguments, "SET(path, value)")?;
                let path = parse_path(path)?;
                within_limit(&path, value)?;
                set(snapshot, &path, value.clone())
            }
            Self::Add | Self::Sub => {
                let usage = if self == Self::Add {
                    "ADD(path, number)"
                } else {
                    "SUB(path, number)"
                };
                let [path, amount] = exactly(arguments, usage)?;
                let amount = amount
                    .as_f64()
                    .map(|_| amount)
                    .ok_or_else(|| Error::NotAnAmount {
                        usage,
                        amount: show(amount),
                    })?;
                add(snapshot, &parse_path(path)?, amount, self == Self::Sub)
            }
            Self::Append => {
                let [path, item] = exactly(arguments, "APPEND(path, item)")?;
                let path = parse_path(path)?;
                within_limit_below(&path, 1, item)?;
                append(snapshot, &path, item.clone())
            }
            Self::Remove => {
                let [path, target] = exactly(arguments, "REMOVE(path, indexOrValue)")?;
                remove(snapshot, &parse_path(path)?, target)
            }
            Self::Assign => match arguments {
                [path, value] => {
                    let path = parse_path(path)?;
                    within_limit_below(&path, 1, value)?;
                    assign(snapshot, &path, value.clone())
                }
                [path, key, value] => {
                    let mut segments = parse_path(path)?.segments().to_vec();
                    segments.push(key_text(key)?);
                    let path = Path::from_segments(segments)?;
                    within_limit(&path, value)?;
                    set(snapshot, &path, value.clone())
                }
                _ => Err(Error::AssignArity {
                    found: arguments.len(),
                }),
            },
            Self::Unset => {
                let [path] = exactly(arguments, "UNSET(path)")?;
                let path = parse_path(path)?;
                path.remove(snapshot);
                Ok(parent(&path))
            }
            Self::Time => {
                let [time] = exactly(arguments, "TIME(time)")?;
                let Value::String(text) = time else {
                    return Err(Error::TimeNotText { time: show(time) });
                };
                if text.trim().is_empty() {
                    return Err(Error::EmptyTime);
                }
                set(
                    snapshot,
                    &Path::from_segments(vec!["time".to_owned()])?,
                    time.clone(),
                )
            }
            Self::Mvu | Self::JsonPatch => Err(Error::NotCallable { name: self.name() }),
        }
    }
}

fn exactly<'a, const N: usize>(
    arguments: &'a [Value],
    usage: &'static str,
) -> Result<[&'a Value; N], Error> {
    let found = arguments.len();
    <[&Value; N]>::try_from(arguments.iter().collect::<Vec<_>>()).map_err(|_| Error::Arity {
        usage,
        expected: N,
        found,
    })
}

/// A short rendering of a value for messages.
pub fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

fn key_text(key: &Value) -> Result<String, Error> {
    match key {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        other => Err(Error::Key { key: show(other) }),
    }
}

/// Parses a lodash-style path given as an argument.
pub fn parse_path(path: &Value) -> Result<Path, Error> {
    let Value::String(text) = path else {
        return Err(Error::PathNotText { path: show(path) });
    };
    lodash_path(text)
}

/// `a.b[0]["c.d"]['e']` → `a`, `b`, `0`, `c.d`, `e`.
pub fn lodash_path(text: &str) -> Result<Path, Error> {
    let path = || text.to_owned();
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut characters = text.chars().peekable();
    let mut closed_bracket = false;
    while let Some(character) = characters.next() {
        match character {
            '.' => {
                if current.is_empty() && !closed_bracket {
                    return Err(Error::EmptySegment { path: path() });
                }
                if !current.is_empty() {
                    segments.push(std::mem::take(&mut current));
                }
                closed_bracket = false;
            }
            '[' => {
                if !current.is_empty() {
                    segments.push(std::mem::take(&mut current));
                }
                let quote = characters.next_if(|next| *next == '"' || *next == '\'');
                let mut inner = String::new();
                loop {
                    match characters.next() {
                        None => return Err(Error::Unclosed { path: path() }),
                        Some(found) if quote.is_some() && Some(found) == quote => {
                            if characters.next() != Some(']') {
                                return Err(Error::QuotedKeyUnclosed { path: path() });
                            }
                            break;
                        }
                        Some('\\') if quote.is_some() => inner.extend(characters.next()),
                        Some(']') if quote.is_none() => break,
                        Some(found) => inner.push(found),
                    }
                }
                if quote.is_none() && inner.trim().is_empty() {
                    return Err(Error::EmptyBrackets { path: path() });
                }
                segments.push(if quote.is_none() {
                    inner.trim().to_owned()
                } else {
                    inner
                });
                closed_bracket = true;
            }
            other => {
                if closed_bracket {
                    return Err(Error::NoDotAfterBracket { path: path() });
                }
                current.push(other);
            }
        }
    }
    if !current.is_empty() {
        segments.push(current);
    } else if text.ends_with('.') {
        return Err(Error::TrailingDot { path: path() });
    }
    if segments.is_empty() {
        return Err(Error::EmptyPath);
    }
    segments_within_limit(text, segments.len())?;
    Ok(Path::from_segments(segments)?)
}

/// A path may not be deeper than a snapshot may nest.
fn segments_within_limit(text: &str, segments: usize) -> Result<(), Error> {
    if segments > nesting::MAX_DEPTH {
        let shown: String = text.chars().take(40).collect();
        return Err(Error::TooManySegments { shown, segments });
    }
    Ok(())
}

/// Writing `value` at `path` keeps the snapshot within the depth limit.
fn within_limit(path: &Path, value: &Value) -> Result<(), Error> {
    within_limit_below(path, 0, value)
}

/// Writing `value` `extra` levels below `path` (an array item: 1) keeps the snapshot within
/// the depth limit.
fn within_limit_below(path: &Path, extra: usize, value: &Value) -> Result<(), Error> {
    nesting::check(value, path.segments().len() + extra).map_err(|too_deep| Error::TooDeep {
        value: show(value),
        path: path.to_string(),
        too_deep,
    })
}

fn set(snapshot: &mut Value, path: &Path, value: Value) -> Result<Vec<String>, Error> {
    path.set(snapshot, value)?;
    Ok(path.segments().to_vec())
}

/// What a removal changes: the container it removes from (an array's later items move up).
fn parent(path: &Path) -> Vec<String> {
    let segments = path.segments();
    segments[..segments.len().saturating_sub(1)].to_vec()
}

/// A path and one more segment: where an appended item lands.
fn item_path(path: &Path, index: usize) -> Vec<String> {
    let mut segments = path.segments().to_vec();
    segments.push(index.to_string());
    segments
}

fn add(
    snapshot: &mut Value,
    path: &Path,
    amount: &Value,
    subtract: bool,
) -> Result<Vec<String>, Error> {
    let current = path.get(snapshot).cloned().unwrap_or(Value::Null);
    let result = match (&current, amount) {
        (Value::Null, _) => arithmetic(&Value::Number(0.into()), amount, subtract),
        (Value::Number(_), _) => arithmetic(&current, amount, subtract),
        (Value::String(text), _) => match text.trim().parse::<f64>() {
            Ok(_) => arithmetic(
                &super::literal::decode_capture(text.trim()),
                amount,
                subtract,
            ),
            Err(_) => None,
        },
        _ => None,
    };
    let result = result.ok_or_else(|| Error::NotANumber {
        path: path.to_string(),
        found: show(&current),
    })?;
    set(snapshot, path, result)
}

/// `a ± b`, keeping integers integral when both are.
fn arithmetic(current: &Value, amount: &Value, subtract: bool) -> Option<Value> {
    if let (Some(left), Some(right)) = (current.as_i64(), amount.as_i64()) {
        let result = if subtract {
            left.checked_sub(right)
        } else {
            left.checked_add(right)
        };
        if let Some(result) = result {
            return Some(Value::Number(result.into()));
        }
    }
    let (left, right) = (current.as_f64()?, amount.as_f64()?);
    let result = if subtract { left - right } else { left + right };
    Number::from_f64(result).map(Value::Number)
}

fn append(snapshot: &mut Value, path: &Path, item: Value) -> Result<Vec<String>, Error> {
    match path.get_mut(snapshot) {
        None | Some(Value::Null) => set(snapshot, path, Value::Array(vec![item])),
        Some(Value::Array(items)) => {
            items.push(item);
            Ok(item_path(path, items.len() - 1))
        }
        Some(other) => Err(Error::AppendToNonArray {
            path: path.to_string(),
            found: path::describe(other),
        }),
    }
}

fn remove(snapshot: &mut Value, path: &Path, target: &Value) -> Result<Vec<String>, Error> {
    let Some(Value::Array(items)) = path.get_mut(snapshot) else {
        let found = path.get(snapshot).map_or("nothing", path::describe);
        return Err(Error::RemoveFromNonArray {
            path: path.to_string(),
            found,
        });
    };
    if let Some(index) = target
        .as_u64()
        .and_then(|index| usize::try_from(index).ok())
        && index < items.len()
        && !items.iter().any(|item| item == target)
    {
        items.remove(index);
        return Ok(path.segments().to_vec());
    }
    let before = items.len();
    items.retain(|item| item != target);
    if items.len() == before {
        return Err(Error::NoSuchItem {
            path: path.to_string(),
            item: show(target),
        });
    }
    Ok(path.segments().to_vec())
}

fn assign(snapshot: &mut Value, path: &Path, value: Value) -> Result<Vec<String>, Error> {
    match (path.get_mut(snapshot), value) {
        (None | Some(Value::Null), value) => set(snapshot, path, value),
        (Some(Value::Object(members)), Value::Object(added)) => {
            members.extend(added);
            Ok(path.segments().to_vec())
        }
        (Some(Value::Array(items)), value) => {
            items.push(value);
            Ok(item_path(path, items.len() - 1))
        }
        (Some(Value::Object(_)), other) => Err(Error::AssignNotObject {
            path: path.to_string(),
            value: show(&other),
        }),
        (Some(other), _) => Err(Error::AssignInto {
            path: path.to_string(),
            found: path::describe(other),
        }),
    }
}

/// One JSON Patch operation as MVU writes them; `path` is a JSON Pointer (`/a/b/0`) or a
/// lodash path.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct PatchOperation {
    pub op: String,
    pub path: String,
    /// Present (even as `null`, a value like any other) or absent.
    #[serde(default, deserialize_with = "present")]
    pub value: Option<Value>,
    #[serde(default)]
    pub from: Option<String>,
}

/// A field that is there, whatever its value: `"value": null` sets null.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(deserializer).map(Some)
}

impl PatchOperation {
    /// Applies the operation; returns the paths it changed. On an error the snapshot is
    /// unchanged.
    pub fn apply(&self, snapshot: &mut Value) -> Result<Vec<Vec<String>>, Error> {
        let path = patch_path(&self.path)?;
        let value = || {
            let value = self.value.clone().ok_or_else(|| Error::NeedsValue {
                op: self.op.clone(),
                path: self.path.clone(),
            })?;
            within_limit(&path, &value)?;
            Ok::<_, Error>(value)
        };
        let one = |changed: Vec<String>| vec![changed];
        match self.op.as_str() {
            "replace" => set(snapshot, &path, value()?).map(one),
            "add" | "insert" => insert(snapshot, &path, value()?, self.op == "add").map(one),
            "remove" => path
                .remove(snapshot)
                .map(|_| vec![parent(&path)])
                .ok_or_else(|| Error::NothingToRemove {
                    path: self.path.clone(),
                }),
            "delta" => add(snapshot, &path, &value()?, false).map(one),
            "move" => {
                let from = self.from.as_deref().ok_or_else(|| Error::NeedsFrom {
                    path: self.path.clone(),
                })?;
                let source = patch_path(from)?;
                let moved = source
                    .get(snapshot)
                    .cloned()
                    .ok_or_else(|| Error::NothingToMove {
                        from: from.to_owned(),
                    })?;
                within_limit(&path, &moved)?;
                let mut changed = snapshot.clone();
                source.remove(&mut changed);
                set(&mut changed, &path, moved)?;
                *snapshot = changed;
                Ok(vec![parent(&source), path.segments().to_vec()])
            }
            other => Err(Error::UnknownOp {
                op: other.to_owned(),
            }),
        }
    }
}

/// JSON Patch `add`/MVU `insert`: into an array at an index (`-` appends), else a set.
fn insert(
    snapshot: &mut Value,
    path: &Path,
    value: Value,
    replace_in_object: bool,
) -> Result<Vec<String>, Error> {
    let Some((last, parents)) = path.segments().split_last() else {
        return set(snapshot, path, value);
    };
    let parent = if parents.is_empty() {
        Some(&mut *snapshot)
    } else {
        Path::from_segments(parents.to_vec())
            .ok()
            .and_then(|parent| parent.get_mut(snapshot))
    };
    match parent {
        Some(Value::Array(items)) => {
            let index = if last == "-" {
                items.len()
            } else {
                last.parse::<usize>()
                    .ok()
                    .filter(|index| *index <= items.len())
                    .ok_or_else(|| Error::IndexOutside {
                        path: path.to_string(),
                        index: last.clone(),
                        items: items.len(),
                    })?
            };
            let appended = index == items.len();
            items.insert(index, value);
            // An item added at the end is a new item; anywhere else, the later ones move.
            let mut changed = parents.to_vec();
            if appended {
                changed.push(index.to_string());
            }
            Ok(changed)
        }
        Some(Value::Object(members)) if !replace_in_object && members.contains_key(last) => {
            Err(Error::Exists {
                path: path.to_string(),
            })
        }
        _ => set(snapshot, path, value),
    }
}

fn patch_path(text: &str) -> Result<Path, Error> {
    let Some(pointer) = text.strip_prefix('/') else {
        return lodash_path(text);
    };
    let segments: Vec<String> = pointer
        .split('/')
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect();
    segments_within_limit(text, segments.len())?;
    Ok(Path::from_segments(segments)?)
}

/// The value without MVU's metadata when `strip` (a call's `mvuStrip`), else as it is.
pub fn without_mvu_metadata(mut value: Value, strip: bool) -> Value {
    if strip {
        strip_mvu_metadata(&mut value);
    }
    value
}

/// Removes MVU's metadata: every `$meta` and `$arrayMeta` key, at any depth,
/// and the `"$__META_EXTENSIBLE__$"` marker from arrays.
pub fn strip_mvu_metadata(value: &mut Value) {
    match value {
        Value::Array(items) => {
            items.retain(|item| item.as_str() != Some("$__META_EXTENSIBLE__$"));
            items.iter_mut().for_each(strip_mvu_metadata);
        }
        Value::Object(members) => {
            members.shift_remove("$meta");
            members.shift_remove("$arrayMeta");
            members.values_mut().for_each(strip_mvu_metadata);
        }
        _ => {}
    }
}

/// An empty snapshot.
pub fn empty() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn call(builtin: Builtin, snapshot: &mut Value, arguments: &Value) -> Result<(), String> {
        builtin
            .apply(snapshot, arguments.as_array().unwrap())
            .map(drop)
            .map_err(|error| error.to_string())
    }

    #[test]
    fn writes_deeper_than_the_limit_are_refused_and_say_which_path_changed() {
        let mut snapshot = json!({"list": [1]});
        let deep = vec!["a"; 3_200].join(".");
        let error = call(Builtin::Set, &mut snapshot, &json!([deep, 1])).unwrap_err();
        assert!(error.contains("3200 segments"), "{error}");
        let mut value = json!(1);
        for _ in 0..64 {
            value = json!([value]);
        }
        let error = call(Builtin::Append, &mut snapshot, &json!(["list", value])).unwrap_err();
        assert!(error.contains("66 levels deep"), "{error}");
        assert_eq!(snapshot, json!({"list": [1]}));
        assert_eq!(
            Builtin::Append.apply(&mut snapshot, &[json!("list"), json!(2)]),
            Ok(vec!["list".to_owned(), "1".to_owned()])
        );
        let pointer = format!("/{}", vec!["a"; 65].join("/"));
        let operation = PatchOperation {
            op: "replace".to_owned(),
            path: pointer,
            value: Some(json!(1)),
            from: None,
        };
        assert!(
            operation
                .apply(&mut snapshot)
                .unwrap_err()
                .to_string()
                .contains("65 segments")
        );
    }

    #[test]
    fn lodash_paths_parse_dots_brackets_and_quotes() {
        let path = lodash_path(r#"a.b[0]["c.d"]['e'].f"#).unwrap();
        assert_eq!(path.segments(), ["a", "b", "0", "c.d", "e", "f"]);
        assert!(
            lodash_path("a..b")
                .unwrap_err()
                .to_string()
                .contains("empty segment")
        );
        assert!(
            lodash_path("a[0")
                .unwrap_err()
                .to_string()
                .contains("not closed")
        );
        assert!(lodash_path("").unwrap_err().to_string().contains("empty"));
    }

    #[test]
    fn a_refused_call_carries_the_offending_value() {
        assert_eq!(
            lodash_path("a..b").unwrap_err(),
            Error::EmptySegment {
                path: "a..b".to_owned()
            }
        );
        let mut snapshot = json!({"角色": {"名字": "李四"}});
        let error = Builtin::Add
            .apply(&mut snapshot, &[json!("角色.名字"), json!(1)])
            .unwrap_err();
        assert_eq!(
            error,
            Error::NotANumber {
                path: "角色.名字".to_owned(),
                found: "\"李四\"".to_owned(),
            }
        );
        assert_eq!(
            error.to_string(),
            "`角色.名字` holds \"李四\", not a number; SET it to a number first"
        );
        let operation = PatchOperation {
            op: "frobnicate".to_owned(),
            path: "/a".to_owned(),
            value: None,
            from: None,
        };
        assert_eq!(
            operation.apply(&mut snapshot).unwrap_err(),
            Error::UnknownOp {
                op: "frobnicate".to_owned()
            }
        );
    }

    #[test]
    fn set_add_sub_keep_integers_and_refuse_text() {
        let mut snapshot = json!({"角色": {"金币": 500, "名字": "李四"}});
        call(Builtin::Set, &mut snapshot, &json!(["角色.名字", "张三"])).unwrap();
        call(Builtin::Add, &mut snapshot, &json!(["角色.金币", 100])).unwrap();
        call(Builtin::Sub, &mut snapshot, &json!(["角色.生命值", 10])).unwrap();
        call(Builtin::Add, &mut snapshot, &json!(["角色.金币", 0.5])).unwrap();
        assert_eq!(
            snapshot,
            json!({"角色": {"金币": 600.5, "名字": "张三", "生命值": -10}})
        );
        let before = snapshot.clone();
        let error = call(Builtin::Add, &mut snapshot, &json!(["角色.名字", 1])).unwrap_err();
        assert!(
            error.contains("角色.名字") && error.contains("not a number"),
            "{error}"
        );
        let error = call(Builtin::Set, &mut snapshot, &json!(["角色.名字.姓", "张"])).unwrap_err();
        assert!(error.contains("角色.名字"), "{error}");
        assert_eq!(snapshot, before);
    }

    #[test]
    fn arrays_append_remove_by_index_or_value() {
        let mut snapshot = json!({});
        call(
            Builtin::Append,
            &mut snapshot,
            &json!(["背包.物品", "治疗药水"]),
        )
        .unwrap();
        call(
            Builtin::Append,
            &mut snapshot,
            &json!(["背包.物品", "魔法卷轴"]),
        )
        .unwrap();
        call(
            Builtin::Append,
            &mut snapshot,
            &json!(["背包.物品", "火把"]),
        )
        .unwrap();
        call(Builtin::Remove, &mut snapshot, &json!(["背包.物品", 0])).unwrap();
        call(
            Builtin::Remove,
            &mut snapshot,
            &json!(["背包.物品", "火把"]),
        )
        .unwrap();
        assert_eq!(snapshot, json!({"背包": {"物品": ["魔法卷轴"]}}));
        assert!(
            call(Builtin::Remove, &mut snapshot, &json!(["背包.物品", "剑"]))
                .unwrap_err()
                .contains("no item")
        );
        let mut numbers = json!({"n": [5, 7]});
        call(Builtin::Remove, &mut numbers, &json!(["n", 7])).unwrap();
        assert_eq!(numbers, json!({"n": [5]}));
    }

    #[test]
    fn assign_merges_objects_unset_deletes_time_sets_time() {
        let mut snapshot = json!({"角色": {"等级": 1, "名字": "张三"}, "临时数据": {"flag": true}});
        call(
            Builtin::Assign,
            &mut snapshot,
            &json!(["角色", {"等级": 2}]),
        )
        .unwrap();
        call(
            Builtin::Assign,
            &mut snapshot,
            &json!(["角色", "职业", "剑士"]),
        )
        .unwrap();
        call(Builtin::Unset, &mut snapshot, &json!(["临时数据.flag"])).unwrap();
        call(
            Builtin::Time,
            &mut snapshot,
            &json!(["2024-10-20T15:30:00Z"]),
        )
        .unwrap();
        assert_eq!(
            snapshot,
            json!({"角色": {"等级": 2, "名字": "张三", "职业": "剑士"}, "临时数据": {}, "time": "2024-10-20T15:30:00Z"})
        );
        assert!(
            call(Builtin::Time, &mut snapshot, &json!([5]))
                .unwrap_err()
                .contains("text")
        );
        assert!(
            call(Builtin::Set, &mut snapshot, &json!(["a"]))
                .unwrap_err()
                .contains("takes 2 arguments, not 1")
        );
    }

    #[test]
    fn json_patch_operations() {
        let mut snapshot = json!({"a": {"b": 1}, "list": [1, 2]});
        let operations: Vec<PatchOperation> = serde_json::from_value(json!([
            {"op": "replace", "path": "/a/b", "value": 5},
            {"op": "delta", "path": "/a/b", "value": -2},
            {"op": "insert", "path": "/list/0", "value": 0},
            {"op": "add", "path": "/list/-", "value": 3},
            {"op": "move", "from": "/a/b", "path": "/c"},
            {"op": "remove", "path": "/a"}
        ]))
        .unwrap();
        for operation in &operations {
            operation.apply(&mut snapshot).unwrap();
        }
        assert_eq!(snapshot, json!({"list": [0, 1, 2, 3], "c": 3}));
    }

    #[test]
    fn mvu_metadata_is_stripped_recursively() {
        let mut value = json!({"$meta": {"extensible": true}, "背包": ["$__META_EXTENSIBLE__$", {"$meta": 1, "名": "剑"}], "x": {"$arrayMeta": 1, "y": 2}});
        strip_mvu_metadata(&mut value);
        assert_eq!(value, json!({"背包": [{"名": "剑"}], "x": {"y": 2}}));
    }
}
