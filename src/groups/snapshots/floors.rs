//! The floor and global snapshot tools of the `snapshots` group (`docs/snapshots.md#floors`):
//! `SnapshotList`, `SnapshotDiff`, `SnapshotReprocess`, `SnapshotDelete` and the
//! `SnapshotGlobal*` tools, as thin adapters over [`crate::snapshots::Snapshots`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{CACHED_READ, DESTRUCTIVE, OVERWRITES, Run, SnapshotTool, failed};
use crate::groups::structured;
use crate::snapshots::chat::ChatMessage;
use crate::snapshots::diff::Operation;
use crate::snapshots::globals::Origin;
use crate::snapshots::{FloorList, Reprocessed, Snapshots, Source, Start};
use crate::store::{Floor, GlobalSnapshot, GlobalSummary};
use crate::tools::{Tool, ToolDefinition, ToolError, ToolOutput, parse_arguments};

/// The tools; `tool` makes one that caches its result, `asking` one that deletes and so asks.
pub(super) fn tools(service: &Arc<Snapshots>) -> Vec<Arc<dyn Tool>> {
    let tool = |definition: ToolDefinition, run: Run, asks_first: bool| -> Arc<dyn Tool> {
        Arc::new(SnapshotTool {
            definition,
            service: Arc::clone(service),
            run,
            whole_chats: false,
            asks_first,
        })
    };
    vec![
        tool(
            ToolDefinition::new::<ListArguments>("SnapshotList", LIST, CACHED_READ)
                .with_title("List chat floors")
                .with_output::<FloorList>(),
            list,
            false,
        ),
        tool(
            ToolDefinition::new::<DiffArguments>("SnapshotDiff", DIFF, CACHED_READ)
                .with_title("Diff two snapshots")
                .with_output::<DiffOutput>(),
            diff,
            false,
        ),
        Arc::new(SnapshotTool {
            definition: ToolDefinition::new::<ReprocessArguments>(
                "SnapshotReprocess",
                REPROCESS,
                DESTRUCTIVE,
            )
            .with_title("Reprocess chat from a floor")
            .with_output::<Reprocessed>(),
            service: Arc::clone(service),
            run: reprocess,
            whole_chats: true,
            asks_first: true,
        }),
        tool(
            ToolDefinition::new::<DeleteArguments>("SnapshotDelete", DELETE, DESTRUCTIVE)
                .with_title("Delete snapshot")
                .with_output::<Floor>(),
            delete,
            true,
        ),
        tool(
            ToolDefinition::new::<GlobalSaveArguments>(
                "SnapshotGlobalSave",
                GLOBAL_SAVE,
                OVERWRITES,
            )
            .with_title("Save global snapshot")
            .with_output::<GlobalSnapshot>(),
            global_save,
            false,
        ),
        tool(
            ToolDefinition::new::<NoArguments>("SnapshotGlobalList", GLOBAL_LIST, CACHED_READ)
                .with_title("List global snapshots")
                .with_output::<GlobalListOutput>(),
            global_list,
            false,
        ),
        tool(
            ToolDefinition::new::<GlobalArguments>("SnapshotGlobalGet", GLOBAL_GET, CACHED_READ)
                .with_title("Get global snapshot")
                .with_output::<GlobalSnapshot>(),
            global_get,
            false,
        ),
        tool(
            ToolDefinition::new::<GlobalArguments>(
                "SnapshotGlobalDelete",
                GLOBAL_DELETE,
                DESTRUCTIVE,
            )
            .with_title("Delete global snapshot")
            .with_output::<GlobalSummary>(),
            global_delete,
            true,
        ),
    ]
}

const LIST: &str = "List a chat's floors: every stored snapshot by message index and swipe, \
    with its id, creation time, stored size and a one-line summary of what its message changed. \
    With `messageIndex`, jump to that message's snapshots (an error lists the floors that have \
    one). Read a floor's state with SnapshotGet.";

const DIFF: &str = "Compare two states as an RFC 6902 JSON Patch (add/remove/replace with JSON \
    Pointer paths) that turns `from` into `to`. Each is a chat snapshot's id, a global \
    snapshot's id or label, or `template:<characterId>`.";

const REPROCESS: &str = "Recompute a chat's snapshots from a floor on, after a message was \
    edited, regenerated or deleted: drops the bindings of every swipe of the messages at \
    `fromIndex` and later, processes them again from the floor before (or the start), and \
    deletes the old snapshots. Pass the chat's messages as they are now. Write `bindings` back \
    and clear the `cleared` ones that got no new id.";

const DELETE: &str = "Delete one chat snapshot by id (the state nothing else shares goes too). \
    Clear its id from the message's swipe.";

