//! The tool groups synapse-mcp offers. Every built-in tool is declared the same way: its
//! `///`-documented argument type implements [`crate::tools::TypedTool`] — a
//! [`crate::tools::Declaration`] (which also says, as data, how the executor treats its calls),
//! its answer type, where it runs, and a `run` of a few lines that calls the domain, turning
//! domain errors into tool errors with `?` (`tools/errors.rs`). The blanket
//! [`crate::tools::Typed`] decodes, runs and builds the result; the executor in `tools` does
//! everything around it.

pub mod plans;
pub mod script_tools;
pub mod scripts;
pub mod skills;
pub mod snapshots;
pub mod tool_groups;
pub mod vars;

use std::sync::Arc;

use crate::rules::AGENT_GROUP;
use crate::skills::shelf::Shelf;
use crate::snapshots::Snapshots;
use crate::tools::{Origin, ToolGroup};

/// What the built-in groups are built with.
pub struct Services<'a> {
    pub snapshots: &'a Arc<Snapshots>,
    pub shelf: &'a Arc<Shelf>,
    /// The most characters of skill instructions, or of a markdown file, served whole.
    pub skill_body_limit: usize,
}

/// One built-in group: its name, whether it is on by default, and how to build it with its
/// tools.
pub struct BuiltIn {
    pub name: &'static str,
    /// On unless the configuration's `[groups]` says otherwise.
    pub enabled: bool,
    /// Whether `[groups]` may switch it (the `Agent` group, which holds the agent's rules and
    /// no tools, is always on).
    pub configurable: bool,
    pub build: fn(&Services<'_>) -> ToolGroup,
}

/// The built-in groups, in the order they are registered (and listed).
pub const BUILT_IN_GROUPS: [BuiltIn; 7] = [
    BuiltIn {
        configurable: false,
        ..built_in(AGENT_GROUP, true, agent_group)
    },
    built_in(vars::GROUP, true, |_| vars::group()),
    built_in(plans::GROUP, true, |_| plans::group()),
    // Chat snapshots serve role-play front ends: `--groups default,snapshots`.
    built_in(snapshots::GROUP, false, |services| {
        snapshots::group(services.snapshots)
    }),
    built_in(skills::GROUP, true, |services| {
        skills::group(Arc::clone(services.shelf), services.skill_body_limit)
    }),
    // Running skill scripts is opt-in: `[groups] scripts = true` in the config file.
    built_in(scripts::GROUP, false, |services| {
        scripts::group(Arc::clone(services.shelf))
    }),
    built_in(tool_groups::GROUP, true, |_| tool_groups::group()),
];

/// The `Agent` group: the agent's rules, and no tools.
fn agent_group(_: &Services<'_>) -> ToolGroup {
    ToolGroup {
        name: AGENT_GROUP.to_owned(),
        origin: Origin::BuiltIn,
        about: None,
        tools: Vec::new(),
        rule_prompt: None,
        rules: crate::rules::agent_rules(),
    }
}

const fn built_in(
    name: &'static str,
    enabled: bool,
    build: fn(&Services<'_>) -> ToolGroup,
) -> BuiltIn {
    BuiltIn {
        name,
        enabled,
        configurable: true,
        build,
    }
}

/// The names of the built-in groups; a script folder or another MCP server may not take one.
pub const BUILT_IN: [&str; BUILT_IN_GROUPS.len()] = {
    let mut names = [""; BUILT_IN_GROUPS.len()];
    let mut index = 0;
    while index < names.len() {
        names[index] = BUILT_IN_GROUPS[index].name;
        index += 1;
    }
    names
};

/// The names of the built-in groups, for the checks of names given elsewhere (the
/// configuration's `[groups]` and `[[upstream]]` tables, script folders).
pub fn built_in_names() -> &'static [&'static str] {
    &BUILT_IN
}

/// The built-in groups a configuration, `--groups` or a token may switch (all but `Agent`).
pub fn switchable() -> impl Iterator<Item = &'static BuiltIn> {
    BUILT_IN_GROUPS.iter().filter(|group| group.configurable)
}

/// Whether the built-in group `name` is on by default; `None` for a name that is not one.
pub fn enabled_by_default(name: &str) -> Option<bool> {
    (BUILT_IN_GROUPS.iter())
        .find(|group| group.name == name)
        .map(|group| group.enabled)
}

#[cfg(test)]
mod tests {
    use super::{BUILT_IN, built_in_names, enabled_by_default};

    #[test]
    fn the_table_names_every_built_in_group_once_in_registration_order() {
        let expected = [
            "Agent",
            "vars",
            "plans",
            "snapshots",
            "skills",
            "scripts",
            "tools",
        ];
        assert_eq!(BUILT_IN, expected);
        assert_eq!(built_in_names(), expected);
    }

    #[test]
    fn the_snapshots_and_scripts_groups_start_off() {
        let off: Vec<&str> = BUILT_IN
            .into_iter()
            .filter(|name| enabled_by_default(name) == Some(false))
            .collect();
        assert_eq!(off, ["snapshots", "scripts"]);
        assert_eq!(enabled_by_default("not-a-group"), None);
    }
}
