//! The template tools of the `snapshots` group: `TemplateGet` and `TemplateSet`, a character's
//! starting state.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CACHED_READ, Call, OVERWRITES, service};
use crate::snapshots::Snapshots;
use crate::snapshots::builtins::without_mvu_metadata;
use crate::tools::{
    Answered, Consent, Declaration, ToolError, TypedTool, declare, parse_arguments,
};

const TEMPLATE_GET: &str = "Read a character's template: the state a chat starts from.";

const TEMPLATE_SET: &str = "Set a character's template: the state its new chats start from.";

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
impl TypedTool<Arc<Snapshots>> for TemplateGetArguments {
    type Output = TemplateOutput;
    const TOOL: Declaration = declare! {
        "TemplateGet", "Get character template", CACHED_READ, TEMPLATE_GET, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<TemplateOutput> {
        let template = service(&context).template(&self.character_id)?;
        Ok(TemplateOutput::new(self.character_id, template))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TemplateSetArguments {
    pub character_id: String,
    /// The starting state.
    #[schemars(extend("type" = "object"))]
    pub template: Value,
    /// Strip MVU metadata first.
    #[serde(default)]
    pub mvu_strip: bool,
}

/// `TemplateSet`: a character's template set; replacing one asks first.
impl TypedTool<Arc<Snapshots>> for TemplateSetArguments {
    type Output = TemplateOutput;
    const TOOL: Declaration = declare! {
        "TemplateSet", "Set character template", OVERWRITES, TEMPLATE_SET, pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<TemplateOutput> {
        let template = without_mvu_metadata(self.template, self.mvu_strip);
        service(&context).set_template(&self.character_id, &template)?;
        Ok(TemplateOutput::new(self.character_id, Some(template)))
    }

    /// A character's first template destroys nothing; replacing one is asked.
    fn consent(service: &Arc<Snapshots>, arguments: &Value) -> Result<Consent, ToolError> {
        let arguments: Self = parse_arguments(Self::TOOL.name, arguments.clone())?;
        let replaces = service.template(&arguments.character_id)?.is_some();
        Ok(Consent::asked_when(replaces))
    }
}

impl TemplateOutput {
    /// A character's template; none stored is answered as absent.
    fn new(character_id: String, template: Option<Value>) -> Self {
        Self {
            character_id,
            template: template.unwrap_or(Value::Null),
        }
    }
}
