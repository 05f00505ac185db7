//! The `tools` group: `ToolGroups`, which lists every tool group (built-in, script folders,
//! other MCP servers) with its tools, and switches a group or a tool on or off for the
//! workspace. A switch is stored before it takes effect, wins over the configuration's default
//! from then on (also after a restart, and for a group that is not there today), and changes
//! `tools/list` at once (the server sends `notifications/tools/list_changed`); the rules of a
//! group switched off leave the instructions and the `tool-rules` prompt with it.
//!
//! Hosts that cap how many tools they show (Cursor, Windsurf) are the reason: a user with several
//! upstream servers keeps on only what the task needs. Listing changes nothing and never asks;
//! a switch asks the user once per target (`ask-once`, bound to the group or tool and the
//! direction).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::{
    Annotations, Answered, Consent, Context, Declaration, GroupOverview, Origin, Switch, Switched,
    ToolError, ToolGroup, TypedTool, declare, parse_arguments, typed,
};

pub const GROUP: &str = "tools";

/// The tool that switches the others; it cannot switch itself or its group off.
const NAME: &str = "ToolGroups";

const DESCRIPTION: &str = "List the tool groups and their tools (`action: \"list\"`, the default), \
    or switch a `group` or `tool` on or off for this workspace (`enable`, `disable`; the user \
    approves). Turn a group on when the task needs it, off when the host shows too many tools; the \
    tool list changes at once.";

/// What to do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Every group and its tools, on or off.
    #[default]
    List,
    /// Switch `group` or `tool` on.
    Enable,
    /// Switch `group` or `tool` off.
    Disable,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Arguments {
    /// Default `list`.
    pub action: Option<Action>,
    /// The group to switch.
    pub group: Option<String>,
    /// The tool to switch.
    pub tool: Option<String>,
}

/// The groups, or the one a switch changed.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub groups: Vec<GroupEntry>,
    /// What a switch did, when the call switched something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupEntry {
    pub name: String,
    /// Where the tools come from: `built-in`, a scripts folder or another MCP server.
    pub origin: String,
    pub enabled: bool,
    /// What the group offers, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    pub tools: Vec<ToolEntry>,
    /// Why its tools cannot be served now (its MCP server is not running, with the reason and
    /// the next try), when so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolEntry {
    pub name: String,
    /// The tool's own name on the MCP server it comes from, when it is served under another
    /// (`{group}__{tool}`, with characters clients refuse replaced and long names shortened).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_name: Option<String>,
    /// The tool's own switch; it is listed when its group is on too.
    pub enabled: bool,
}

/// The group with its one tool.
pub fn group() -> ToolGroup {
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
        about: None,
        tools: vec![typed::<Arguments, _>(())],
        rule_prompt: None,
        rules: Vec::new(),
    }
}

/// `ToolGroups`: switches are stored in the workspace before the registry changes, so an
/// acknowledged switch survives a restart.
impl TypedTool for Arguments {
    type Output = Output;
    const TOOL: Declaration = declare! {
        NAME, "Tool groups on and off", SWITCHES, DESCRIPTION, asks_once
    };

    async fn run(self, context: Context<'_>) -> Answered<Output> {
        let switch = self.switch()?;
        let executor = context.session()?.executor;
        let switched = executor
            .tools()
            .list_or_switch(switch.as_ref(), (NAME, GROUP))?;
        if switch.is_some() {
            // The rules follow the tools: those of a tool switched off are withdrawn.
            executor.store_registered_rules();
        }
        Ok(switched.into())
    }

    /// Listing changes nothing; a switch is approved per target and direction.
    fn consent((): &(), arguments: &Value) -> Result<Consent, ToolError> {
        let arguments: Self = parse_arguments(NAME, arguments.clone())?;
        Ok(Switch::consent(arguments.switch()?.as_ref()))
    }
}

impl Arguments {
    /// The switch the arguments ask for; `None` to list.
    fn switch(&self) -> Result<Option<Switch>, ToolError> {
        let enabled = match self.action.unwrap_or_default() {
            Action::List => None,
            Action::Enable => Some(true),
            Action::Disable => Some(false),
        };
        Switch::requested(enabled, self.group.as_deref(), self.tool.as_deref())
    }
}

/// Switching adds or removes nothing but the switch; the same switch again changes nothing.
const SWITCHES: Annotations = Annotations::NONE.idempotent();

impl From<Switched> for Output {
    fn from(switched: Switched) -> Self {
        Self {
            groups: switched.groups.into_iter().map(Into::into).collect(),
            changed: switched.changed,
        }
    }
}

impl From<GroupOverview> for GroupEntry {
    fn from(overview: GroupOverview) -> Self {
        Self {
            name: overview.name,
            origin: overview.origin.to_string(),
            enabled: overview.enabled,
            about: overview.about.map(str::to_owned),
            tools: overview
                .tools
                .into_iter()
                .map(|tool| ToolEntry {
                    name: tool.name,
                    origin_name: tool.origin_name,
                    enabled: tool.enabled,
                })
                .collect(),
            unavailable: overview.unavailable,
        }
    }
}
