//! Structured content cut to the output limit, still valid against the tool's output schema.
//!
//! The value and its schema are walked together. Only what the schema lets shrink is cut:
//! strings without `pattern`, `format`, `enum`, `const` or `minLength` lose their middle (head
//! and tail kept, a marker between); arrays without `minItems`, `prefixItems` or `contains`
//! keep their first items that fit; objects whose schema says nothing of their members (free
//! form) keep their first members and a `"…"` member counting the rest. Everything else (keys,
//! numbers, required members, `anyOf` branches) is kept whole. Members share the budget fairly:
//! small ones stay whole, large ones get an equal share of what is left.
//!
//! Every cut is recorded (a JSON pointer and how much was left out) so the result can say
//! where the whole value is.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::truncate_content;
use crate::json::compact_length;

/// Room a cut string's marker takes, in characters.
const STRING_MARKER: usize = 60;
/// The fewest characters a cut string keeps.
const SHORTEST_STRING: usize = 16;
/// Below this budget a free-form member is left out rather than cut.
const SMALLEST_SHARE: usize = 40;
/// The key of the member that counts the members left out of a free-form object.
pub(crate) const OMITTED_MEMBERS_KEY: &str = "…";

/// One cut: where, and how much was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Omission {
    /// JSON pointer of the value that was cut.
    pub(crate) path: String,
    pub(crate) what: Omitted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Omitted {
    Characters(usize),
    Items(usize),
    Members(usize),
}

/// A value cut to fit, and the cuts made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fitted {
    pub(crate) value: Value,
    pub(crate) omissions: Vec<Omission>,
}

/// Cuts `value` so that its JSON text takes about `limit` characters, as far as `schema` (the
/// tool's output schema, whose `$ref`s point into its own `$defs`) allows; `None` when it fits.
pub(crate) fn fit_structure(value: &Value, schema: &Value, limit: usize) -> Option<Fitted> {
    if compact_length(value) <= limit {
        return None;
    }
    let mut walker = Walker {
        root: schema,
        omissions: Vec::new(),
    };
    let value = walker.fit(value, Some(schema), limit, &mut String::new());
    Some(Fitted {
        value,
        omissions: walker.omissions,
    })
}

/// Whether the root object's schema allows a member it does not declare (where the cut is
/// described).
pub(crate) fn allows_extra_member(schema: &Value, key: &str) -> bool {
    let declared = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| properties.contains_key(key));
    !declared
        && schema.get("additionalProperties") != Some(&Value::Bool(false))
        && schema.get("unevaluatedProperties") != Some(&Value::Bool(false))
        && schema.get("patternProperties").is_none()
        && schema.get("propertyNames").is_none()
        && schema.get("maxProperties").is_none()
}

struct Walker<'a> {
    root: &'a Value,
    omissions: Vec<Omission>,
}

impl<'a> Walker<'a> {
    /// `schema` is `None` where nothing may be cut (a node this walker does not understand).
    fn fit(
        &mut self,
        value: &Value,
        schema: Option<&'a Value>,
        budget: usize,
        path: &mut String,
    ) -> Value {
        if compact_length(value) <= budget {
            return value.clone();
        }
        let schema = schema.and_then(|schema| self.resolve(schema));
        let Some(schema) = schema.filter(|schema| admits(schema, value)) else {
            return value.clone();
        };
        match value {
            Value::String(text) if string_can_shrink(schema) => self.cut_string(text, budget, path),
            Value::Array(items) if array_can_shrink(schema) => {
                // Without `items`, any item is valid.
                let items_schema = schema.get("items").unwrap_or(&EMPTY_SCHEMA);
                self.cut_array(items, Some(items_schema), budget, path)
            }
            Value::Object(members) => self.fit_object(members, schema, budget, path),
            _ => value.clone(),
        }
    }

