//! The model of a variable: its [`VarType`], how its value is encoded ([`ValueKind`]), the
//! [`Record`] of every field that the store keeps and an export carries, the [`Variable`] the
//! store hands out (a record and its character count), and the writes that make or change one
//! ([`NewVariable`], [`VariablePatch`]).

use std::fmt;
use std::ops::Deref;
use std::str::FromStr;
use std::sync::Arc;

use super::{Error, Timestamp};

/// The kind of a variable, by the name it is serialized under.
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
pub enum VarType {
    /// A rule the agent must follow; rules cannot be removed.
    #[serde(rename = "RULE")]
    Rule,
    /// The result of a tool call.
    ToolCallResult,
    /// The arguments of a tool call.
    ToolCallArgs,
    /// A cached chat message.
    MessageCache,
    /// A value the model chose to store.
    #[serde(rename = "LLMAdd")]
    LlmAdd,
    /// A value the user chose to store.
    #[serde(rename = "USER_ADD")]
    UserAdd,
}

impl VarType {
    /// Every variable type, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::Rule,
        Self::ToolCallResult,
        Self::ToolCallArgs,
        Self::MessageCache,
        Self::LlmAdd,
        Self::UserAdd,
    ];

    /// The serialized name, e.g. `"RULE"` or `"ToolCallResult"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rule => "RULE",
            Self::ToolCallResult => "ToolCallResult",
            Self::ToolCallArgs => "ToolCallArgs",
            Self::MessageCache => "MessageCache",
            Self::LlmAdd => "LLMAdd",
            Self::UserAdd => "USER_ADD",
        }
    }
}

impl VarType {
    /// Whether values of this type are a cache (recomputable, stored without being asked for),
    /// evicted before anything the model or the user wrote.
    pub fn is_cache(self) -> bool {
        matches!(
            self,
            Self::ToolCallResult | Self::ToolCallArgs | Self::MessageCache
        )
    }
}

impl fmt::Display for VarType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for VarType {
    type Err = Error;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|var_type| var_type.as_str() == value)
            .ok_or_else(|| Error::UnknownType {
                value: value.to_owned(),
            })
    }
}

/// Whether a value was written as text or as a JSON-encoded non-string
/// (object, array, number, boolean or null).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ValueKind {
    Text,
    Json,
}

/// Encodes a JSON value for storage: strings are stored as their text, anything else JSON-encoded.
pub fn encode_value(value: serde_json::Value) -> (String, ValueKind) {
    match value {
        serde_json::Value::String(text) => (text, ValueKind::Text),
        other => (other.to_string(), ValueKind::Json),
    }
}

/// Every field of a variable, as the store keeps it and a workspace export carries it.
///
/// The serialized form is the export's (`schemas/workspace-export.json`), where this record has
/// always been called `ExportedVariable`; that name is kept so the published schema stays the
/// same.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(
    rename = "ExportedVariable",
    description = "One variable with every field. Times are microseconds since the Unix epoch."
)]
pub struct Record {
    pub name: Arc<str>,
    /// The value, always text (JSON text when `kind` is `json`).
    pub value: Arc<str>,
    pub kind: ValueKind,
    #[serde(rename = "type")]
    pub var_type: VarType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Never evicted.
    #[serde(default)]
    pub keep: bool,
    #[schemars(with = "u64")]
    pub created: Timestamp,
    #[schemars(with = "u64")]
    pub updated: Timestamp,
    #[schemars(with = "u64")]
    pub last_visited: Timestamp,
    // How many `$VAR_REF` resolutions have read this variable. (Not a doc comment: it would
    // change the published schema's wording.)
    #[serde(default)]
    pub reference_count: u64,
}

/// A stored variable: its [`Record`], whose fields it reads as its own, and the character count
/// of its value.
///
/// Only the [`VariableSystem`](super::VariableSystem) creates and changes variables (the count
/// must match the value), so code outside `vars` reads them but cannot build or change one.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    record: Record,
    /// The Unicode scalar count of `record.value`, computed once per write.
    char_count: usize,
}

/// A variable is read as its record: `variable.name`, `variable.value`, … (read-only: there is no
/// `DerefMut`, so the character count cannot go stale outside this module).
impl Deref for Variable {
    type Target = Record;

    fn deref(&self) -> &Record {
        &self.record
    }
}

impl Variable {
    /// A variable holding `record` as it is, timestamps and counts included.
    pub(super) fn new(record: Record) -> Self {
        Self {
            char_count: record.value.chars().count(),
            record,
        }
    }

    /// The length of the value in Unicode scalar values.
    pub fn char_len(&self) -> usize {
        self.char_count
    }

    /// A copy of every field, to store or export.
    pub fn to_record(&self) -> Record {
        self.record.clone()
    }

