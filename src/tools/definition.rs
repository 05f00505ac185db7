//! Tool definitions: names, descriptions, JSON Schemas generated from Rust types, annotations,
//! how the executor treats a tool's calls (permission, caching, truncation, `†` references),
//! and the one place arguments are decoded into a tool's typed parameters.
//!
//! Every tool schema is generated here, and made portable on the way out ([`Portable`]): real
//! hosts validate with ajv (the TypeScript SDK), `jsonschema` (the Python SDK) or map schemas
//! onto a single-`type` dialect (Gemini-style function declarations), and each of them rejects
//! something schemars writes by default.

use std::sync::Arc;

use schemars::generate::SchemaSettings;
use schemars::transform::Transform;
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{Permission, ToolError, parse_arguments};

/// Hints for clients about what a tool does (MCP `ToolAnnotations`).
#[expect(
    clippy::struct_excessive_bools,
    reason = "mirrors MCP's four independent hint flags"
)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl Annotations {
    /// No hint set, as [`Annotations::default`], for constants.
    pub const NONE: Self = Self {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };

    /// Reads, changing nothing: the same call again answers the same.
    pub const READ_ONLY: Self = Self {
        read_only: true,
        idempotent: true,
        ..Self::NONE
    };

    /// Reads, changing nothing in the user's data, but caches each result as a new variable the
    /// user can list: read-only, so a read-only principal may call it (its cached result
    /// displaces nothing a writing principal stored), and not idempotent.
    pub const CACHED_READ: Self = Self {
        read_only: true,
        ..Self::NONE
    };

    /// Replaces or deletes what is stored under a name or id; the same call again changes
    /// nothing more.
    pub const OVERWRITES: Self = Self {
        destructive: true,
        idempotent: true,
        ..Self::NONE
    };

    /// These hints, and the tool reaches outside the server (runs code, talks to the world).
    #[must_use]
    pub const fn open_world(self) -> Self {
        Self {
            open_world: true,
            ..self
        }
    }

    /// These hints, and the same call again changes nothing more.
    #[must_use]
    pub const fn idempotent(self) -> Self {
        Self {
            idempotent: true,
            ..self
        }
    }

    /// May replace what is stored, and each call may change more (adds new records, or runs
    /// other tools).
    pub const DESTRUCTIVE: Self = Self {
        destructive: true,
        ..Self::NONE
    };
}

/// A tool's declaration, as data: what a client learns from `tools/list` (name, title,
/// description, schemas, annotations) and how the executor treats its calls (default
/// permission, caching, truncation, `†` references, listing). Tools set the second half with
/// the builder methods below; the executor, the registry and `tools/list` read it here, so
/// no tool overrides a hook to say any of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Arc<Map<String, Value>>,
    pub output_schema: Option<Arc<Map<String, Value>>>,
    pub annotations: Annotations,
    /// The tool's own default approval policies; the configuration may override them.
    pub permission: Permission,
    /// Whether and how results and arguments are cached as variables.
    pub caching: Caching,
    /// The output limit a result is cut to.
    pub truncation: Truncation,
    /// What becomes of `†` references in the arguments before the tool runs.
    pub daggers: Daggers,
    /// Listed whenever any group is enabled, even when its own group is not (`ReadVar`,
    /// `ListVars`).
    pub always_listed: bool,
    /// The interactive view (an MCP App) a host that renders apps shows this tool's result in;
    /// hosts without apps show the text result as before.
    pub view: Option<&'static str>,
    /// The tool's own name where it comes from (an upstream server's name for it), when it is
    /// served under another.
    pub origin_name: Option<String>,
    /// Changes what every workspace of the process shares (the skills shelf: `SkillSave`,
    /// `SkillRunScript`): only a caller with the skills grant may run it.
    pub changes_shared_state: bool,
}

/// The workspace view: the one MCP App resource the server serves, where a user browses
/// variables and edits the state document (see `docs/app.md`).
pub const WORKSPACE_VIEW: &str = "ui://synapse/workspace";

/// Whether a call's result and arguments are kept as `{tool}_{node}_result` / `_args` variables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Caching {
    /// Cached, in one durable commit per call.
    #[default]
    Durable,
    /// Cached, but written to the store lazily, in batches: the result can be recomputed from
    /// files on disk (the skill tools), so a lost batch loses only a cache.
    Lazy,
    /// Not cached: reading a variable must never create another one (the variable and state
    /// tools, `SkillReadFile`), or the arguments are whole chats (`SnapshotProcess`).
    Off,
}

/// The output limit a tool's result is cut to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Truncation {
    /// The call's `_outputLimit`, else `[tools.X] output_limit`, else the server's limit.
    #[default]
    Configured,
    /// As [`Truncation::Configured`], with this many characters in place of the server's limit
    /// (`SkillLoad`: skill bodies are instructions and are kept whole up to 40,000).
    Default(usize),
    /// Never cut, and `_outputLimit` is not offered: the tool pages its own output (`ReadVar`,
    /// `ReadState`, `SkillReadFile`, which take the limit as their page size), or every part of
    /// the result must arrive (`SnapshotProcess`).
    Never,
}