    /// Follows `$ref`s into the root's `$defs`; `None` for a node that cannot be cut safely.
    fn resolve(&self, schema: &'a Value) -> Option<&'a Value> {
        let mut current = schema;
        for _ in 0..16 {
            let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
                return (!composite(current)).then_some(current);
            };
            current = reference
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer))?;
        }
        None
    }

    fn cut_string(&mut self, text: &str, budget: usize, path: &str) -> Value {
        let keep = budget.saturating_sub(STRING_MARKER).max(SHORTEST_STRING);
        match truncate_content(text, keep) {
            Some(cut) => {
                self.omit(path, Omitted::Characters(cut.omitted_length));
                Value::String(cut.text)
            }
            None => Value::String(text.to_owned()),
        }
    }

    fn cut_array(
        &mut self,
        items: &[Value],
        items_schema: Option<&'a Value>,
        budget: usize,
        path: &mut String,
    ) -> Value {
        let mut kept = Vec::new();
        let mut used = 2;
        for (index, item) in items.iter().enumerate() {
            let item_size = compact_length(item) + 1;
            if used + item_size <= budget {
                used += item_size;
                kept.push(item.clone());
                continue;
            }
            if kept.is_empty() {
                let length = path.len();
                write!(path, "/{index}").ok();
                kept.push(self.fit(item, items_schema, budget.saturating_sub(used), path));
                path.truncate(length);
            }
            break;
        }
        let left_out = items.len() - kept.len();
        if left_out > 0 {
            self.omit(path, Omitted::Items(left_out));
        }
        Value::Array(kept)
    }

    fn fit_object(
        &mut self,
        members: &Map<String, Value>,
        schema: &'a Value,
        budget: usize,
        path: &mut String,
    ) -> Value {
        if free_form(schema) {
            return self.cut_free_object(members, budget, path);
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let extra = match schema.get("additionalProperties") {
            None | Some(Value::Bool(true)) => Some(&EMPTY_SCHEMA),
            Some(other) if other.is_object() => Some(other),
            Some(_) => None,
        };
        let keys: usize = members.keys().map(|key| key.len() + 4).sum();
        let mut remaining = budget.saturating_sub(keys + 2);
        let mut order: Vec<(&String, &Value, usize)> = members
            .iter()
            .map(|(key, value)| (key, value, compact_length(value)))
            .collect();
        order.sort_by_key(|(_, _, size)| *size);
        let mut fitted: Map<String, Value> = Map::new();
        let mut left = order.len();
        for (key, value, value_size) in order {
            let share = remaining / left.max(1);
            left -= 1;
            let member = if value_size <= share {
                value.clone()
            } else {
                let member_schema = match properties.and_then(|properties| properties.get(key)) {
                    Some(declared) => Some(declared),
                    None if schema.get("patternProperties").is_none() => extra,
                    None => None,
                };
                let length = path.len();
                path.push('/');
                path.push_str(&escape_pointer(key));
                let member = self.fit(value, member_schema, share, path);
                path.truncate(length);
                member
            };
            remaining = remaining.saturating_sub(compact_length(&member));
            fitted.insert(key.clone(), member);
        }
        // The members in their original order.
        let ordered = members
            .keys()
            .filter_map(|key| fitted.remove(key).map(|value| (key.clone(), value)))
            .collect();
        Value::Object(ordered)
    }

    /// A free-form object keeps its first members that fit and counts the rest.
    fn cut_free_object(
        &mut self,
        members: &Map<String, Value>,
        budget: usize,
        path: &mut String,
    ) -> Value {
        let mut kept = Map::new();
        let mut used = 2 + OMITTED_MEMBERS_KEY.len() + 32;
        for (key, value) in members {
            let cost = key.len() + 4 + compact_length(value);
            if used + cost <= budget {
                used += cost;
                kept.insert(key.clone(), value.clone());
                continue;
            }
            let share = budget.saturating_sub(used + key.len() + 4);
            if share >= SMALLEST_SHARE {
                let length = path.len();
                path.push('/');
                path.push_str(&escape_pointer(key));
                let member = self.fit(value, Some(&EMPTY_SCHEMA), share, path);
                path.truncate(length);
                kept.insert(key.clone(), member);
            }
            break;
        }
        let left_out = members.len() - kept.len();
        if left_out > 0 && !members.contains_key(OMITTED_MEMBERS_KEY) {
            kept.insert(
                OMITTED_MEMBERS_KEY.to_owned(),
                Value::String(format!("{left_out} more members omitted")),
            );
            self.omit(path, Omitted::Members(left_out));
        }
        Value::Object(kept)
    }

    fn omit(&mut self, path: &str, what: Omitted) {
        self.omissions.push(Omission {
            path: path.to_owned(),
            what,
        });
    }
}

static EMPTY_SCHEMA: Value = Value::Null;

/// Whether the schema node combines others (`anyOf`, `not`, …), which this walker leaves whole.
fn composite(schema: &Value) -> bool {
    [
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
    ]
    .iter()
    .any(|key| schema.get(key).is_some())
}

/// A node that constrains nothing but, at most, the JSON type: any value of that type is valid.
fn free_form(schema: &Value) -> bool {
    match schema {
        Value::Null | Value::Bool(true) => true,
        Value::Object(keywords) => keywords.keys().all(|key| {
            matches!(
                key.as_str(),
                "description" | "title" | "default" | "examples" | "$comment" | "type"
            )
        }),
        _ => false,
    }
}

