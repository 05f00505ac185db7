//! The JSON Schemas of tools' arguments and answers, generated from Rust types and made
//! portable on the way out ([`Portable`]): real hosts validate with ajv (the TypeScript SDK),
//! `jsonschema` (the Python SDK) or map schemas onto a single-`type` dialect (Gemini-style
//! function declarations), and each of them rejects something schemars writes by default.
//! Argument schemas are also made compact: the model reads them in every conversation.

use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::Transform;
use serde_json::{Map, Value, json};

/// A tool's schema, made the first time it is read: a default start lists 12 of the 41 built-in
/// tools, and generating every schema at start-up took its time and kept the generating code of
/// tools nobody lists in memory. Schemas written as JSON (a script manifest, another server's
/// tool) are ready from the start.
#[derive(Clone)]
pub struct Schema(Arc<Made>);

struct Made {
    schema: OnceLock<Arc<Map<String, Value>>>,
    make: fn() -> Arc<Map<String, Value>>,
}

impl Schema {
    /// A schema generated when first read.
    pub fn later(make: fn() -> Arc<Map<String, Value>>) -> Self {
        Self(Arc::new(Made {
            schema: OnceLock::new(),
            make,
        }))
    }

    /// A schema already made.
    pub fn ready(schema: Arc<Map<String, Value>>) -> Self {
        let made = OnceLock::new();
        // A new cell takes its first value.
        made.get_or_init(|| schema);
        Self(Arc::new(Made {
            schema: made,
            make: || Arc::new(Map::new()),
        }))
    }
}

impl std::ops::Deref for Schema {
    type Target = Arc<Map<String, Value>>;

    fn deref(&self) -> &Self::Target {
        self.0.schema.get_or_init(self.0.make)
    }
}

impl From<Arc<Map<String, Value>>> for Schema {
    fn from(schema: Arc<Map<String, Value>>) -> Self {
        Self::ready(schema)
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(formatter)
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

/// The JSON Schema (2020-12) of a tool's arguments, without the wrapper type's title and doc.
pub fn input_schema<Arguments: JsonSchema>() -> Arc<Map<String, Value>> {
    let mut schema = schema_object::<Arguments>(settings());
    merge_string_choices(Arc::make_mut(&mut schema));
    schema
}

/// A choice among strings, which schemars writes as `oneOf` one `const` per documented variant
/// (each with its doc), becomes one `enum`: the model reads every tool's schema in every
/// conversation, and the property's own description says what the choices mean.
fn merge_string_choices(schema: &mut Map<String, Value>) {
    if let Some(Value::Array(branches)) = schema.get("oneOf") {
        let choices: Option<Vec<Value>> = branches
            .iter()
            .map(|branch| {
                let branch = branch.as_object()?;
                if branch.get("type")? != "string" {
                    return None;
                }
                match (branch.get("const"), branch.get("enum")) {
                    (Some(choice), None) => Some(vec![choice.clone()]),
                    (None, Some(Value::Array(choices))) => Some(choices.clone()),
                    _ => None,
                }
            })
            .collect::<Option<Vec<Vec<Value>>>>()
            .map(|choices| choices.into_iter().flatten().collect());
        if let Some(choices) = choices {
            schema.remove("oneOf");
            schema.insert("type".to_owned(), Value::from("string"));
            schema.insert("enum".to_owned(), Value::Array(choices));
        }
    }
    for value in schema.values_mut() {
        match value {
            Value::Object(subschema) => merge_string_choices(subschema),
            Value::Array(items) => {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    merge_string_choices(item);
                }
            }
            _ => {}
        }
    }
}

/// The JSON Schema of what a tool's structured output serializes to.
pub fn output_schema<Output: JsonSchema>() -> Arc<Map<String, Value>> {
    schema_object::<Output>(settings().for_serialize())
}

/// Draft 2020-12, every subschema inlined (a tool schema is read whole by clients that resolve
/// no `$ref`), made [`Portable`].
fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .with_transform(Portable)
}

fn schema_object<T: JsonSchema>(settings: SchemaSettings) -> Arc<Map<String, Value>> {
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut object = match Value::from(schema) {
        Value::Object(object) => object,
        other => Map::from_iter([("allOf".to_owned(), Value::Array(vec![other]))]),
    };
    object.remove("title");
    object.remove("description");
    Arc::new(object)
}

/// A schema written as JSON (a script tool's manifest), made portable as another server's is:
/// its author may give `null` a meaning, so optional properties keep it.
pub(super) fn portable(mut schema: Map<String, Value>) -> Arc<Map<String, Value>> {
    make_foreign_schema_portable(&mut schema);
    Arc::new(schema)
}

