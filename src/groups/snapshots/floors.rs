//! The floor and global snapshot tools of the `snapshots` group (`docs/snapshots.md#floors`):
//! `SnapshotList`, `SnapshotDiff`, `SnapshotReprocess`, `SnapshotDelete` and the
//! `SnapshotGlobal*` tools, as thin adapters over [`crate::snapshots::Snapshots`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use futures::future::BoxFuture;

use super::{ASKS_FIRST, CACHED_READ, DESTRUCTIVE, OVERWRITES, OVERWRITES_OR_ADDS, asked_when};
use crate::groups::{off_thread, structured};
use crate::snapshots::chat::ChatMessage;
use crate::snapshots::diff::Operation;
use crate::snapshots::globals::Origin;
use crate::snapshots::{FloorList, FloorQuery, Reprocessed, Snapshots, Source, Start};
use crate::store::{Floor, GlobalSnapshot, GlobalSummary};
use crate::tools::{
    Caching, Consent, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, Truncation,
    WORKSPACE_VIEW,
};

const LIST: &str = "List a chat's floors, a page at a time: every stored snapshot of each \
    floor (message) by message index and swipe, with its id, creation time, stored size and a \
    one-line summary of what its message changed. The newest 30 floors by default; `fromIndex` \
    and `limit` page through the chat, and `previous`/`next` give the arguments of the pages \
    around (`total`, `earlier` and `later` count floors). With `messageIndex`, jump to that \
    message's snapshots (an error lists the floors that have one). Read a floor's state with \
    SnapshotGet.";

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
    /// List the floors from this message index on (0 also lists the snapshots made without
    /// one); the newest floors when not given.
    pub from_index: Option<u64>,
    /// Floors per page (30 when not given).
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// `SnapshotList`: a chat's floors, or one floor's snapshots.
pub(super) struct SnapshotList {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotList {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition = ToolDefinition::new::<ListArguments>("SnapshotList", LIST, CACHED_READ)
            .with_title("List chat floors")
            .with_output::<FloorList>()
            .with_view(WORKSPACE_VIEW);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotList {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments, cancellation| {
            list(&service, &arguments, cancellation)
        })
    }
}

