//! The enable switch of chat state processing, per chat and per character, stored in the
//! workspace. A chat's own setting wins over its character's; with neither, processing is on.
//! A chat that is switched off is not processed: `SnapshotProcess` says so and stores nothing.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::chat::{Base, ChatMessage};
use super::{Error, Processed, Snapshots, Start, invalid};

/// What a switch is set to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Setting {
    On,
    Off,
    /// No setting of its own: a chat follows its character, a character the default (on).
    Inherit,
}

impl Setting {
    fn stored(self) -> Option<bool> {
        match self {
            Self::On => Some(true),
            Self::Off => Some(false),
            Self::Inherit => None,
        }
    }
}

/// Which switch turned processing off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SwitchedBy {
    Chat,
    Character,
}

/// Why a chat was not processed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Disabled {
    pub by: SwitchedBy,
    pub message: String,
}

/// Every switch set in a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Switches {
    /// Chats with a setting of their own, by chat file: `true` on, `false` off.
    pub chats: BTreeMap<String, bool>,
    /// Characters with a setting of their own, by character id.
    pub characters: BTreeMap<String, bool>,
}

const CHAT: &str = "chat:";
const CHARACTER: &str = "character:";

impl Snapshots {
    /// Sets a chat's or a character's switch (exactly one of them); returns every switch.
    pub fn set_switch(
        &self,
        chat_file: Option<&str>,
        character_id: Option<&str>,
        setting: Setting,
    ) -> Result<Switches, Error> {
        let target = match (chat_file, character_id) {
            (Some(chat), None) if !chat.is_empty() => format!("{CHAT}{chat}"),
            (None, Some(character)) if !character.is_empty() => format!("{CHARACTER}{character}"),
            (Some(_), Some(_)) => {
                return invalid(
                    "chatFile",
                    "give `chatFile` or `characterId`, not both: a chat's setting wins over its character's, so set each with its own call",
                );
            }
            _ => {
                return invalid(
                    "chatFile",
                    "give the `chatFile` or the `characterId` whose processing to switch (a non-empty name)",
                );
            }
        };
        self.store
            .set_switch(&self.workspace, &target, setting.stored())?;
        self.switches()
    }

    /// Every switch set in the workspace.
    pub fn switches(&self) -> Result<Switches, Error> {
        let mut switches = Switches::default();
        for (target, enabled) in self.store.switches(&self.workspace)? {
            if let Some(chat) = target.strip_prefix(CHAT) {
                switches.chats.insert(chat.to_owned(), enabled);
            } else if let Some(character) = target.strip_prefix(CHARACTER) {
                switches.characters.insert(character.to_owned(), enabled);
            }
        }
        Ok(switches)
    }

    /// Why `chat_file` of `character_id` is not to be processed, or `None` when it is.
    pub fn disabled(
        &self,
        chat_file: &str,
        character_id: Option<&str>,
    ) -> Result<Option<Disabled>, Error> {
        let chat = self
            .store
            .switch(&self.workspace, &format!("{CHAT}{chat_file}"))?;
        let (enabled, by) = match (chat, character_id) {
            (Some(enabled), _) => (enabled, SwitchedBy::Chat),
            (None, Some(character)) if !character.is_empty() => {
                let stored = self
                    .store
                    .switch(&self.workspace, &format!("{CHARACTER}{character}"))?;
                (stored.unwrap_or(true), SwitchedBy::Character)
            }
            (None, _) => (true, SwitchedBy::Chat),
        };
        if enabled {
            return Ok(None);
        }
        let message = match by {
            SwitchedBy::Chat => format!(
                "state processing is off for chat `{chat_file}`: nothing was processed or stored; SnapshotEnable {{\"chatFile\": …, \"setting\": \"on\"}} turns it on"
            ),
            SwitchedBy::Character => format!(
                "state processing is off for character `{}`: nothing was processed or stored; SnapshotEnable {{\"characterId\": …, \"setting\": \"on\"}} turns it on (or set this chat on)",
                character_id.unwrap_or_default()
            ),
        };
        Ok(Some(Disabled { by, message }))
    }

    /// What a chat that is switched off answers: nothing processed or stored, and its state as
    /// it stands (the newest AI message whose snapshot is stored, else the starting state).
    pub(super) fn unprocessed(
        &self,
        messages: &[ChatMessage],
        start: &Start<'_>,
        disabled: Disabled,
    ) -> Result<Processed, Error> {
        let mut bound = None;
        for (index, message) in messages.iter().enumerate().rev() {
            let Some(id) = message.snapshot_id().filter(|_| message.is_ai()) else {
                continue;
            };
            if let Some(stored) = self.store.snapshot(&self.workspace, id)? {
                bound = Some((index, stored));
                break;
            }
        }
        let (state, base, latest_snapshot_id) = if let Some((message_index, stored)) = bound {
            let base = Base::Snapshot {
                message_index: start.first_index + message_index,
                snapshot_id: stored.id.clone(),
            };
            (stored.value, base, Some(stored.id))
        } else {
            let (state, base) = self.base_state(start)?;
            (state, base, None)
        };
        tracing::info!(reason = disabled.message, "SnapshotProcess skipped");
        Ok(Processed {
            bindings: Vec::new(),
            dropped: Vec::new(),
            base,
            latest_snapshot_id,
            vs_stat_data: state,
            errors: Vec::new(),
            storage: super::StorageReport::default(),
            stopped: None,
            disabled: Some(disabled),
        })
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::snapshots::javascript::Limits;
    use crate::store::SqliteStore;

    #[test]
    fn a_chats_setting_wins_over_its_characters() {
        let service = Snapshots::new(
            SqliteStore::open_in_memory().unwrap(),
            "w",
            Limits::default(),
        );
        assert_eq!(service.disabled("c", Some("elf")).unwrap(), None);
        service.set_switch(None, Some("elf"), Setting::Off).unwrap();
        let off = service.disabled("c", Some("elf")).unwrap().unwrap();
        assert_eq!(off.by, SwitchedBy::Character);
        assert_eq!(service.disabled("c", None).unwrap(), None);
        let switches = service.set_switch(Some("c"), None, Setting::On).unwrap();
        assert_eq!(service.disabled("c", Some("elf")).unwrap(), None);
        assert_eq!(
            switches,
            Switches {
                chats: BTreeMap::from([("c".to_owned(), true)]),
                characters: BTreeMap::from([("elf".to_owned(), false)]),
            }
        );
        service
            .set_switch(Some("c"), None, Setting::Inherit)
            .unwrap();
        assert!(service.disabled("c", Some("elf")).unwrap().is_some());
        let both = service
            .set_switch(Some("c"), Some("elf"), Setting::On)
            .unwrap_err();
        assert!(both.to_string().contains("not both"), "{both}");
    }
}