const GLOBAL_SAVE: &str = "Save a state as a global snapshot under a unique `label`, with a \
    `description`: a chat floor, a global snapshot or `template:<characterId>` (`from`), or a \
    state given as `snapshot`. A chat can start from it (`baseId` of SnapshotProcess). A label \
    in use is refused unless `replace: true`.";

const GLOBAL_LIST: &str = "List the global snapshots: id, label, description and time, by label.";

const GLOBAL_GET: &str = "Read a global snapshot by id or label.";

const GLOBAL_DELETE: &str = "Delete a global snapshot by id or label.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListArguments {
    /// The chat file's name.
    pub chat_file: String,
    /// Only this message's snapshots (jump to a floor).
    pub message_index: Option<u64>,
}

fn list(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: ListArguments = parse_arguments("SnapshotList", arguments)?;
    let floors = service
        .floors(&arguments.chat_file, arguments.message_index)
        .map_err(failed)?;
    structured(&floors)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffArguments {
    /// The state to start from: a snapshot id, a global snapshot's id or label, or
    /// `template:<characterId>`.
    pub from: String,
    /// The state to reach, named the same ways.
    pub to: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffOutput {
    pub from: Source,
    pub to: Source,
    /// The RFC 6902 operations that turn `from` into `to`, in order.
    pub patch: Vec<Operation>,
}

fn diff(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: DiffArguments = parse_arguments("SnapshotDiff", arguments)?;
    let (from, to, patch) = service
        .diff(&arguments.from, &arguments.to)
        .map_err(failed)?;
    structured(&DiffOutput { from, to, patch })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReprocessArguments {
    /// The chat file's name.
    pub chat_file: String,
    /// The first message to recompute (0-based): its bindings and every later one's are dropped.
    pub from_index: usize,
    /// The chat's messages as they are now, oldest first, as SillyTavern stores them.
    pub messages: Vec<ChatMessage>,
    /// The character whose template and local functions apply.
    pub character_id: Option<String>,
    /// A global snapshot (id or label) to start from when no earlier floor is bound.
    pub base_id: Option<String>,
}

fn reprocess(
    service: &Snapshots,
    arguments: Value,
    cancellation: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: ReprocessArguments = parse_arguments("SnapshotReprocess", arguments)?;
    let start = Start {
        character_id: arguments.character_id.as_deref(),
        template: None,
        base_id: arguments.base_id.as_deref(),
    };
    let reprocessed = service
        .reprocess(
            &arguments.chat_file,
            arguments.from_index,
            &arguments.messages,
            &start,
            &|| cancellation.is_cancelled(),
        )
        .map_err(failed)?;
    structured(&reprocessed)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteArguments {
    /// The chat snapshot's id.
    pub id: String,
}

fn delete(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: DeleteArguments = parse_arguments("SnapshotDelete", arguments)?;
    structured(&service.delete_snapshot(&arguments.id).map_err(failed)?)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GlobalSaveArguments {
    /// A name unique among the global snapshots.
    pub label: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// Where the state comes from: a chat snapshot's id, a global snapshot's id or label, or
    /// `template:<characterId>`. Give this or `snapshot`.
    pub from: Option<String>,
    /// The state itself (a JSON object). Give this or `from`.
    #[schemars(extend("type" = "object"))]
    pub snapshot: Option<Value>,
    /// Overwrite the global snapshot that has this label (it keeps its id).
    #[serde(default)]
    pub replace: bool,
}

fn global_save(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: GlobalSaveArguments = parse_arguments("SnapshotGlobalSave", arguments)?;
    let origin = match (arguments.from.as_deref(), arguments.snapshot) {
        (Some(reference), None) => Origin::Reference(reference),
        (None, Some(state)) => Origin::State(state),
        _ => {
            return Err(ToolError::invalid(
                "give exactly one of `from` (a snapshot id, a global label or template:<characterId>) and `snapshot` (a state)",
            ));
        }
    };
    let saved = service
        .save_global(
            &arguments.label,
            &arguments.description,
            origin,
            arguments.replace,
        )
        .map_err(failed)?;
    structured(&saved)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GlobalListOutput {
    pub globals: Vec<GlobalSummary>,
}

fn global_list(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let _: NoArguments = parse_arguments("SnapshotGlobalList", arguments)?;
    let globals = service.globals().map_err(failed)?;
    structured(&GlobalListOutput { globals })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobalArguments {
    /// The global snapshot's id or label.
    pub id: String,
}

fn global_get(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: GlobalArguments = parse_arguments("SnapshotGlobalGet", arguments)?;
    structured(&service.global(&arguments.id).map_err(failed)?)
}

fn global_delete(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: GlobalArguments = parse_arguments("SnapshotGlobalDelete", arguments)?;
    let deleted = service.delete_global(&arguments.id).map_err(failed)?;
    structured(&GlobalSummary {
        id: deleted.id,
        label: deleted.label,
        description: deleted.description,
        created_at: deleted.created_at,
    })
}
