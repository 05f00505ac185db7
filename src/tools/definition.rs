//! Tool definitions: names, descriptions, JSON Schemas generated from Rust types, annotations,
//! and the one place arguments are decoded into a tool's typed parameters.

use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::ToolError;

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

/// Everything a client learns about a tool from `tools/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Arc<Map<String, Value>>,
    pub output_schema: Option<Arc<Map<String, Value>>>,
    pub annotations: Annotations,
}

impl ToolDefinition {
    /// A definition whose input schema comes from `Arguments`.
    pub fn new<Arguments: JsonSchema>(
        name: &str,
        description: &str,
        annotations: Annotations,
    ) -> Self {
        Self {
            name: name.to_owned(),
            title: None,
            description: description.trim().to_owned(),
            input_schema: input_schema::<Arguments>(),
            output_schema: None,
            annotations,
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
}

/// The JSON Schema (2020-12) of a tool's arguments, without the wrapper type's title and doc.
pub fn input_schema<Arguments: JsonSchema>() -> Arc<Map<String, Value>> {
    schema_object::<Arguments>(SchemaSettings::draft2020_12())
}

/// The JSON Schema of what a tool's structured output serializes to.
pub fn output_schema<Output: JsonSchema>() -> Arc<Map<String, Value>> {
    schema_object::<Output>(SchemaSettings::draft2020_12().for_serialize())
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

/// Decodes a tool's arguments, naming the tool in the error so the model can fix the call.
pub fn parse_arguments<Arguments: DeserializeOwned>(
    tool: &str,
    arguments: Value,
) -> Result<Arguments, ToolError> {
    serde_json::from_value(arguments)
        .map_err(|error| ToolError::invalid(format!("invalid arguments for {tool}: {error}")))
}
