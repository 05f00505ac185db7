//! Prompts: `tool-rules`, the full tool-rules text (the server instructions give the essentials
//! and point here), and
//! one argument-less prompt per skill, `skill-{name}`, whose message is the skill's activation
//! text (the body in `<skill_content>`), and `state-functions`, the chat snapshots' function
//! block for a character (or the global library).

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};

use super::errors;
use crate::groups::skills::skill_content;
use crate::skills::Library;
use crate::snapshots::Snapshots;
use crate::tools::Executor;

const TOOL_RULES: &str = "tool-rules";
const STATE_FUNCTIONS: &str = "state-functions";
const SKILL_PREFIX: &str = "skill-";

pub(super) fn list(library: &Library) -> Vec<Prompt> {
    let mut prompts = vec![Prompt::new(
        TOOL_RULES,
        Some(
            "How to use this server's tools: variables, $VAR_REF references, output limits, approvals, and the index of on-demand rules",
        ),
        None,
    )];
    prompts.push(Prompt::new(
        STATE_FUNCTIONS,
        Some(
            "The <variable_system_functions> block that teaches a role-play model the state function calls (@.SET, @.ADD, …) enabled for a character",
        ),
        Some(vec![
            PromptArgument::new("characterId")
                .with_description("The character whose own functions to include too")
                .with_required(false),
        ]),
    ));
    prompts.extend(library.skills().iter().map(|skill| {
        Prompt::new(
            format!("{SKILL_PREFIX}{}", skill.name),
            Some(skill.description.clone()),
            None,
        )
    }));
    prompts
}

pub(super) fn get(
    executor: &Executor,
    library: &Library,
    snapshots: &Snapshots,
    name: &str,
    arguments: Option<&JsonObject>,
) -> Result<GetPromptResult, ErrorData> {
    if name == STATE_FUNCTIONS {
        let character = arguments
            .and_then(|arguments| arguments.get("characterId"))
            .and_then(|value| value.as_str());
        let text = snapshots
            .prompt(character)
            .map_err(errors::snapshots_failed)?;
        return Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description("The state functions a model may call in its replies"),
        );
    }
    if name == TOOL_RULES {
        return Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            executor.tool_rules(),
        )])
        .with_description("The synapse-mcp tool rules"));
    }
    let skill = name
        .strip_prefix(SKILL_PREFIX)
        .and_then(|skill| library.find(skill))
        .ok_or_else(|| {
            errors::prompt_not_found(name, &[TOOL_RULES, STATE_FUNCTIONS, "skill-{name}"])
        })?;
    let body = skill
        .body()
        .map_err(|error| errors::skill_resource_error(name, error))?;
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        skill_content(skill, &body),
    )])
    .with_description(skill.description.clone()))
}
