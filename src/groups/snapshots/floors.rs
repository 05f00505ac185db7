//! The floor and global snapshot tools of the `snapshots` group (`docs/snapshots.md#floors`):
//! `SnapshotList`, `SnapshotDiff`, `SnapshotReprocess`, `SnapshotDelete` and the
//! `SnapshotGlobal*` tools, as thin adapters over [`crate::snapshots::Snapshots`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    CACHED_READ, Call, DESTRUCTIVE, OVERWRITES, OVERWRITES_OR_ADDS, message_steps, service,
};
use crate::snapshots::chat::ChatMessage;
use crate::snapshots::diff::Operation;
use crate::snapshots::globals::Origin;
use crate::snapshots::{FloorList, FloorQuery, Reprocessed, Snapshots, Source, Start};
use crate::store::{Floor, GlobalSnapshot, GlobalSummary};
use crate::tools::{
    Answered, Consent, Declaration, ToolError, TypedTool, WORKSPACE_VIEW, declare, parse_arguments,
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

impl ListArguments {
    fn query(&self) -> FloorQuery {
        FloorQuery {
            message_index: self.message_index,
            from_index: self.from_index,
            limit: self.limit,
        }
    }
}

/// `SnapshotList`: a chat's floors, or one floor's snapshots.
impl TypedTool<Arc<Snapshots>> for ListArguments {
    type Output = FloorList;
    const TOOL: Declaration = declare! {
        "SnapshotList", "List chat floors", CACHED_READ, LIST, pooled, view(WORKSPACE_VIEW)
    };

    async fn run(self, context: Call<'_>) -> Answered<FloorList> {
        Ok(service(&context).floors(&self.chat_file, self.query())?)
    }
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
impl TypedTool<Arc<Snapshots>> for DiffArguments {
    type Output = DiffOutput;
    const TOOL: Declaration = declare! {
        "SnapshotDiff", "Diff two snapshots", CACHED_READ, DIFF, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<DiffOutput> {
        let (from, to, patch) = service(&context).diff(&self.from, &self.to)?;
        Ok(DiffOutput { from, to, patch })
    }
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

impl ReprocessArguments {
    /// Where reprocessing starts when no earlier floor is bound.
    fn start(&self) -> Start<'_> {
        Start {
            character_id: self.character_id.as_deref(),
            template: None,
            base_id: self.base_id.as_deref(),
            first_index: 0,
        }
    }
}

/// `SnapshotReprocess`: a chat recomputed from a floor on. Like `SnapshotProcess` it takes
/// whole chats, so it is neither cached nor cut; it deletes the old snapshots, so it asks first.
/// Each call stores its snapshots under new ids, so it is not idempotent.
impl TypedTool<Arc<Snapshots>> for ReprocessArguments {
    type Output = Reprocessed;
    const TOOL: Declaration = declare! {
        "SnapshotReprocess", "Reprocess chat from a floor", OVERWRITES_OR_ADDS, REPROCESS,
        pooled, uncached, whole, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<Reprocessed> {
        let (start, from) = (self.start(), self.from_index);
        let cancelled = || context.cancellation.is_cancelled();
        let progress = |done, total| message_steps(&context, done, total);
        Ok(service(&context).reprocess(
            &self.chat_file,
            from,
            &self.messages,
            &start,
            &cancelled,
            &progress,
        )?)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteArguments {
    /// The chat snapshot's id.
    pub id: String,
}

/// `SnapshotDelete`: one chat snapshot deleted; asks first.
impl TypedTool<Arc<Snapshots>> for DeleteArguments {
    type Output = Floor;
    const TOOL: Declaration = declare! {
        "SnapshotDelete", "Delete snapshot", DESTRUCTIVE, DELETE, pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<Floor> {
        Ok(service(&context).delete_snapshot(&self.id)?)
    }
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
impl TypedTool<Arc<Snapshots>> for GlobalSaveArguments {
    type Output = GlobalSnapshot;
    const TOOL: Declaration = declare! {
        "SnapshotGlobalSave", "Save global snapshot", OVERWRITES, GLOBAL_SAVE, pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<GlobalSnapshot> {
        let origin = Origin::of(self.from.as_deref(), self.snapshot)?;
        let service = service(&context);
        Ok(service.save_global(&self.label, &self.description, origin, self.replace)?)
    }

    /// A new label destroys nothing (and a label in use without `replace` is refused when the
    /// call runs); overwriting one is asked.
    fn consent(service: &Arc<Snapshots>, arguments: &Value) -> Result<Consent, ToolError> {
        let arguments: Self = parse_arguments(Self::TOOL.name, arguments.clone())?;
        let replaces = service.replaces_global(&arguments.label, arguments.replace)?;
        Ok(Consent::asked_when(replaces))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GlobalListOutput {
    pub globals: Vec<GlobalSummary>,
}

/// `SnapshotGlobalList`: the global snapshots.
impl TypedTool<Arc<Snapshots>> for NoArguments {
    type Output = GlobalListOutput;
    const TOOL: Declaration = declare! {
        "SnapshotGlobalList", "List global snapshots", CACHED_READ, GLOBAL_LIST, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<GlobalListOutput> {
        let globals = service(&context).globals()?;
        Ok(GlobalListOutput { globals })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobalArguments {
    /// The global snapshot's id or label.
    pub id: String,
}

/// `SnapshotGlobalGet`: one global snapshot by id or label.
impl TypedTool<Arc<Snapshots>> for GlobalArguments {
    type Output = GlobalSnapshot;
    const TOOL: Declaration = declare! {
        "SnapshotGlobalGet", "Get global snapshot", CACHED_READ, GLOBAL_GET, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<GlobalSnapshot> {
        Ok(service(&context).global(&self.id)?)
    }
}

/// The arguments of `SnapshotGlobalDelete`, as `SnapshotGlobalGet`'s.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct GlobalDeleteArguments(pub GlobalArguments);

/// `SnapshotGlobalDelete`: one global snapshot deleted; asks first.
impl TypedTool<Arc<Snapshots>> for GlobalDeleteArguments {
    type Output = GlobalSummary;
    const TOOL: Declaration = declare! {
        "SnapshotGlobalDelete", "Delete global snapshot", DESTRUCTIVE, GLOBAL_DELETE,
        pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<GlobalSummary> {
        Ok(service(&context).delete_global(&self.0.id)?.into())
    }
}
