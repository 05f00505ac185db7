//! Resources: `skill://{name}/{path}` (a skill's files, in `server/skills.rs`),
//! `rule://{group}/{rule}` (a skill rule's markdown), `var://{name}` (a variable's value),
//! `state://{path}` (the plans' state document), `ui://synapse/workspace` (the workspace view,
//! an MCP App, in `server/view.rs`), `snapshot://{chat}` (a chat's floors, listed
//! per chat), `snapshot://{chat}/{id}` (a chat state snapshot) and `log://calls` (the tool-chain
//! log: the latest calls with their arguments and results cut for display). Variable and chat
//! names are
//! percent-encoded in URIs where they hold characters outside `A-Z a-z 0-9 - . _ ~ /` (for
//! chats, `/` too).

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};

use super::uri::{
    RULE_SCHEME, SKILL_SCHEME, SNAPSHOT_SCHEME, STATE_SCHEME, VAR_SCHEME, chat_uri, percent_decode,
    rule_uri, var_uri,
};
use super::{errors, skills, view};
use crate::json::path::Path;
use crate::skills::Library;
use crate::snapshots::Snapshots;
use crate::tools::Executor;
use crate::vars::{ListFilter, VarType, Variable};

/// The tool-chain log's URI, and how many calls it shows.
const CALLS_URI: &str = "log://calls";
const LOGGED_CALLS: usize = 50;

pub(super) fn templates() -> Vec<ResourceTemplate> {
    let mut templates = skills::templates();
    templates.extend([
        ResourceTemplate::new("var://{name}", "variable")
            .with_description("A variable's value (names percent-encoded)")
            .with_mime_type("text/plain"),
        ResourceTemplate::new("state://{path}", "state")
            .with_description("The plans' state document at a dot path (`state://` for all of it)")
            .with_mime_type("application/json"),
        ResourceTemplate::new("snapshot://{chat}", "floors")
            .with_description(
                "A chat's floors: its snapshots by message and swipe, with what each changed \
                 (chat names percent-encoded)",
            )
            .with_mime_type("application/json"),
        ResourceTemplate::new("snapshot://{chat}/{id}", "snapshot")
            .with_description("A chat state snapshot as JSON (chat names percent-encoded)")
            .with_mime_type("application/json"),
        ResourceTemplate::new("rule://{group}/{rule}", "rule")
            .with_description("A skill rule declared by a tool group")
            .with_mime_type("text/markdown"),
    ]);
    templates
}

pub(super) fn list(
    executor: &Executor,
    library: &Library,
    snapshots: &Snapshots,
) -> Result<Vec<Resource>, ErrorData> {
    let mut resources = skills::list(library);
    resources.push(view::resource());
    resources.push(
        Resource::new(CALLS_URI, "tool-chain log")
            .with_description(format!(
                "The latest {LOGGED_CALLS} calls whose results are stored, newest first, with \
                 their arguments and results cut for display"
            ))
            .with_mime_type("application/json"),
    );
    let chats = snapshots.chats().map_err(errors::snapshots_failed)?;
    for (chat, count) in chats {
        resources.push(
            Resource::new(chat_uri(&chat), chat.clone())
                .with_description(format!("{count} snapshots: the chat's floors"))
                .with_mime_type("application/json"),
        );
    }
    for (group, rule) in executor.served_rules() {
        resources.push(
            Resource::new(
                rule_uri(&group, &rule.name),
                format!("{group}/{}", rule.name),
            )
            .with_description(rule.desc)
            .with_mime_type("text/markdown"),
        );
    }
    let variables = executor
        .workspace()
        .list(&ListFilter::default())
        .map_err(|error| errors::workspace_failed(&error))?;
    for variable in variables.iter().filter(|variable| is_listed(variable)) {
        let mut resource = Resource::new(var_uri(&variable.name), variable.name.to_string())
            .with_mime_type("text/plain")
            .with_size(variable.value.len() as u64);
        if let Some(desc) = &variable.desc {
            resource = resource.with_description(desc.clone());
        }
        resources.push(resource);
    }
    Ok(resources)
}

/// Whether `resources/list` shows this variable. Cached tool results and their arguments are
/// not listed one by one (a listing that grew by two entries per call, and a
/// `resources/list_changed` after every call): they are reached through the `var://{name}`
/// template, `ListVars` and the hint of a truncated result.
pub(super) fn is_listed(variable: &Variable) -> bool {
    !matches!(
        variable.var_type,
        VarType::ToolCallResult | VarType::ToolCallArgs
    )
}

