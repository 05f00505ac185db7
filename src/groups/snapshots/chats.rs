//! The chat tools of the `snapshots` group: `SnapshotProcess` and `SnapshotApply` build
//! snapshots from function calls in messages; `SnapshotGet`, `SnapshotUpdate`,
//! `SnapshotDeleteChat` and `SnapshotCleanup` read, edit and delete what is stored.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ASKS_FIRST, CACHED_READ, DESTRUCTIVE, OVERWRITES, WRITES};
use crate::groups::{off_thread, structured};
use crate::snapshots::builtins::strip_mvu_metadata;
use crate::snapshots::chat::ChatMessage;
use crate::snapshots::{Applied, Processed, Snapshots, Start};
use crate::store::StoredSnapshot;
use crate::tools::{Caching, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, Truncation};

const PROCESS: &str = "Update a role-play chat's state from the function calls in its AI replies \
    (`@.SET(\"角色.金币\", 100);` …). Pass the chat's messages as SillyTavern stores them (`is_user`, \
    `swipe_id`, `swipes`, `swipes_info`). Only each message's active swipe counts. Starts from the \
    newest AI message bound to a stored snapshot (`swipes_info[swipe_id].st_var_system_snapshot_id`) \
    or the character's template, applies every later AI message in order and stores one new \
    snapshot per message. Write each returned binding back into its message; `vs_stat_data` is \
    the current state. Failed calls are skipped and listed in `errors`.";

const APPLY: &str = "Apply the function calls in one text to a snapshot (`baseId`), or to the \
    character's template, and store the result as a new snapshot. For agents that keep state \
    without a SillyTavern chat.";

const GET: &str = "Read a stored snapshot by id, with the chat, message and swipe it belongs to.";

const UPDATE: &str = "Replace a stored snapshot's state in place, keeping its id (an edited \
    state). `mvuStrip: true` removes MVU metadata (`$meta`, `$arrayMeta`, `$__META_EXTENSIBLE__$`) \
    first. Call SnapshotProcess again afterwards so later messages build on the edit.";

const DELETE_CHAT: &str = "Delete every snapshot of a chat (when the chat file is deleted).";

const CLEANUP: &str = "Delete the snapshots of every chat not in `activeChatFiles` (chats renamed \
    or deleted elsewhere); returns the chats removed. An empty list is refused unless \
    `all: true`, which deletes every chat's snapshots.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProcessArguments {
    /// The chat file's name (snapshots are filed under it).
    pub chat_file: String,
    /// The chat's messages, oldest first, as SillyTavern stores them.
    pub messages: Vec<ChatMessage>,
    /// The character whose template and local functions apply.
    pub character_id: Option<String>,
    /// A template to start from instead of the stored one.
    #[schemars(extend("type" = "object"))]
    pub template: Option<Value>,
    /// A global snapshot (id or label) to start from instead of any template.
    pub base_id: Option<String>,
    /// Where `messages` start in the chat (default 0). Send the messages from the newest AI
    /// message whose swipe is bound on, with its index here, and a reply costs the same in a
    /// chat of any length; indices answered count in the whole chat. Refused (send the whole
    /// chat) when none of them is bound to a stored snapshot made for that message.
    pub first_index: Option<usize>,
}

/// `SnapshotProcess`: takes whole chats and answers for a program. Its arguments run to
/// megabytes, and caching them and the result as variables would cost a durable write of that
/// size per call and evict the variables an agent keeps; and the result is never cut to the
/// output limit, since a binding left out would leave its message without a snapshot.
pub(super) struct SnapshotProcess {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotProcess {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<ProcessArguments>("SnapshotProcess", PROCESS, WRITES)
                .with_title("Process chat into snapshots")
                .with_output::<Processed>()
                .with_caching(Caching::Off)
                .with_truncation(Truncation::Never);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotProcess {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments, cancellation| {
            process(&service, arguments, &|| cancellation.is_cancelled())
        })
    }
}