    /// Marks the variable as visited at `now`.
    pub(super) fn visit(&mut self, now: Timestamp) {
        self.record.last_visited = now;
    }

    /// Counts one more `$VAR_REF` resolution of the variable.
    pub(super) fn count_reference(&mut self) {
        self.record.reference_count += 1;
    }

    /// Applies a patch, stamping the variable as written at `now`.
    pub(super) fn apply(&mut self, patch: VariablePatch, now: Timestamp) {
        let VariablePatch {
            value,
            var_type,
            desc,
            tags,
            keep,
        } = patch;
        let record = &mut self.record;
        if let Some((value, kind)) = value {
            self.char_count = value.chars().count();
            record.value = value.into();
            record.kind = kind;
        }
        if let Some(var_type) = var_type {
            record.var_type = var_type;
        }
        if desc.is_some() {
            record.desc = desc;
        }
        if let Some(tags) = tags {
            record.tags = tags;
        }
        if let Some(keep) = keep {
            record.keep = keep;
        }
        record.updated = now;
        record.last_visited = now;
    }

    /// Whether `needle` (already lowercase) occurs in the name, description or any tag,
    /// ignoring case.
    pub(super) fn metadata_contains(&self, needle: &str) -> bool {
        let contains = |text: &str| text.to_lowercase().contains(needle);
        contains(&self.name)
            || self.desc.as_deref().is_some_and(contains)
            || self.tags.iter().any(|tag| contains(tag))
    }
}

/// A complete variable to insert: created, or replacing an existing one of that name.
#[derive(Debug, Clone)]
pub struct NewVariable {
    pub name: String,
    pub value: String,
    pub kind: ValueKind,
    pub var_type: VarType,
    pub desc: Option<String>,
    pub tags: Vec<String>,
    pub keep: bool,
}

impl NewVariable {
    /// A text variable with no description, no tags, and not kept.
    pub fn text(name: impl Into<String>, value: impl Into<String>, var_type: VarType) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            kind: ValueKind::Text,
            var_type,
            desc: None,
            tags: Vec::new(),
            keep: false,
        }
    }

    /// The variable this write stores at `now` under `name` (a shared copy of `self.name`), for
    /// a variable first created at `created` and read by `reference_count` references before.
    pub(super) fn into_variable(
        self,
        name: Arc<str>,
        created: Timestamp,
        reference_count: u64,
        now: Timestamp,
    ) -> Variable {
        let Self {
            name: _,
            value,
            kind,
            var_type,
            desc,
            tags,
            keep,
        } = self;
        Variable::new(Record {
            name,
            value: value.into(),
            kind,
            var_type,
            desc,
            tags,
            keep,
            created,
            updated: now,
            last_visited: now,
            reference_count,
        })
    }
}

/// A partial update of an existing variable; `None` leaves a field unchanged.
#[derive(Debug, Clone, Default)]
pub struct VariablePatch {
    pub value: Option<(String, ValueKind)>,
    pub var_type: Option<VarType>,
    pub desc: Option<String>,
    pub tags: Option<Vec<String>>,
    pub keep: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn var_types_round_trip_through_their_wire_names() {
        let names = [
            "RULE",
            "ToolCallResult",
            "ToolCallArgs",
            "MessageCache",
            "LLMAdd",
            "USER_ADD",
        ];
        for (var_type, name) in VarType::ALL.into_iter().zip(names) {
            assert_eq!(var_type.as_str(), name);
            assert_eq!(var_type.to_string(), name);
            assert_eq!(name.parse::<VarType>(), Ok(var_type));
            assert_eq!(
                serde_json::to_value(var_type).ok(),
                Some(serde_json::json!(name))
            );
            assert_eq!(
                serde_json::from_value::<VarType>(serde_json::json!(name)).ok(),
                Some(var_type)
            );
        }
    }

    #[test]
    fn unknown_var_types_are_rejected_with_the_accepted_names() {
        let error = "rule".parse::<VarType>();

        assert_eq!(
            error,
            Err(Error::UnknownType {
                value: "rule".to_owned()
            })
        );
        assert_eq!(
            error.map_err(|error| error.to_string()),
            Err("unknown variable type `rule`: expected one of RULE, ToolCallResult, ToolCallArgs, \
                 MessageCache, LLMAdd, USER_ADD"
                .to_owned())
        );
    }

    #[test]
    fn value_kinds_serialize_in_lowercase() {
        assert_eq!(
            serde_json::to_value(ValueKind::Text).ok(),
            Some(serde_json::json!("text"))
        );
        assert_eq!(
            serde_json::to_value(ValueKind::Json).ok(),
            Some(serde_json::json!("json"))
        );
    }
}