pub(super) fn read(
    executor: &Executor,
    library: &Library,
    snapshots: &Snapshots,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    if let Some(page) = view::read(uri) {
        return Ok(page);
    }
    if let Some(path) = uri.strip_prefix(SNAPSHOT_SCHEME) {
        return read_snapshot(snapshots, uri, path);
    }
    if uri == CALLS_URI {
        let calls = executor
            .recent_calls(LOGGED_CALLS)
            .map_err(|error| errors::workspace_failed(&error))?;
        let text = serde_json::json!({ "calls": calls }).to_string();
        let contents = ResourceContents::text(text, uri).with_mime_type("application/json");
        return Ok(ReadResourceResult::new(vec![contents]));
    }
    if uri.starts_with(SKILL_SCHEME) {
        return skills::read(library, uri);
    }
    if let Some(path) = uri.strip_prefix(RULE_SCHEME) {
        let rule = path
            .split_once('/')
            .and_then(|(group, rule)| executor.find_rule(group, rule))
            .ok_or_else(|| errors::resource_not_found(uri, "resources/list shows the rules"))?;
        let contents = ResourceContents::text(rule.prompt, uri).with_mime_type("text/markdown");
        return Ok(ReadResourceResult::new(vec![contents]));
    }
    if let Some(encoded) = uri.strip_prefix(VAR_SCHEME) {
        let name = percent_decode(encoded).ok_or_else(|| {
            errors::resource_not_found(uri, "the name is not valid percent-encoded UTF-8")
        })?;
        let found = executor
            .workspace()
            .get(&name)
            .map_err(|error| errors::workspace_failed(&error))?;
        let variable = found.ok_or_else(|| {
            errors::resource_not_found(uri, "no such variable; ListVars shows them")
        })?;
        let contents =
            ResourceContents::text(variable.value.to_string(), uri).with_mime_type("text/plain");
        return Ok(ReadResourceResult::new(vec![contents]));
    }
    if let Some(path) = uri.strip_prefix(STATE_SCHEME) {
        return read_state(executor, uri, path);
    }
    Err(errors::resource_not_found(
        uri,
        "synapse-mcp serves skill://, var://, rule://, state://, snapshot://, log://calls and \
         ui://synapse/workspace URIs",
    ))
}

/// Subscriptions are accepted for any `var://` or `rule://` URI, even before the variable exists.
pub(super) fn check_subscribable(_executor: &Executor, uri: &str) -> Result<(), ErrorData> {
    if uri.starts_with(VAR_SCHEME) || uri.starts_with(RULE_SCHEME) || uri.starts_with(STATE_SCHEME)
    {
        Ok(())
    } else {
        Err(errors::resource_not_found(
            uri,
            "only var://, rule:// and state:// resources can be subscribed to",
        ))
    }
}

fn read_state(executor: &Executor, uri: &str, path: &str) -> Result<ReadResourceResult, ErrorData> {
    let document = executor
        .workspace()
        .state()
        .map_err(|error| errors::workspace_failed(&error))?;
    let path = if path.is_empty() {
        Path::root()
    } else {
        Path::parse(path).map_err(|error| errors::resource_not_found(uri, &error.to_string()))?
    };
    let value = path
        .get(&document)
        .ok_or_else(|| errors::resource_not_found(uri, "the state has nothing at this path"))?;
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    let contents = ResourceContents::text(text, uri).with_mime_type("application/json");
    Ok(ReadResourceResult::new(vec![contents]))
}

/// A `snapshot://{chat}/{id}` that names no snapshot of that chat.
const NO_SUCH_SNAPSHOT: &str = "no such snapshot in this chat; SnapshotProcess returns the ids";

/// `snapshot://{chat}` (the newest page of floors, as `SnapshotList` gives it by default) or
/// `snapshot://{chat}/{id}`: the id must belong to the chat.
fn read_snapshot(
    snapshots: &Snapshots,
    uri: &str,
    path: &str,
) -> Result<ReadResourceResult, ErrorData> {
    if !path.contains('/') {
        let chat = percent_decode(path).ok_or_else(|| {
            errors::resource_not_found(uri, "the chat is not valid percent-encoded UTF-8")
        })?;
        let floors = snapshots
            .floors(&chat, crate::snapshots::FloorQuery::default())
            .map_err(|error| errors::snapshot_resource_error(uri, error, None))?;
        let text = serde_json::to_string_pretty(&floors).unwrap_or_default();
        let contents = ResourceContents::text(text, uri).with_mime_type("application/json");
        return Ok(ReadResourceResult::new(vec![contents]));
    }
    let (chat, id) = path
        .rsplit_once('/')
        .and_then(|(chat, id)| Some((percent_decode(chat)?, id)))
        .ok_or_else(|| {
            errors::resource_not_found(
                uri,
                "write snapshot://{chat}/{id}, the chat percent-encoded",
            )
        })?;
    let stored = snapshots
        .snapshot(id)
        .map_err(|error| errors::snapshot_resource_error(uri, error, Some(NO_SUCH_SNAPSHOT)))?;
    if stored.chat_file != chat {
        return Err(errors::resource_not_found(uri, NO_SUCH_SNAPSHOT));
    }
    let text =
        serde_json::to_string_pretty(&stored.value).unwrap_or_else(|_| stored.value.to_string());
    let contents = ResourceContents::text(text, uri).with_mime_type("application/json");
    Ok(ReadResourceResult::new(vec![contents]))
}