/// Processes the chat until done or cancelled; what was processed is stored either way.
fn process(
    service: &Snapshots,
    arguments: ProcessArguments,
    cancelled: &dyn Fn() -> bool,
) -> Result<ToolOutput, ToolError> {
    let start = Start {
        character_id: arguments.character_id.as_deref(),
        template: arguments.template,
        base_id: arguments.base_id.as_deref(),
        first_index: arguments.first_index.unwrap_or(0),
    };
    let processed =
        service.process_from(&arguments.chat_file, &arguments.messages, &start, cancelled)?;
    if let Some(stopped) = processed.stopped {
        tracing::info!(
            chat_file = arguments.chat_file,
            processed = stopped.processed,
            remaining = stopped.remaining,
            "SnapshotProcess cancelled; the snapshots of the processed messages are stored"
        );
    }
    structured(&processed)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApplyArguments {
    pub chat_file: String,
    /// The text whose calls to apply.
    pub text: String,
    /// The snapshot to start from (a chat snapshot's id, a global snapshot's id or label, or
    /// `template:<characterId>`); without it, the character's template (or `{}`).
    pub base_id: Option<String>,
    pub character_id: Option<String>,
    /// The message's index in its chat, if it has one.
    pub message_index: Option<usize>,
}

/// `SnapshotApply`: one text's calls applied to a snapshot, stored as a new one.
pub(super) struct SnapshotApply {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotApply {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition = ToolDefinition::new::<ApplyArguments>("SnapshotApply", APPLY, WRITES)
            .with_title("Apply calls to a snapshot")
            .with_output::<Applied>();
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotApply {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(
            &self.definition,
            call,
            move |arguments: ApplyArguments, cancellation| {
                structured(&service.apply(
                    &arguments.chat_file,
                    &arguments.text,
                    arguments.base_id.as_deref(),
                    arguments.character_id.as_deref(),
                    arguments.message_index,
                    &|| cancellation.is_cancelled(),
                )?)
            },
        )
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArguments {
    /// The snapshot's id (a UUID).
    pub id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SnapshotOutput {
    #[serde(flatten)]
    pub stored: StoredSnapshot,
    /// The snapshot's size as JSON text.
    pub bytes: usize,
}

/// A stored snapshot with its size.
fn snapshot_output(service: &Snapshots, id: &str) -> Result<ToolOutput, ToolError> {
    let stored = service.snapshot(id)?;
    structured(&SnapshotOutput {
        bytes: stored.value.to_string().len(),
        stored,
    })
}

/// `SnapshotGet`: a stored snapshot by id.
pub(super) struct SnapshotGet {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotGet {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition = ToolDefinition::new::<GetArguments>("SnapshotGet", GET, CACHED_READ)
            .with_title("Get snapshot")
            .with_output::<SnapshotOutput>();
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotGet {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments: GetArguments, _| {
            snapshot_output(&service, &arguments.id)
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateArguments {
    pub id: String,
    /// The new state (a JSON object).
    #[schemars(extend("type" = "object"))]
    pub snapshot: Value,
    /// Remove MVU metadata first.
    #[serde(default)]
    pub mvu_strip: bool,
}

/// `SnapshotUpdate`: a snapshot's state replaced in place; the old state is gone, so it asks
/// first.
pub(super) struct SnapshotUpdate {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotUpdate {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<UpdateArguments>("SnapshotUpdate", UPDATE, OVERWRITES)
                .with_title("Update snapshot")
                .with_output::<SnapshotOutput>()
                .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotUpdate {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(
            &self.definition,
            call,
            move |mut arguments: UpdateArguments, _| {
                if arguments.mvu_strip {
                    strip_mvu_metadata(&mut arguments.snapshot);
                }
                service.update(&arguments.id, &arguments.snapshot)?;
                snapshot_output(&service, &arguments.id)
            },
        )
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
pub(super) struct SnapshotDeleteChat {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotDeleteChat {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition = ToolDefinition::new::<DeleteChatArguments>(
            "SnapshotDeleteChat",
            DELETE_CHAT,
            DESTRUCTIVE,
        )
        .with_title("Delete chat snapshots")
        .with_output::<DeletedOutput>()
        .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotDeleteChat {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(
            &self.definition,
            call,
            move |arguments: DeleteChatArguments, _| {
                let deleted = service.delete_chat(&arguments.chat_file)?;
                structured(&DeletedOutput {
                    chat_file: arguments.chat_file,
                    deleted,
                })
            },
        )
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CleanupArguments {
    /// Every chat file that still exists; snapshots of all others are deleted.
    pub active_chat_files: Vec<String>,
    /// With an empty `activeChatFiles`: yes, delete every chat's snapshots.
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
pub(super) struct SnapshotCleanup {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotCleanup {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<CleanupArguments>("SnapshotCleanup", CLEANUP, DESTRUCTIVE)
                .with_title("Clean up snapshots")
                .with_output::<CleanupOutput>()
                .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotCleanup {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(
            &self.definition,
            call,
            move |arguments: CleanupArguments, _| {
                let removed: Vec<DeletedOutput> = service
                    .cleanup(&arguments.active_chat_files, arguments.all)?
                    .into_iter()
                    .map(|(chat_file, deleted)| DeletedOutput { chat_file, deleted })
                    .collect();
                structured(&CleanupOutput {
                    deleted: removed.iter().map(|chat| chat.deleted).sum(),
                    removed,
                })
            },
        )
    }
}