/// The schema of "any JSON value", spelled so that every client accepts it: one branch per JSON
/// type, each with a single `type`. A bare `true` (or `{}`) makes the TypeScript SDK's
/// `listTools()` throw and Inspector's `--strict` fail; a `type` array is rejected by clients that
/// map schemas onto a single-`type` dialect. (`integer` is a `number`, so it needs no branch.)
fn any_value() -> Value {
    json!({"anyOf": [
        {"type": "object"},
        {"type": "array"},
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
    ]})
}

/// The formats JSON Schema 2020-12 defines. schemars also writes `int64`, `uint`, `double` and
/// the like, which validators warn about on every compile; the bounds they stand for stay in
/// `minimum`/`maximum`.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords that constrain a value; a schema with none of them accepts anything.
const CONSTRAINING_KEYWORDS: [&str; 44] = [
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "items",
    "prefixItems",
    "contains",
    "additionalItems",
    "unevaluatedItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "dependentSchemas",
    "dependencies",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
];

/// Keywords whose value is one subschema.
const SUBSCHEMA_KEYWORDS: [&str; 8] = [
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// Keywords whose value is a subschema where `false` (forbid the rest) is the usual spelling and
/// every client accepts a boolean.
const BOOLEAN_VALUED_KEYWORDS: [&str; 4] = [
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];

/// Keywords whose value is a list of subschemas.
const SUBSCHEMA_LIST_KEYWORDS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas.
const SUBSCHEMA_MAP_KEYWORDS: [&str; 5] = [
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// Rewrites a generated schema into the subset every MCP client accepts, keeping what it means
/// for the values the server sends and takes:
/// - an optional property takes no `null` (leaving it out says "none"; serialized outputs skip
///   `None`), so `Option<T>` is T's schema alone, not `type: [T, "null"]`;
/// - a `type` list that remains becomes `anyOf` branches with a single `type` each;
/// - a boolean subschema, and a schema that constrains nothing, become [`any_value`]
///   (`additionalProperties: true`, the default, is dropped; `false` stays);
/// - formats outside JSON Schema's own list are dropped.
#[derive(Debug, Clone, Copy)]
struct Portable;

impl Transform for Portable {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        if let Some(object) = schema.as_object_mut() {
            make_portable(object, None, Nulls::Dropped);
        }
    }
}

/// Makes a schema another MCP server wrote portable, keeping what it accepts: as our own
/// schemas are made portable, except that optional properties keep their `null` (that server
/// may give it a meaning).
pub fn make_foreign_schema_portable(schema: &mut Map<String, Value>) {
    make_portable(schema, None, Nulls::Kept);
}

/// What becomes of `null` in what an optional property accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Nulls {
    /// Taken out: leaving the property out says "none" (our own schemas).
    Dropped,
    /// Kept, spelled as an `anyOf` branch (schemas of other servers).
    Kept,
}

/// Makes a schema object and its subschemas portable; `keyword` is where it sits in its parent.
fn make_portable(schema: &mut Map<String, Value>, keyword: Option<&str>, nulls: Nulls) {
    let required: Vec<String> = match schema.get("required") {
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(|name| name.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    if nulls == Nulls::Dropped
        && let Some(Value::Object(properties)) = schema.get_mut("properties")
    {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name)
                && let Value::Object(property) = property
            {
                drop_null(property);
            }
        }
    }
    for name in SUBSCHEMA_KEYWORDS {
        if let Some(subschema) = schema.get_mut(name) {
            portable_subschema(subschema, name, nulls);
        }
    }
    for name in BOOLEAN_VALUED_KEYWORDS {
        match schema.get_mut(name) {
            Some(Value::Bool(true)) => {
                schema.remove(name);
            }
            Some(Value::Object(subschema)) => make_portable(subschema, Some(name), nulls),
            _ => {}
        }
    }
    for name in SUBSCHEMA_LIST_KEYWORDS {
        if let Some(Value::Array(subschemas)) = schema.get_mut(name) {
            for subschema in subschemas {
                portable_subschema(subschema, name, nulls);
            }
        }
    }
    for name in SUBSCHEMA_MAP_KEYWORDS {
        if let Some(Value::Object(subschemas)) = schema.get_mut(name) {
            for subschema in subschemas.values_mut() {
                portable_subschema(subschema, name, nulls);
            }
        }
    }
    split_type_list(schema);
    if let Some(Value::String(format)) = schema.get("format")
        && !STANDARD_FORMATS.contains(&format.as_str())
    {
        schema.remove("format");
    }
    let root = keyword.is_none();
    if !root
        && keyword != Some("not")
        && !constrains(schema)
        && let Value::Object(any) = any_value()
    {
        schema.extend(any);
    }
}

/// Makes one subschema portable, replacing a boolean schema by its object spelling.
fn portable_subschema(subschema: &mut Value, keyword: &str, nulls: Nulls) {
    match subschema {
        Value::Bool(true) => *subschema = any_value(),
        Value::Bool(false) => *subschema = json!({"not": {}}),
        Value::Object(object) => make_portable(object, Some(keyword), nulls),
        _ => {}
    }
}

