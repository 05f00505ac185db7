//! The template tools of the `snapshots` group: `TemplateGet` and `TemplateSet`, a character's
//! starting state.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ASKS_FIRST, CACHED_READ, OVERWRITES, asked_when};
use crate::groups::{off_thread, structured};
use crate::snapshots::Snapshots;
use crate::snapshots::builtins::strip_mvu_metadata;
use crate::tools::{Consent, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput};

const TEMPLATE_GET: &str = "Read a character's template: the state a chat starts from.";

const TEMPLATE_SET: &str = "Set a character's template (a JSON object): the state new chats start \
    from. `mvuStrip: true` removes MVU metadata first.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TemplateGetArguments {
    pub character_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateOutput {
    pub character_id: String,
    /// The template; absent when none is stored (chats then start from `{}`).
    #[serde(skip_serializing_if = "Value::is_null")]
    #[schemars(extend("type" = "object"))]
    pub template: Value,
}

/// `TemplateGet`: a character's template.
pub(super) struct TemplateGet {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl TemplateGet {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<TemplateGetArguments>("TemplateGet", TEMPLATE_GET, CACHED_READ)
                .with_title("Get character template")
                .with_output::<TemplateOutput>();
        Self {
            definition,
            service,
        }
    }
}

impl Tool for TemplateGet {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = Arc::clone(&self.service);
        off_thread(
            &self.definition,
            call,
            move |arguments: TemplateGetArguments, _| {
                let template = service.template(&arguments.character_id)?;
                structured(&TemplateOutput {
                    character_id: arguments.character_id,
                    template: template.unwrap_or(Value::Null),
                })
            },
        )
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TemplateSetArguments {
    pub character_id: String,
    /// The starting state (a JSON object).
    #[schemars(extend("type" = "object"))]
    pub template: Value,
    /// Remove MVU metadata first.
    #[serde(default)]
    pub mvu_strip: bool,
}

/// `TemplateSet`: a character's template set; replacing one asks first.
pub(super) struct TemplateSet {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl TemplateSet {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<TemplateSetArguments>("TemplateSet", TEMPLATE_SET, OVERWRITES)
                .with_title("Set character template")
                .with_output::<TemplateOutput>()
                .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for TemplateSet {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// A character's first template destroys nothing; replacing one is asked.
    fn consent(&self, arguments: &Value) -> Result<Consent, ToolError> {
        let arguments: TemplateSetArguments = self.definition.parse(arguments.clone())?;
        let replaces = self.service.template(&arguments.character_id)?.is_some();
        Ok(asked_when(replaces))
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = Arc::clone(&self.service);
        off_thread(
            &self.definition,
            call,
            move |mut arguments: TemplateSetArguments, _| {
                if arguments.mvu_strip {
                    strip_mvu_metadata(&mut arguments.template);
                }
                service.set_template(&arguments.character_id, &arguments.template)?;
                structured(&TemplateOutput {
                    character_id: arguments.character_id,
                    template: arguments.template,
                })
            },
        )
    }
}