/// Whether the node's `type` (if any) admits the value's JSON type.
fn admits(schema: &Value, value: &Value) -> bool {
    if schema.is_null() || schema == &Value::Bool(true) {
        return true;
    }
    let name = match value {
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        _ => return true,
    };
    match schema.get("type") {
        None => true,
        Some(Value::String(kind)) => kind == name,
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == name),
        Some(_) => false,
    }
}

fn string_can_shrink(schema: &Value) -> bool {
    !has_any(
        schema,
        &[
            "pattern",
            "format",
            "enum",
            "const",
            "minLength",
            "contentSchema",
        ],
    )
}

fn array_can_shrink(schema: &Value) -> bool {
    !has_any(
        schema,
        &[
            "minItems",
            "prefixItems",
            "contains",
            "enum",
            "const",
            "unevaluatedItems",
        ],
    )
}

fn has_any(schema: &Value, keywords: &[&str]) -> bool {
    keywords.iter().any(|key| schema.get(key).is_some())
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn list_schema() -> Value {
        json!({"type": "object",
            "properties": {"variables": {"type": "array", "items": {"$ref": "#/$defs/Info"}},
                           "count": {"type": "integer"}},
            "required": ["variables", "count"],
            "$defs": {"Info": {"type": "object",
                "properties": {"name": {"type": "string"}, "desc": {"type": "string"}},
                "required": ["name"]}}})
    }

    #[test]
    fn a_value_that_fits_is_left_alone() {
        assert_eq!(
            fit_structure(&json!({"count": 1}), &list_schema(), 100),
            None
        );
    }

    #[test]
    fn arrays_keep_their_first_items_and_count_the_rest() {
        let variables: Vec<Value> = (0..400)
            .map(|index| json!({"name": format!("variable-{index}"), "desc": "x".repeat(50)}))
            .collect();
        let value = json!({"variables": variables, "count": 400});
        let fitted = fit_structure(&value, &list_schema(), 2_000).unwrap();
        assert!(
            compact_length(&fitted.value) <= 2_000,
            "{}",
            compact_length(&fitted.value)
        );
        let kept = fitted.value["variables"].as_array().unwrap();
        assert!(!kept.is_empty());
        assert_eq!(kept[0], value["variables"][0]);
        assert_eq!(fitted.value["count"], json!(400));
        assert_eq!(
            fitted.omissions,
            vec![Omission {
                path: "/variables".to_owned(),
                what: Omitted::Items(400 - kept.len()),
            }]
        );
    }

    #[test]
    fn free_strings_lose_their_middle_and_constrained_ones_stay() {
        let schema = json!({"type": "object", "properties": {
            "text": {"type": "string"}, "id": {"type": "string", "pattern": "^a+$"}}});
        let value = json!({"text": "b".repeat(5_000), "id": "a".repeat(500)});
        let fitted = fit_structure(&value, &schema, 1_000).unwrap();
        assert_eq!(fitted.value["id"], value["id"]);
        let text = fitted.value["text"].as_str().unwrap();
        assert!(
            text.len() < 1_000 && text.contains("characters omitted"),
            "{text}"
        );
        assert!(matches!(
            fitted.omissions.as_slice(),
            [Omission { path, what: Omitted::Characters(_) }] if path == "/text"
        ));
    }

    #[test]
    fn free_form_objects_keep_their_first_members() {
        let schema = json!({"type": "object", "properties": {
            "template": {"description": "anything"}}, "required": ["template"]});
        let members: Map<String, Value> = (0..2_000)
            .map(|index| (format!("key{index}"), json!(index)))
            .collect();
        let value = json!({"template": members});
        let fitted = fit_structure(&value, &schema, 300).unwrap();
        assert!(compact_length(&fitted.value) <= 300, "{}", fitted.value);
        let template = fitted.value["template"].as_object().unwrap();
        assert_eq!(template["key0"], json!(0));
        let left_out = 2_000 - (template.len() - 1);
        assert_eq!(
            template[OMITTED_MEMBERS_KEY],
            json!(format!("{left_out} more members omitted"))
        );
    }

    #[test]
    fn combined_schemas_are_left_whole() {
        let schema = json!({"type": "object", "properties": {
            "value": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}});
        let value = json!({"value": "c".repeat(3_000)});
        let fitted = fit_structure(&value, &schema, 100).unwrap();
        assert_eq!(fitted.value, value);
        assert!(fitted.omissions.is_empty());
    }

    #[test]
    fn extra_members_only_where_the_schema_allows_them() {
        assert!(allows_extra_member(&list_schema(), "_truncated"));
        assert!(!allows_extra_member(
            &json!({"type": "object", "additionalProperties": false}),
            "_truncated"
        ));
    }
}
