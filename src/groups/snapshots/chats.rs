//! The chat tools of the `snapshots` group: `SnapshotProcess` and `SnapshotApply` build
//! snapshots from function calls in messages; `SnapshotGet`, `SnapshotUpdate`,
//! `SnapshotDeleteChat` and `SnapshotCleanup` read, edit and delete what is stored.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CACHED_READ, Call, DESTRUCTIVE, OVERWRITES, WRITES, message_steps, service};
use crate::snapshots::builtins::without_mvu_metadata;
use crate::snapshots::chat::ChatMessage;
use crate::snapshots::{Applied, Processed, Snapshots, Start};
use crate::store::StoredSnapshot;
use crate::tools::{Answered, Declaration, TypedTool, declare};

const PROCESS: &str = "Update a role-play chat's state from the function calls (`@.SET(\"hp\", \
    9);` …) in its AI replies. Pass the messages as SillyTavern stores them; each message's active \
    swipe counts. Starts from the newest AI message bound to a snapshot \
    (`swipes_info[swipe_id].st_var_system_snapshot_id`), else the template, and stores a snapshot \
    per later AI message. Write each returned binding back; `vs_stat_data` is the current state; \
    failed calls are listed in `errors`.";

const APPLY: &str = "Apply the function calls in one text to a snapshot (`baseId`) or the \
    character's template, stored as a new snapshot: state without a SillyTavern chat.";

const GET: &str = "Read a stored snapshot by id, with its chat, message and swipe.";

const UPDATE: &str = "Replace a stored snapshot's state, keeping its id. Run SnapshotProcess again \
    after, so later messages build on the edit.";

const DELETE_CHAT: &str = "Delete every snapshot of a chat (its file was deleted).";

const CLEANUP: &str = "Delete the snapshots of every chat not in `activeChatFiles` (renamed or \
    deleted chats). An empty list needs `all: true` (deletes every chat's).";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProcessArguments {
    /// The chat file's name.
    pub chat_file: String,
    /// The chat's messages, oldest first.
    pub messages: Vec<ChatMessage>,
    /// The character whose template and functions apply.
    pub character_id: Option<String>,
    /// A template to use instead of the stored one.
    #[schemars(extend("type" = "object"))]
    pub template: Option<Value>,
    /// A global snapshot (id or label) to start from instead.
    pub base_id: Option<String>,
    /// The chat index of `messages[0]` (default 0): send from the newest bound AI message on;
    /// refused when none is bound.
    pub first_index: Option<usize>,
}

impl ProcessArguments {
    /// Where processing starts, with the template taken from the arguments.
    fn start(&self, template: Option<Value>) -> Start<'_> {
        Start {
            character_id: self.character_id.as_deref(),
            template,
            base_id: self.base_id.as_deref(),
            first_index: self.first_index.unwrap_or(0),
        }
    }
}

/// `SnapshotProcess`: takes whole chats and answers for a program. Its arguments run to
/// megabytes, and caching them and the result as variables would cost a durable write of that
/// size per call and evict the variables an agent keeps; and the result is never cut to the
/// output limit, since a binding left out would leave its message without a snapshot. It
/// processes the chat until done or cancelled; what was processed is stored either way.
impl TypedTool<Arc<Snapshots>> for ProcessArguments {
    type Output = Processed;
    const TOOL: Declaration = declare! {
        "SnapshotProcess", "Process chat into snapshots", WRITES, PROCESS, pooled, uncached, whole
    };

