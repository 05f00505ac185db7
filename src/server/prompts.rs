//! Prompts: `tool-rules`, the full tool-rules text (the server instructions give the essentials
//! and point here); `skill`, whose `name` argument (completed from the library) picks the skill
//! whose activation text (the body in `<skill_content>`) is the message; and `state-functions`,
//! the chat snapshots' function block for a character (or the global library). With
//! `skill_prompts = true` in the configuration, one argument-less prompt per skill,
//! `skill-{name}`, is listed too (a library of 165 skills made 167 prompts, 70 KB, in every
//! host's slash-command menu); they are answered either way.

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};

use super::errors;
use crate::groups::skills::skill_content;
use crate::skills::{Library, Skill};
use crate::snapshots::Snapshots;
use crate::tools::Executor;

const TOOL_RULES: &str = "tool-rules";
const STATE_FUNCTIONS: &str = "state-functions";
/// The prompt of one skill, chosen by its `name` argument.
pub(super) const SKILL: &str = "skill";
const SKILL_PREFIX: &str = "skill-";

/// The prompts `prompts/list` shows; `per_skill`: one `skill-{name}` prompt per skill too.
pub(super) fn list(library: &Library, per_skill: bool) -> Vec<Prompt> {
    let mut prompts = vec![Prompt::new(
        TOOL_RULES,
        Some(
            "How to use this server's tools: variables, $VAR_REF references, output limits, approvals, and the index of on-demand rules",
        ),
        None,
    )];
    prompts.push(Prompt::new(
        SKILL,
        Some("A skill's instructions, to follow: the SKILL.md body in <skill_content>"),
        Some(vec![
            PromptArgument::new("name")
                .with_description("The skill's name (completion lists the library's skills)")
                .with_required(true),
        ]),
    ));
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
    if per_skill {
        prompts.extend(library.skills().iter().map(|skill| {
            Prompt::new(
                format!("{SKILL_PREFIX}{}", skill.name),
                Some(skill.description.clone()),
                None,
            )
        }));
    }
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
    let argument = |key: &str| {
        arguments
            .and_then(|arguments| arguments.get(key))
            .and_then(|value| value.as_str())
    };
    let skill = if name == SKILL {
        let wanted = argument("name").ok_or_else(|| {
            ErrorData::invalid_params(
                "prompt `skill` needs its `name` argument: a skill's name (completion/complete lists them)",
                None,
            )
        })?;
        library
            .get(wanted)
            .map_err(|error| errors::prompt_skill_error(SKILL, error))?
    } else {
        name.strip_prefix(SKILL_PREFIX)
            .and_then(|skill| library.find(skill))
            .ok_or_else(|| errors::prompt_not_found(name, &[TOOL_RULES, SKILL, STATE_FUNCTIONS]))?
    };
    activation(skill, name)
}

/// A skill's prompt: its body in `<skill_content>`, described by its description.
fn activation(skill: &Skill, prompt: &str) -> Result<GetPromptResult, ErrorData> {
    let body = skill
        .body()
        .map_err(|error| errors::skill_resource_error(prompt, error))?;
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        skill_content(skill, &body),
    )])
    .with_description(skill.description.clone()))
}
