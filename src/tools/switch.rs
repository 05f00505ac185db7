//! A switch of a tool group or a single tool, as a call asks for it (`ToolGroups`): read from
//! the call's `group`/`tool`, described for the approval question, and applied to a
//! workspace's [`View`] of the registry, durably, before the overview it answers with.

use super::{Consent, GroupOverview, ToolError, View};
use crate::workspace::Target;

/// One switch a call asks for.
pub struct Switch {
    target: Target,
    enabled: bool,
}

impl Switch {
    /// The switch a call asks for: `enabled` is `None` to list (then neither `group` nor `tool`
    /// may be given), `Some(on)` to switch exactly one of them; `None` to list.
    pub fn requested(
        enabled: Option<bool>,
        group: Option<&str>,
        tool: Option<&str>,
    ) -> Result<Option<Self>, ToolError> {
        let target = match (group, tool) {
            (Some(group), None) => Some(Target::Group(group.to_owned())),
            (None, Some(tool)) => Some(Target::Tool(tool.to_owned())),
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid(
                    "give either `group` or `tool`, not both: a switch changes one of them",
                ));
            }
            (None, None) => None,
        };
        let enabled = match enabled {
            None if target.is_some() => {
                return Err(ToolError::invalid(
                    "`list` takes no `group` or `tool`; to switch one, give `action: \"enable\"` \
                     or `\"disable\"`",
                ));
            }
            None => return Ok(None),
            Some(enabled) => enabled,
        };
        let Some(target) = target else {
            return Err(ToolError::invalid(format!(
                "`{}` needs the `group` or the `tool` to switch; `action: \"list\"` shows them",
                if enabled { "enable" } else { "disable" }
            )));
        };
        Ok(Some(Self { target, enabled }))
    }

    /// What the user approves: listing changes nothing and is not asked; a switch is asked per
    /// target and direction.
    pub fn consent(switch: Option<&Self>) -> Consent {
        match switch {
            None => Consent::NotNeeded,
            Some(switch) => Consent::Asked {
                scope: Some(switch.describe()),
            },
        }
    }

    /// Switches it in the workspace, durably; returns the group it concerns. `keeper` (the
    /// switching tool and its group) is never switched off: with it off, nothing could switch
    /// it back on.
    fn apply(&self, tools: &View<'_>, keeper: (&str, &str)) -> Result<String, ToolError> {
        let group = tools.group_of_target(&self.target)?;
        let (tool_name, group_name) = keeper;
        if !self.enabled && (group == group_name) {
            return Err(ToolError::invalid(format!(
                "`{tool_name}` and its group `{group_name}` stay on: with them off, nothing could \
                 switch them back on"
            )));
        }
        tools.switch(self.target.clone(), self.enabled)?;
        Ok(group)
    }

    fn describe(&self) -> String {
        let (kind, name) = match &self.target {
            Target::Group(name) => ("group", name),
            Target::Tool(name) => ("tool", name),
        };
        let state = if self.enabled { "on" } else { "off" };
        format!("{kind} `{name}` switched {state}")
    }
}

/// What a listing or a switch answers: every group, or the one a switch changed, and what the
/// switch did.
pub struct Switched {
    pub groups: Vec<GroupOverview>,
    pub changed: Option<String>,
}

impl View<'_> {
    /// Applies `switch`, if any (see `Switch::apply` for `keeper`), then the overview: of the
    /// group it changed, or of every group.
    pub fn list_or_switch(
        &self,
        switch: Option<&Switch>,
        keeper: (&str, &str),
    ) -> Result<Switched, ToolError> {
        let Some(switch) = switch else {
            let groups = self.overview();
            return Ok(Switched {
                groups,
                changed: None,
            });
        };
        let group = switch.apply(self, keeper)?;
        let groups = (self.overview().into_iter())
            .filter(|overview| overview.name == group)
            .collect();
        Ok(Switched {
            groups,
            changed: Some(switch.describe()),
        })
    }
}
