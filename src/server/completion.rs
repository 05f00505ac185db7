//! `completion/complete`: values for every argument of every resource template and prompt,
//! those that start with what was typed, sorted, at most 100 of them with the `total` and
//! `hasMore` that say whether more matched.

use rmcp::ErrorData;
use rmcp::model::{CompleteRequestParams, CompletionInfo, Reference};
use serde_json::Value;

use super::{errors, prompts, skills};
use crate::skills::Library;
use crate::snapshots::Snapshots;
use crate::tools::Executor;

const STATE_FUNCTIONS: &str = "state-functions";

/// Everything the completion values come from.
pub(super) struct Sources<'a> {
    pub executor: &'a Executor,
    pub library: &'a Library,
    pub snapshots: &'a Snapshots,
}

pub(super) fn complete(
    sources: &Sources<'_>,
    request: &CompleteRequestParams,
) -> Result<CompletionInfo, ErrorData> {
    let typed = request.argument.value.as_str();
    let argument = request.argument.name.as_str();
    let context = |name: &str| {
        request
            .context
            .as_ref()
            .and_then(|context| context.arguments.as_ref())
            .and_then(|arguments| arguments.get(name))
            .map(String::as_str)
    };
    let candidates = match &request.r#ref {
        Reference::Prompt(prompt) => match (prompt.name.as_str(), argument) {
            (STATE_FUNCTIONS, "characterId") => sources
                .snapshots
                .characters()
                .map_err(errors::snapshots_failed)?,
            (prompts::SKILL, "name") => sources
                .library
                .skills()
                .iter()
                .map(|skill| skill.name.as_str())
                .filter(|name| name.starts_with(typed))
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        },
        Reference::Resource(template) => match (template.uri.as_str(), argument) {
            ("var://{name}", "name") => variable_names(sources.executor, typed)?,
            ("state://{path}", "path") => state_paths(sources.executor, typed)?,
            ("snapshot://{chat}/{id}" | "snapshot://{chat}", "chat") => sources
                .snapshots
                .chats()
                .map_err(errors::snapshots_failed)?
                .into_iter()
                .map(|(chat, _)| chat)
                .collect(),
            ("snapshot://{chat}/{id}", "id") => match context("chat") {
                Some(chat) => sources
                    .snapshots
                    .snapshot_ids(chat)
                    .map_err(errors::snapshots_failed)?,
                None => Vec::new(),
            },
            ("rule://{group}/{rule}", "group") => rule_groups(sources.executor),
            ("rule://{group}/{rule}", "rule") => {
                context("group").map_or_else(Vec::new, |group| rules_of(sources.executor, group))
            }
            _ => skills::complete(sources.library, request),
        },
        // The enum is non-exhaustive: a kind of reference added later completes to nothing.
        _ => Vec::new(),
    };
    page(candidates, typed)
}

/// The candidates that start with `typed`, sorted and deduplicated, cut at 100.
fn page(mut candidates: Vec<String>, typed: &str) -> Result<CompletionInfo, ErrorData> {
    candidates.retain(|candidate| candidate.starts_with(typed));
    candidates.sort();
    candidates.dedup();
    let total = candidates.len();
    candidates.truncate(CompletionInfo::MAX_VALUES);
    CompletionInfo::with_pagination(
        candidates,
        Some(u32::try_from(total).unwrap_or(u32::MAX)),
        total > CompletionInfo::MAX_VALUES,
    )
    .map_err(|error| ErrorData::internal_error(error, None))
}

fn variable_names(executor: &Executor, typed: &str) -> Result<Vec<String>, ErrorData> {
    executor
        .workspace()
        .with_variables(|variables| {
            variables
                .iter()
                .map(|variable| variable.name.as_ref())
                .filter(|name| name.starts_with(typed))
                .map(str::to_owned)
                .collect()
        })
        .map_err(|error| errors::workspace_failed(&error))
}

/// One level of the state at a time: `user.` offers `user.name`, `user.tags`; an array offers
/// its indexes.
fn state_paths(executor: &Executor, typed: &str) -> Result<Vec<String>, ErrorData> {
    let state = executor
        .workspace()
        .state()
        .map_err(|error| errors::workspace_failed(&error))?;
    let (parent, prefix) = match typed.rsplit_once('.') {
        Some((parent, _)) => (parent, format!("{parent}.")),
        None => ("", String::new()),
    };
    let mut node = &state;
    for segment in parent.split('.').filter(|segment| !segment.is_empty()) {
        let child = match node {
            Value::Object(members) => members.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        let Some(child) = child else {
            return Ok(Vec::new());
        };
        node = child;
    }
    Ok(match node {
        Value::Object(members) => members.keys().map(|key| format!("{prefix}{key}")).collect(),
        Value::Array(items) => (0..items.len())
            .map(|index| format!("{prefix}{index}"))
            .collect(),
        _ => Vec::new(),
    })
}

fn rule_groups(executor: &Executor) -> Vec<String> {
    executor
        .registry()
        .groups()
        .iter()
        .filter(|group| !group.rules.is_empty())
        .map(|group| group.name.clone())
        .collect()
}

fn rules_of(executor: &Executor, group: &str) -> Vec<String> {
    executor
        .registry()
        .groups()
        .iter()
        .filter(|candidate| candidate.name == group)
        .flat_map(|group| group.rules.iter().map(|rule| rule.name.clone()))
        .collect()
}