/// What becomes of `†` references in a call's arguments before the tool runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Daggers {
    /// Resolved by the executor, like `$VAR_REF`.
    #[default]
    Resolved,
    /// Kept as written outside a plan, resolved inside one (`WriteVar`: a plan stored outside a
    /// plan keeps its `†input` and `†steps` references for `RunPlan`, while a plan's step
    /// receives the values the plan computed, as every other step does).
    KeptOutsidePlans,
    /// Always kept: the tool resolves them itself (`RunPlan`, whose steps refer to results
    /// that do not exist yet).
    Kept,
}

impl Daggers {
    /// Whether the references stay as written in a call (`in_plan`: a step of a plan).
    pub fn kept(self, in_plan: bool) -> bool {
        match self {
            Self::Resolved => false,
            Self::KeptOutsidePlans => !in_plan,
            Self::Kept => true,
        }
    }
}

impl ToolDefinition {
    /// A definition whose input schema comes from `Arguments`, with the default handling:
    /// auto-approved, cached durably, cut to the configured limit, `†` resolved.
    pub fn new<Arguments: JsonSchema>(
        name: &str,
        description: &str,
        annotations: Annotations,
    ) -> Self {
        Self::with_input_schema(name, description, input_schema::<Arguments>(), annotations)
    }

    /// A definition whose schemas are written as JSON (a script tool's manifest) rather than
    /// generated, made portable the same way; otherwise as [`ToolDefinition::new`].
    pub fn from_schemas(
        name: &str,
        description: &str,
        annotations: Annotations,
        input: Map<String, Value>,
        output: Option<Map<String, Value>>,
    ) -> Self {
        let mut definition =
            Self::with_input_schema(name, description, portable(input), annotations);
        definition.output_schema = output.map(portable);
        definition
    }

    /// A definition whose input schema is given as it is (a tool another MCP server declares),
    /// with the default handling.
    pub fn with_input_schema(
        name: &str,
        description: &str,
        input_schema: Arc<Map<String, Value>>,
        annotations: Annotations,
    ) -> Self {
        Self {
            name: name.to_owned(),
            title: None,
            description: description.trim().to_owned(),
            input_schema,
            output_schema: None,
            annotations,
            permission: Permission::default(),
            caching: Caching::default(),
            truncation: Truncation::default(),
            daggers: Daggers::default(),
            always_listed: false,
            origin_name: None,
            view: None,
            changes_shared_state: false,
        }
    }

    #[must_use]
    pub fn with_title(mut self, title: &str) -> Self {
        self.title = Some(title.to_owned());
        self
    }

    #[must_use]
    pub fn with_output<Output: JsonSchema>(mut self) -> Self {
        self.output_schema = Some(output_schema::<Output>());
        self
    }

    #[must_use]
    pub fn with_permission(mut self, permission: Permission) -> Self {
        self.permission = permission;
        self
    }

    #[must_use]
    pub fn with_caching(mut self, caching: Caching) -> Self {
        self.caching = caching;
        self
    }

    #[must_use]
    pub fn with_truncation(mut self, truncation: Truncation) -> Self {
        self.truncation = truncation;
        self
    }

    #[must_use]
    pub fn with_daggers(mut self, daggers: Daggers) -> Self {
        self.daggers = daggers;
        self
    }

    #[must_use]
    pub fn always_listed(mut self) -> Self {
        self.always_listed = true;
        self
    }

    /// Shows the tool's result in `view` (an MCP App resource) on hosts that render apps.
    #[must_use]
    pub fn with_view(mut self, view: &'static str) -> Self {
        self.view = Some(view);
        self
    }

    /// Marks the tool as changing what every workspace of the process shares.
    #[must_use]
    pub fn changing_shared_state(mut self) -> Self {
        self.changes_shared_state = true;
        self
    }

    #[must_use]
    pub fn with_origin_name(mut self, name: &str) -> Self {
        self.origin_name = Some(name.to_owned());
        self
    }

    /// Decodes a call's arguments into the tool's typed parameters ([`parse_arguments`]).
    pub fn parse<Arguments: DeserializeOwned>(
        &self,
        arguments: Value,
    ) -> Result<Arguments, ToolError> {
        parse_arguments(&self.name, arguments)
    }
}

/// The JSON Schema (2020-12) of a tool's arguments, without the wrapper type's title and doc.
pub fn input_schema<Arguments: JsonSchema>() -> Arc<Map<String, Value>> {
    schema_object::<Arguments>(settings())
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
fn portable(mut schema: Map<String, Value>) -> Arc<Map<String, Value>> {
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
    fn transform(&mut self, schema: &mut Schema) {
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

    use super::{input_schema, output_schema};

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