fn constrains(schema: &Map<String, Value>) -> bool {
    CONSTRAINING_KEYWORDS
        .iter()
        .any(|keyword| schema.contains_key(*keyword))
}

/// Takes `null` out of what an optional property accepts: from its `type` list, its `enum`, and
/// the `{"type": "null"}` branch of its `anyOf`/`oneOf` (a single branch left is merged in).
fn drop_null(property: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = property.get_mut("type") {
        types.retain(|name| name != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            property.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(values)) = property.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    property.remove("nullable");
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = property.get_mut(keyword) else {
            continue;
        };
        branches.retain(|branch| *branch != json!({"type": "null"}));
        if branches.len() == 1
            && let Some(Value::Object(branch)) = branches.pop()
        {
            property.remove(keyword);
            for (key, value) in branch {
                property.entry(key).or_insert(value);
            }
        }
    }
}

/// `type: ["a", "b"]` becomes `anyOf: [{"type": "a"}, {"type": "b"}]`, the spelling clients with
/// a single-`type` dialect accept (a schema that already has an `anyOf` keeps its list).
fn split_type_list(schema: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = schema.get("type") else {
        return;
    };
    if let [only] = types.as_slice() {
        let only = only.clone();
        schema.insert("type".to_owned(), only);
        return;
    }
    if schema.contains_key("anyOf") {
        return;
    }
    let branches: Vec<Value> = types.iter().map(|name| json!({"type": name})).collect();
    schema.remove("type");
    schema.insert("anyOf".to_owned(), Value::Array(branches));
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};

    use super::{Schema, input_schema, output_schema};

    /// How many times [`counted`] made its schema.
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn counted() -> std::sync::Arc<serde_json::Map<String, Value>> {
        MADE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        input_schema::<Arguments>()
    }

    #[test]
    fn a_schema_is_made_when_first_read_and_once() {
        let schema = Schema::later(counted);
        let copy = schema.clone();
        assert_eq!(MADE.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(
            schema_value(&schema),
            schema_value(&input_schema::<Arguments>())
        );
        assert_eq!(
            schema_value(&copy),
            schema_value(&input_schema::<Arguments>())
        );
        assert_eq!(MADE.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    fn schema_value(schema: &serde_json::Map<String, Value>) -> Value {
        let mut schema = schema.clone();
        schema.remove("$schema");
        Value::Object(schema)
    }

    #[derive(Deserialize, JsonSchema)]
    enum Mode {
        Fast,
        Slow,
    }

    #[derive(Deserialize, JsonSchema)]
    #[expect(dead_code, reason = "only the schema is used")]
    struct Inner {
        flag: bool,
    }

    #[derive(Deserialize, JsonSchema)]
    #[expect(dead_code, reason = "only the schema is used")]
    struct Arguments {
        /// A name.
        name: Option<String>,
        count: Option<u32>,
        ratio: f64,
        mode: Option<Mode>,
        inner: Option<Inner>,
        /// Anything.
        value: Value,
        maybe: Option<Value>,
        list: Vec<Value>,
    }

    #[test]
    fn optional_arguments_take_no_null_and_free_values_are_any_json() {
        let any = super::any_value();
        let described_any = {
            let mut any = any.clone();
            any["description"] = json!("Anything.");
            any
        };
        assert_eq!(
            schema_value(&input_schema::<Arguments>()),
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "A name."},
                    "count": {"type": "integer", "minimum": 0},
                    "ratio": {"type": "number"},
                    "mode": {"type": "string", "enum": ["Fast", "Slow"]},
                    "inner": {
                        "type": "object",
                        "properties": {"flag": {"type": "boolean"}},
                        "required": ["flag"]
                    },
                    "value": described_any,
                    "maybe": any,
                    "list": {"type": "array", "items": any},
                },
                "required": ["ratio", "value", "list"]
            })
        );
    }

    #[derive(Serialize, JsonSchema)]
    struct Output {
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u64>,
        /// Always sent, possibly null.
        sent: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<Value>,
    }

    #[test]
    fn an_output_field_always_sent_keeps_its_null_as_an_any_of_branch() {
        let schema = output_schema::<Output>();
        assert_eq!(
            schema_value(&schema),
            json!({
                "type": "object",
                "properties": {
                    "skipped": {"type": "integer", "minimum": 0},
                    "sent": {
                        "anyOf": [{"type": "integer"}, {"type": "null"}],
                        "description": "Always sent, possibly null."
                    },
                    "value": super::any_value(),
                },
                "required": ["sent"]
            })
        );
        let sent = serde_json::to_value(Output {
            skipped: None,
            sent: None,
            value: None,
        })
        .unwrap();
        assert_eq!(sent, json!({"sent": null}));
    }
}
