//! The processing switch of the `snapshots` group: `SnapshotEnable` turns state processing on
//! or off for a chat or a character (`docs/snapshots.md#the-flow-over-a-chat`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Call, OVERWRITES, service};
use crate::snapshots::Snapshots;
use crate::snapshots::switches::{Setting, Switches};
use crate::tools::{Answered, Declaration, TypedTool, declare};

const SWITCH: &str = "Switch state processing `on` or `off` for a chat or a character (`inherit` \
    removes the setting). A chat's setting wins; with neither, it is on. Returns every switch set.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SwitchArguments {
    /// The chat (or give `characterId`).
    pub chat_file: Option<String>,
    /// The character: its chats without their own setting.
    pub character_id: Option<String>,
    /// `inherit` removes this setting.
    pub setting: Setting,
}

/// `SnapshotEnable`: a chat's or a character's processing switched; answers every switch set.
impl TypedTool<Arc<Snapshots>> for SwitchArguments {
    type Output = Switches;
    const TOOL: Declaration = declare! {
        "SnapshotEnable", "Switch chat state processing on or off", OVERWRITES, SWITCH, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<Switches> {
        let (chat, character) = (self.chat_file.as_deref(), self.character_id.as_deref());
        Ok(service(&context).set_switch(chat, character, self.setting)?)
    }
}
