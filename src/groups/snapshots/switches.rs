//! The processing switch of the `snapshots` group: `SnapshotEnable` turns state processing on
//! or off for a chat or a character (`docs/snapshots.md#the-flow-over-a-chat`).

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::OVERWRITES;
use crate::groups::{off_thread, structured};
use crate::snapshots::Snapshots;
use crate::snapshots::switches::{Setting, Switches};
use crate::tools::{Tool, ToolCall, ToolDefinition, ToolError, ToolOutput};

const SWITCH: &str = "Switch state processing on or off for a chat (`chatFile`) or a character \
    (`characterId`); `inherit` removes the setting. A chat's setting wins over its character's; \
    with neither, processing is on. SnapshotProcess on a chat that is off stores nothing and \
    says so. Returns every switch set.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SwitchArguments {
    /// The chat to switch (give this or `characterId`).
    pub chat_file: Option<String>,
    /// The character to switch: all its chats without a setting of their own.
    pub character_id: Option<String>,
    /// `on`, `off`, or `inherit` (remove this setting).
    pub setting: Setting,
}

/// `SnapshotEnable`: a chat's or a character's processing switched; answers every switch set.
pub(super) struct SnapshotEnable {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotEnable {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<SwitchArguments>("SnapshotEnable", SWITCH, OVERWRITES)
                .with_title("Switch chat state processing on or off")
                .with_output::<Switches>();
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotEnable {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(
            &self.definition,
            call,
            move |arguments: SwitchArguments, _| {
                let switches = service.set_switch(
                    arguments.chat_file.as_deref(),
                    arguments.character_id.as_deref(),
                    arguments.setting,
                )?;
                structured(&switches)
            },
        )
    }
}
