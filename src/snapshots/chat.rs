//! The chat flow over SillyTavern-shaped messages (`docs/snapshots.md`): find the newest AI
//! message's snapshot; when it has none, walk up to the nearest AI message whose active swipe
//! is bound to a stored snapshot (a dangling id is dropped and treated as absent), or to the
//! character template; then apply every later AI message in order, each getting a new snapshot
//! under a new UUID v4.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The field of `swipes_info[swipe_id]` that binds a swipe to its snapshot.
pub const SNAPSHOT_ID_FIELD: &str = "st_var_system_snapshot_id";

/// A chat message as SillyTavern stores it; other fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct ChatMessage {
    /// The user's message.
    #[serde(default)]
    pub is_user: bool,
    /// System/narrator messages carry no calls.
    #[serde(default)]
    pub is_system: bool,
    /// `assistant`, `user` or `system` (wins over `is_user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The text, without swipes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mes: Option<String>,
    /// The active swipe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swipe_id: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swipes: Option<Vec<String>>,
    /// Per-swipe metadata, holding the binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<serde_json::Map<String, Value>>>")]
    pub swipes_info: Option<Vec<Value>>,
    /// Milliseconds since 1970 (`Date.now()` in functions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("anyOf" = [{"type": "number"}, {"type": "string"}]))]
    pub send_date: Option<Value>,
}

impl ChatMessage {
    pub fn is_ai(&self) -> bool {
        match self.role.as_deref() {
            Some(role) => role == "assistant",
            None => !self.is_user && !self.is_system,
        }
    }

    pub fn active_swipe(&self) -> usize {
        self.swipe_id.unwrap_or(0)
    }

    /// The active swipe's text.
    pub fn text(&self) -> &str {
        self.swipes
            .as_ref()
            .and_then(|swipes| swipes.get(self.active_swipe()))
            .or(self.mes.as_ref())
            .map_or("", String::as_str)
    }

    /// The snapshot id bound to the active swipe.
    pub fn snapshot_id(&self) -> Option<&str> {
        self.swipes_info
            .as_ref()?
            .get(self.active_swipe())?
            .get(SNAPSHOT_ID_FIELD)?
            .as_str()
            .filter(|id| !id.is_empty())
    }

    pub fn send_millis(&self) -> Option<f64> {
        self.send_date.as_ref()?.as_f64()
    }

    /// Every snapshot id bound to any of its swipes.
    pub fn bound_ids(&self) -> impl Iterator<Item = &str> {
        self.swipes_info
            .iter()
            .flatten()
            .filter_map(|info| info.get(SNAPSHOT_ID_FIELD)?.as_str())
            .filter(|id| !id.is_empty())
    }

    /// Removes every swipe's binding; returns them as `(swipe, snapshot id)`.
    pub fn unbind_all(&mut self) -> Vec<(usize, String)> {
        let mut removed = Vec::new();
        for (swipe, info) in self.swipes_info.iter_mut().flatten().enumerate() {
            if let Some(Value::String(id)) = info
                .as_object_mut()
                .and_then(|info| info.shift_remove(SNAPSHOT_ID_FIELD))
                && !id.is_empty()
            {
                removed.push((swipe, id));
            }
        }
        removed
    }

    /// Binds the active swipe to a snapshot, as a client writes a [`Binding`] back.
    pub fn bind(&mut self, snapshot_id: &str) {
        let swipe = self.active_swipe();
        let infos = self.swipes_info.get_or_insert_with(Vec::new);
        while infos.len() <= swipe {
            infos.push(Value::Object(serde_json::Map::new()));
        }
        if !infos[swipe].is_object() {
            infos[swipe] = Value::Object(serde_json::Map::new());
        }
        if let Value::Object(info) = &mut infos[swipe] {
            info.insert(
                SNAPSHOT_ID_FIELD.to_owned(),
                Value::String(snapshot_id.to_owned()),
            );
        }
    }
}

/// A swipe bound to a snapshot: write `snapshotId` into
/// `messages[messageIndex].swipes_info[swipeId].st_var_system_snapshot_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    pub message_index: usize,
    pub swipe_id: usize,
    pub snapshot_id: String,
}

/// What the processing started from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "kind"
)]
pub enum Base {
    /// An earlier AI message's stored snapshot.
    Snapshot {
        message_index: usize,
        snapshot_id: String,
    },
    /// A global snapshot (no AI message had a stored snapshot).
    Global { snapshot_id: String, label: String },
    /// The character's template (no AI message had a stored snapshot).
    Template,
    /// An empty object (no template was stored for the character).
    Empty,
}

/// Where the newest AI message's snapshot comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    /// The AI message whose stored snapshot to start from, if any.
    pub start: Option<(usize, String)>,
    /// AI messages to apply, in order.
    pub pending: Vec<usize>,
    /// Ids that were bound but are not stored: treated as absent.
    pub dropped: Vec<Binding>,
}

/// Walks up from the newest AI message. `exists` says whether an id is
/// stored.
pub fn anchor(messages: &[ChatMessage], mut exists: impl FnMut(&str) -> bool) -> Anchor {
    let mut pending = Vec::new();
    let mut dropped = Vec::new();
    let mut start = None;
    for (index, message) in messages.iter().enumerate().rev() {
        if !message.is_ai() {
            continue;
        }
        if let Some(id) = message.snapshot_id() {
            if exists(id) {
                start = Some((index, id.to_owned()));
                break;
            }
            dropped.push(Binding {
                message_index: index,
                swipe_id: message.active_swipe(),
                snapshot_id: id.to_owned(),
            });
        }
        pending.push(index);
    }
    pending.reverse();
    dropped.reverse();
    Anchor {
        start,
        pending,
        dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn messages(value: Value) -> Vec<ChatMessage> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_first_worked_example_starts_from_the_bound_message() {
        // 0-2 (AI, no id) → 1-0 (user) → 2-1 (AI, snapshot A) → 3-0 (user) → 4-1 (AI, no id)
        let chat = messages(json!([
            {"is_user": false, "swipe_id": 2, "swipes": ["a", "b", "c"]},
            {"is_user": true, "mes": "hi"},
            {"is_user": false, "swipe_id": 1, "swipes": ["x", "y"], "swipes_info": [{}, {"st_var_system_snapshot_id": "A"}]},
            {"is_user": true, "mes": "go"},
            {"is_user": false, "swipe_id": 1, "swipes": ["p", "q"]}
        ]));
        let found = anchor(&chat, |id| id == "A");
        assert_eq!(
            found,
            Anchor {
                start: Some((2, "A".to_owned())),
                pending: vec![4],
                dropped: vec![]
            }
        );
        assert_eq!(chat[4].text(), "q");
    }

    #[test]
    fn swipes_decide_the_branch_and_dangling_ids_are_dropped() {
        let chat = messages(json!([
            {"is_user": false, "swipe_id": 0, "swipes": ["a"], "swipes_info": [{"st_var_system_snapshot_id": "gone"}]},
            {"is_user": true, "mes": "hi"},
            {"is_user": false, "swipe_id": 0, "swipes": ["x", "y"], "swipes_info": [{}, {"st_var_system_snapshot_id": "B"}]}
        ]));
        let found = anchor(&chat, |id| id == "B");
        assert_eq!(
            found.start, None,
            "swipe 0 of message 2 has no id; B belongs to swipe 1"
        );
        assert_eq!(found.pending, vec![0, 2]);
        assert_eq!(
            found.dropped,
            vec![Binding {
                message_index: 0,
                swipe_id: 0,
                snapshot_id: "gone".to_owned()
            }]
        );
    }
}