    async fn run(mut self, context: Call<'_>) -> Answered<Processed> {
        let template = self.template.take();
        let start = self.start(template);
        let cancelled = || context.cancellation.is_cancelled();
        let progress = |done, total| message_steps(&context, done, total);
        let processed = service(&context).process_from(
            &self.chat_file,
            &self.messages,
            &start,
            &cancelled,
            &progress,
        )?;
        processed.log_stop(&self.chat_file);
        Ok(processed)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApplyArguments {
    pub chat_file: String,
    /// The text whose calls to apply.
    pub text: String,
    /// A chat snapshot's id, a global snapshot's id or label, or `template:<characterId>`.
    pub base_id: Option<String>,
    pub character_id: Option<String>,
    /// The message's index in its chat.
    pub message_index: Option<usize>,
}

/// `SnapshotApply`: one text's calls applied to a snapshot, stored as a new one.
impl TypedTool<Arc<Snapshots>> for ApplyArguments {
    type Output = Applied;
    const TOOL: Declaration = declare! {
        "SnapshotApply", "Apply calls to a snapshot", WRITES, APPLY, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<Applied> {
        let (base, character) = (self.base_id.as_deref(), self.character_id.as_deref());
        let (chat, text, index) = (&self.chat_file, &self.text, self.message_index);
        let cancelled = || context.cancellation.is_cancelled();
        Ok(service(&context).apply(chat, text, base, character, index, &cancelled)?)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct GetArguments {
    /// The snapshot's id.
    pub id: String,
    /// Strip MVU metadata (`$meta`, `$arrayMeta`…) from the state shown.
    #[serde(default)]
    pub mvu_strip: bool,
}

/// A stored snapshot as a tool shows it: its creation time readable, with its size.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotOutput {
    pub id: String,
    pub chat_file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swipe_id: Option<u64>,
    /// When the snapshot was made: ISO 8601, UTC, to the second.
    #[serde(serialize_with = "crate::vars::readable_time")]
    #[schemars(with = "String")]
    pub created_at: i64,
    /// What its message changed against the state it was built on, in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The state.
    #[schemars(extend("type" = "object"))]
    pub snapshot: Value,
    /// The snapshot's size as JSON text.
    pub bytes: usize,
}

/// A stored snapshot with its size.
impl From<StoredSnapshot> for SnapshotOutput {
    fn from(stored: StoredSnapshot) -> Self {
        Self {
            bytes: stored.value.to_string().len(),
            id: stored.id,
            chat_file: stored.chat_file,
            message_id: stored.message_id,
            swipe_id: stored.swipe_id,
            created_at: stored.created_at,
            summary: stored.summary,
            snapshot: stored.value,
        }
    }
}

/// `SnapshotGet`: a stored snapshot by id.
impl TypedTool<Arc<Snapshots>> for GetArguments {
    type Output = SnapshotOutput;
    const TOOL: Declaration = declare! { "SnapshotGet", "Get snapshot", CACHED_READ, GET, pooled };

    async fn run(self, context: Call<'_>) -> Answered<SnapshotOutput> {
        let mut stored = service(&context).snapshot(&self.id)?;
        stored.value = without_mvu_metadata(stored.value, self.mvu_strip);
        Ok(stored.into())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateArguments {
    pub id: String,
    /// The new state.
    #[schemars(extend("type" = "object"))]
    pub snapshot: Value,
    /// Strip MVU metadata (`$meta`, `$arrayMeta`…) first.
    #[serde(default)]
    pub mvu_strip: bool,
}

/// `SnapshotUpdate`: a snapshot's state replaced in place; the old state is gone, so it asks
/// first.
impl TypedTool<Arc<Snapshots>> for UpdateArguments {
    type Output = SnapshotOutput;
    const TOOL: Declaration = declare! {
        "SnapshotUpdate", "Update snapshot", OVERWRITES, UPDATE, pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<SnapshotOutput> {
        let snapshot = without_mvu_metadata(self.snapshot, self.mvu_strip);
        let service = service(&context);
        service.update(&self.id, &snapshot)?;
        Ok(service.snapshot(&self.id)?.into())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteChatArguments {
    pub chat_file: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletedOutput {
    pub chat_file: String,
    /// Snapshots deleted.
    pub deleted: u64,
}

/// `SnapshotDeleteChat`: every snapshot of a chat deleted.
impl TypedTool<Arc<Snapshots>> for DeleteChatArguments {
    type Output = DeletedOutput;
    const TOOL: Declaration = declare! {
        "SnapshotDeleteChat", "Delete chat snapshots", DESTRUCTIVE, DELETE_CHAT, pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<DeletedOutput> {
        let deleted = service(&context).delete_chat(&self.chat_file)?;
        let chat_file = self.chat_file;
        Ok(DeletedOutput { chat_file, deleted })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CleanupArguments {
    /// Every chat file that still exists.
    pub active_chat_files: Vec<String>,
    /// Confirms an empty `activeChatFiles`.
    #[serde(default)]
    pub all: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CleanupOutput {
    /// The chats whose snapshots were deleted.
    pub removed: Vec<DeletedOutput>,
    /// Snapshots deleted in all.
    pub deleted: u64,
}

/// `SnapshotCleanup`: the snapshots of every chat no longer active deleted.
impl TypedTool<Arc<Snapshots>> for CleanupArguments {
    type Output = CleanupOutput;
    const TOOL: Declaration = declare! {
        "SnapshotCleanup", "Clean up snapshots", DESTRUCTIVE, CLEANUP, pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<CleanupOutput> {
        let service = service(&context);
        Ok(service.cleanup(&self.active_chat_files, self.all)?.into())
    }
}

impl From<Vec<(String, u64)>> for CleanupOutput {
    fn from(removed: Vec<(String, u64)>) -> Self {
        let removed: Vec<DeletedOutput> = (removed.into_iter())
            .map(|(chat_file, deleted)| DeletedOutput { chat_file, deleted })
            .collect();
        Self {
            deleted: removed.iter().map(|chat| chat.deleted).sum(),
            removed,
        }
    }
}
