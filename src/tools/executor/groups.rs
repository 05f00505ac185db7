//! Tool groups on the executor: registering a group (its tools in the registry, its declared
//! rules as pinned `RULE` variables in the workspace), and the instructions and tool-rules text
//! of the enabled groups — all as they are for the tools that are on in this workspace (see
//! [`crate::rules`]): after a switch, [`Executor::store_registered_rules`] brings the rule
//! variables in line.

use std::collections::HashSet;

use super::Executor;
use crate::rules::{self, Section, SkillRule};
use crate::tools::{RegisterError, ToolGroup};
use crate::vars::{NewVariable, VarType};

impl Executor {
    /// Registers a group and stores its declared rules as pinned `RULE` variables. A rule may
    /// need another group's tools: groups registered together at start are registered in the
    /// registry first and their rules stored once, by [`Executor::store_registered_rules`].
    pub fn register_group(&self, group: ToolGroup, enabled: bool) -> Result<(), RegisterError> {
        self.registry.register(group, enabled)?;
        self.store_registered_rules();
        Ok(())
    }

    /// Registers groups that start together, each on or off; their rules are stored by
    /// [`Executor::store_registered_rules`] once the rest of the start is done.
    pub fn register_groups(
        &self,
        groups: impl IntoIterator<Item = (ToolGroup, bool)>,
    ) -> Result<(), RegisterError> {
        for (group, enabled) in groups {
            self.registry.register(group, enabled)?;
        }
        Ok(())
    }

    /// Stores the rules of every registered group as pinned `RULE` variables, as they are for
    /// the tools that are on: at start, for an executor over another workspace that shares this
    /// registry, and after a switch.
    pub fn store_registered_rules(&self) {
        let on = self.tools_on();
        for group in &self.registry.groups() {
            self.store_rules(group, &on);
        }
    }

    /// Writes a group's declared rules as pinned `RULE` variables, those that changed only, as
    /// they are for the tools that are on; a rule that needs a tool which is off is withdrawn.
    fn store_rules(&self, group: &ToolGroup, on: &HashSet<String>) {
        if group.rules.is_empty() {
            return;
        }
        let is_on = |tool: &str| on.contains(tool);
        let (current, withdrawn): (Vec<_>, Vec<_>) = (group.rules.iter())
            .map(|rule| (rule, rule.for_tools(&is_on)))
            .partition(|(_, current)| current.is_some());
        let withdrawn: Vec<String> = withdrawn
            .into_iter()
            .map(|(rule, _)| rules::variable_name(&group.name, &rule.name))
            .filter(|name| self.workspace.holds(name))
            .collect();
        if !withdrawn.is_empty()
            && let Err(error) = self.workspace.remove_rules(&withdrawn)
        {
            tracing::error!(group = %group.name, %error, "cannot withdraw the rules of tools that are off");
        }
        let variables: Vec<NewVariable> = current
            .into_iter()
            .filter_map(|(_, rule)| rule)
            .map(|rule| {
                let mut variable = NewVariable::text(
                    rules::variable_name(&group.name, &rule.name),
                    rule.prompt.as_str(),
                    VarType::Rule,
                );
                variable.desc = Some(rules::variable_description(&group.name, &rule));
                variable.keep = true;
                variable
            })
            .collect();
        // Only rules that changed are written (one durable commit for all of them), so a
        // start with unchanged rules writes nothing; a failed write (a full disk, a read-only
        // store) is logged and the server starts anyway, serving what is stored.
        let changed: Vec<NewVariable> = variables
            .into_iter()
            .filter(|variable| !self.rule_is_stored(variable))
            .collect();
        if !changed.is_empty()
            && let Err(error) = self.workspace.insert_all(changed)
        {
            tracing::error!(group = %group.name, %error, "cannot store the group's rules; starting without updating them");
        }
    }

    /// Whether a rule variable is stored exactly as it would be written.
    fn rule_is_stored(&self, variable: &NewVariable) -> bool {
        self.workspace.peek(&variable.name).is_some_and(|stored| {
            *stored.value == *variable.value
                && stored.desc == variable.desc
                && stored.var_type == variable.var_type
                && stored.keep == variable.keep
        })
    }

    /// The server `instructions` for the enabled groups: the essentials, and where the rest is.
    /// The groups that are off and say what they offer are named, one line each.
    pub fn instructions(&self) -> String {
        let off = self.tools().disabled_groups();
        let off: Vec<(&str, &str)> = (off.iter())
            .filter_map(|group| Some((group.name.as_str(), group.about?)))
            .collect();
        self.with_sections(|sections| rules::instructions_text(sections, &off))
    }

    /// The full tool-rules text for the enabled groups (the prompt `tool-rules`).
    pub fn tool_rules(&self) -> String {
        self.with_sections(rules::tool_rules_text)
    }

    fn with_sections(&self, render: impl FnOnce(&[rules::Section<'_>]) -> String) -> String {
        let groups = self.tools().enabled_groups();
        let on = self.tools_on();
        let is_on = |tool: &str| on.contains(tool);
        let sections: Vec<_> = groups
            .iter()
            .map(|group| Section {
                group: &group.name,
                prompt: (group.rule_prompt.as_deref())
                    .map(|prompt| rules::for_tools(prompt, &is_on).into_owned()),
                rules: (group.rules.iter())
                    .filter_map(|rule| rule.for_tools(&is_on))
                    .collect(),
            })
            .collect();
        render(&sections)
    }

    /// The names of the tools that are on in this workspace.
    fn tools_on(&self) -> HashSet<String> {
        (self.tools().enabled_tools().iter())
            .map(|tool| tool.definition().name.clone())
            .collect()
    }

    /// Every registered group's rules as they are for the tools that are on, by group name;
    /// those that need a tool which is off are left out.
    pub fn served_rules(&self) -> Vec<(String, SkillRule)> {
        let on = self.tools_on();
        let is_on = |tool: &str| on.contains(tool);
        (self.registry.groups().iter())
            .flat_map(|group| {
                (group.rules.iter())
                    .filter_map(|rule| rule.for_tools(&is_on))
                    .map(|rule| (group.name.clone(), rule))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// A declared rule of any registered group, as it is for the tools that are on; `None` for
    /// one that needs a tool which is off.
    pub fn find_rule(&self, group: &str, rule: &str) -> Option<SkillRule> {
        let declared = (self.registry.groups().iter())
            .filter(|g| g.name == group)
            .find_map(|g| g.rules.iter().find(|r| r.name == rule).cloned())?;
        let on = self.tools_on();
        declared.for_tools(&|tool: &str| on.contains(tool))
    }
}
