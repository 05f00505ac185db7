//! The group and tool names the configuration file gives (`[groups]`, `[tools.X]`), checked
//! against what the server serves, so that a misspelt one is not silently a switch of nothing.
//! Built-in names are known at start: an unknown built-in tool name (one without `__`, which
//! every script and upstream tool has) or a group name close to a built-in one stops the start
//! with an error listing the valid names. Script groups and tools are known once the tool
//! folders are scanned (before serving), an upstream's tools once it has listed them: a name
//! that still matches nothing then is a warning.

use crate::groups::built_in_names;
use crate::text::nearest;
use crate::tools::Origin;

use super::{App, Error, Settings};

/// Checks the configured names against the groups and tools registered at start. Returns the
/// `[tools]` names that only an upstream server can answer for, to be checked by
/// [`warn_unlisted`] once the upstreams have listed their tools.
pub fn check(app: &App, config: &Settings) -> Result<Vec<String>, Error> {
    let groups = app.executor().registry().groups();
    let upstreams: Vec<&str> = config.upstreams.iter().map(|up| up.name.as_str()).collect();
    let file = config
        .file
        .as_ref()
        .map_or_else(String::new, |path| format!(" of {}", path.display()));
    for name in config.groups.keys() {
        let known = built_in_names().contains(&name.as_str())
            || upstreams.contains(&name.as_str())
            || groups.iter().any(|group| group.name == *name);
        if known {
            continue;
        }
        if let Some(meant) = nearest(name, built_in_names().iter().copied()) {
            return Err(Error::UnknownName(format!(
                "[groups] `{name}`{file} is no group (did you mean `{meant}`?): the built-in \
                 groups are {}; a script folder or an [[upstream]] table names a group too",
                built_in_names().join(", ")
            )));
        }
        tracing::warn!(
            "[groups] `{name}`{file} names no built-in group, script group or [[upstream]]: it \
             switches nothing until one of that name appears"
        );
    }
    let built_in: Vec<String> = (groups.iter())
        .filter(|group| group.origin == Origin::BuiltIn)
        .flat_map(|group| {
            group
                .tools
                .iter()
                .map(|tool| tool.definition().name.clone())
        })
        .collect();
    let mut deferred = Vec::new();
    let mut names: Vec<&String> = config.executor.overrides.keys().collect();
    names.sort();
    for name in names {
        if serves(&groups, name) {
            continue;
        }
        if !name.contains(crate::script_tools::SEPARATOR) {
            let meant = nearest(name, built_in.iter().map(String::as_str))
                .map(|meant| format!(" (did you mean `{meant}`?)"))
                .unwrap_or_default();
            return Err(Error::UnknownName(format!(
                "[tools.{name}]{file} is no tool{meant}: the built-in tools are {}; script and \
                 upstream tools are named `group__tool`",
                built_in.join(", ")
            )));
        }
        let group = group_of(name);
        if upstreams.contains(&group) {
            deferred.push(name.clone());
        } else {
            tracing::warn!(
                "[tools.{name}]{file} names no tool: no script group or [[upstream]] `{group}` \
                 serves one of that name"
            );
        }
    }
    Ok(deferred)
}

/// Warns of each `[tools]` name of an upstream's tool that the upstream does not list, once
/// that upstream is up: a server whose first try failed is checked when a later try lists its
/// tools, not warned of as listing nothing meanwhile.
pub async fn warn_unlisted(app: &App, mut names: Vec<String>) {
    let registry = app.executor().registry();
    let mut changes = registry.subscribe();
    loop {
        let groups = registry.groups();
        names.retain(|name| {
            let upstream = group_of(name);
            if registry.unavailable(upstream).is_some() {
                return true;
            }
            if !serves(&groups, name) {
                tracing::warn!(
                    "[tools.{name}] names no tool: its upstream server does not list one of that \
                     name"
                );
            }
            false
        });
        if names.is_empty() || changes.changed().await.is_err() {
            return;
        }
    }
}

/// The group part of a script or upstream tool's name, `group` of `group__tool`.
fn group_of(name: &str) -> &str {
    (name.split(crate::script_tools::SEPARATOR))
        .next()
        .unwrap_or_default()
}

/// Whether one of `groups` has a tool called `name`.
fn serves(groups: &[std::sync::Arc<crate::tools::ToolGroup>], name: &str) -> bool {
    (groups.iter()).any(|group| {
        group
            .tools
            .iter()
            .any(|tool| tool.definition().name == name)
    })
}
