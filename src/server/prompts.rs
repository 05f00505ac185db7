//! Prompts: `tool-rules`, the full tool-rules text (the same as the server instructions).

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, Prompt, PromptMessage, Role};

use super::errors;
use crate::tools::Executor;

const TOOL_RULES: &str = "tool-rules";

pub(super) fn list() -> Vec<Prompt> {
    vec![Prompt::new(
        TOOL_RULES,
        Some(
            "How to use this server's tools: variables, $VAR_REF references, output limits, approvals, and the index of on-demand rules",
        ),
        None,
    )]
}

pub(super) fn get(executor: &Executor, name: &str) -> Result<GetPromptResult, ErrorData> {
    if name != TOOL_RULES {
        return Err(errors::prompt_not_found(name, &[TOOL_RULES]));
    }
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        executor.tool_rules(),
    )])
    .with_description("The synapse-mcp tool rules"))
}