fn list(
    service: &Snapshots,
    arguments: &ListArguments,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let query = FloorQuery {
        message_index: arguments.message_index,
        from_index: arguments.from_index,
        limit: arguments.limit,
    };
    let floors = service.floors(&arguments.chat_file, query)?;
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

/// `SnapshotDiff`: an RFC 6902 JSON Patch between two states.
pub(super) struct SnapshotDiff {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotDiff {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition = ToolDefinition::new::<DiffArguments>("SnapshotDiff", DIFF, CACHED_READ)
            .with_title("Diff two snapshots")
            .with_output::<DiffOutput>();
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotDiff {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments, cancellation| {
            diff(&service, &arguments, cancellation)
        })
    }
}

fn diff(
    service: &Snapshots,
    arguments: &DiffArguments,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let (from, to, patch) = service.diff(&arguments.from, &arguments.to)?;
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

/// `SnapshotReprocess`: a chat recomputed from a floor on. Like `SnapshotProcess` it takes
/// whole chats, so it is neither cached nor cut; it deletes the old snapshots, so it asks first.
/// Each call stores its snapshots under new ids, so it is not idempotent.
pub(super) struct SnapshotReprocess {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotReprocess {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition = ToolDefinition::new::<ReprocessArguments>(
            "SnapshotReprocess",
            REPROCESS,
            OVERWRITES_OR_ADDS,
        )
        .with_title("Reprocess chat from a floor")
        .with_output::<Reprocessed>()
        .with_caching(Caching::Off)
        .with_truncation(Truncation::Never)
        .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotReprocess {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments, cancellation| {
            reprocess(&service, &arguments, cancellation)
        })
    }
}

fn reprocess(
    service: &Snapshots,
    arguments: &ReprocessArguments,
    cancellation: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let start = Start {
        character_id: arguments.character_id.as_deref(),
        template: None,
        base_id: arguments.base_id.as_deref(),
        first_index: 0,
    };
    let reprocessed = service.reprocess(
        &arguments.chat_file,
        arguments.from_index,
        &arguments.messages,
        &start,
        &|| cancellation.is_cancelled(),
    )?;
    structured(&reprocessed)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteArguments {
    /// The chat snapshot's id.
    pub id: String,
}

/// `SnapshotDelete`: one chat snapshot deleted; asks first.
pub(super) struct SnapshotDelete {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotDelete {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<DeleteArguments>("SnapshotDelete", DELETE, DESTRUCTIVE)
                .with_title("Delete snapshot")
                .with_output::<Floor>()
                .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotDelete {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments, cancellation| {
            delete(&service, &arguments, cancellation)
        })
    }
}

fn delete(
    service: &Snapshots,
    arguments: &DeleteArguments,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    structured(&service.delete_snapshot(&arguments.id)?)
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

/// `SnapshotGlobalSave`: a state saved as a labelled global snapshot; overwriting one
/// (`replace: true` on a label in use) asks first.
pub(super) struct SnapshotGlobalSave {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotGlobalSave {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition = ToolDefinition::new::<GlobalSaveArguments>(
            "SnapshotGlobalSave",
            GLOBAL_SAVE,
            OVERWRITES,
        )
        .with_title("Save global snapshot")
        .with_output::<GlobalSnapshot>()
        .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotGlobalSave {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// A new label destroys nothing (and a label in use without `replace` is refused when the
    /// call runs); overwriting one is asked.
    fn consent(&self, arguments: &Value) -> Result<Consent, ToolError> {
        let arguments: GlobalSaveArguments = self.definition.parse(arguments.clone())?;
        let replaces = arguments.replace
            && self
                .service
                .globals()?
                .iter()
                .any(|global| global.label == arguments.label);
        Ok(asked_when(replaces))
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments, cancellation| {
            global_save(&service, arguments, cancellation)
        })
    }
}

fn global_save(
    service: &Snapshots,
    arguments: GlobalSaveArguments,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let origin = match (arguments.from.as_deref(), arguments.snapshot) {
        (Some(reference), None) => Origin::Reference(reference),
        (None, Some(state)) => Origin::State(state),
        _ => {
            return Err(ToolError::invalid(
                "give exactly one of `from` (a snapshot id, a global label or template:<characterId>) and `snapshot` (a state)",
            ));
        }
    };
    let saved = service.save_global(
        &arguments.label,
        &arguments.description,
        origin,
        arguments.replace,
    )?;
    structured(&saved)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GlobalListOutput {
    pub globals: Vec<GlobalSummary>,
}

/// `SnapshotGlobalList`: the global snapshots.
pub(super) struct SnapshotGlobalList {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotGlobalList {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<NoArguments>("SnapshotGlobalList", GLOBAL_LIST, CACHED_READ)
                .with_title("List global snapshots")
                .with_output::<GlobalListOutput>();
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotGlobalList {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments, cancellation| {
            global_list(&service, arguments, cancellation)
        })
    }
}

fn global_list(
    service: &Snapshots,
    _arguments: NoArguments,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let globals = service.globals()?;
    structured(&GlobalListOutput { globals })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobalArguments {
    /// The global snapshot's id or label.
    pub id: String,
}

/// `SnapshotGlobalGet`: one global snapshot by id or label.
pub(super) struct SnapshotGlobalGet {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotGlobalGet {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<GlobalArguments>("SnapshotGlobalGet", GLOBAL_GET, CACHED_READ)
                .with_title("Get global snapshot")
                .with_output::<GlobalSnapshot>();
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotGlobalGet {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments, cancellation| {
            global_get(&service, &arguments, cancellation)
        })
    }
}

fn global_get(
    service: &Snapshots,
    arguments: &GlobalArguments,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    structured(&service.global(&arguments.id)?)
}

/// `SnapshotGlobalDelete`: one global snapshot deleted; asks first.
pub(super) struct SnapshotGlobalDelete {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl SnapshotGlobalDelete {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition = ToolDefinition::new::<GlobalArguments>(
            "SnapshotGlobalDelete",
            GLOBAL_DELETE,
            DESTRUCTIVE,
        )
        .with_title("Delete global snapshot")
        .with_output::<GlobalSummary>()
        .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for SnapshotGlobalDelete {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = self.service.of(call.workspace.name());
        off_thread(&self.definition, call, move |arguments, cancellation| {
            global_delete(&service, &arguments, cancellation)
        })
    }
}

fn global_delete(
    service: &Snapshots,
    arguments: &GlobalArguments,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let deleted = service.delete_global(&arguments.id)?;
    structured(&GlobalSummary {
        id: deleted.id,
        label: deleted.label,
        description: deleted.description,
        created_at: deleted.created_at,
    })
}
