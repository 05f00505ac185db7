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

const LIST: &str = "List a chat's floors (messages) a page at a time, newest 30 first: each stored \
    snapshot by message index and swipe, with id, time, size and a one-line summary of the change. \
    `fromIndex`/`limit` page (`previous`/`next` give the arguments); `messageIndex` jumps to one \
    floor.";

const DIFF: &str = "Compare two states as an RFC 6902 JSON Patch turning `from` into `to`.";

const REPROCESS: &str = "Recompute a chat's snapshots from `fromIndex` on after a message was \
    edited, regenerated or deleted: drops those messages' bindings, processes them again from the \
    floor before and deletes the old snapshots. Write `bindings` back; clear the `cleared` ones.";

const DELETE: &str = "Delete one chat snapshot by id; clear its id from the message's swipe.";

const GLOBAL_SAVE: &str = "Save a state as a global snapshot under a unique `label`: from a floor, \
    a global snapshot or `template:<characterId>` (`from`), or given as `snapshot`. Chats can \
    start from it (`baseId`).";

const GLOBAL_LIST: &str = "List the global snapshots: id, label, description and time.";

const GLOBAL_GET: &str = "Read a global snapshot by id or label.";

const GLOBAL_DELETE: &str = "Delete a global snapshot by id or label.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListArguments {
    /// The chat file's name.
    pub chat_file: String,
    /// Only this message's snapshots.
    pub message_index: Option<u64>,
    /// The first message index listed (default: the newest page).
    pub from_index: Option<u64>,
    /// Floors per page (default 30).
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
    /// A snapshot id, a global snapshot's id or label, or `template:<characterId>`.
    pub from: String,
    /// The same, for the state to reach.
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
    /// The first message to recompute (0-based).
    pub from_index: usize,
    /// The chat's messages as they are now, as `SnapshotProcess` takes them.
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    pub messages: Vec<ChatMessage>,
    /// The character whose template and functions apply.
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

    /// What the call replaces, read from the arguments without decoding the whole chat.
    fn question(service: &Arc<Snapshots>, arguments: &Value) -> Option<String> {
        let chat = arguments.get("chatFile")?.as_str()?;
        let from = arguments.get("fromIndex")?.as_u64()?;
        let messages = arguments.get("messages")?.as_array()?.len() as u64;
        let recomputed = messages.saturating_sub(from);
        let (floors, snapshots) = service
            .stored_from(chat, from)
            .inspect_err(|error| tracing::warn!(%error, "cannot count the floors to replace"))
            .ok()?;
        let recomputing = counted(recomputed, "message");
        let replaced = if floors == 0 {
            format!("No floor is stored from there on; it computes {recomputing}.")
        } else {
            format!(
                "It replaces the {} stored from there on ({}), recomputing {recomputing}.",
                counted(floors as u64, "floor"),
                counted(snapshots as u64, "snapshot")
            )
        };
        Some(format!(
            "Reprocess chat `{chat}` from message {from}? {replaced}"
        ))
    }
}

/// `1 floor`, `3 floors`.
fn counted(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
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
    /// A chat snapshot's id, a global snapshot's id or label, or `template:<characterId>`; or give
    /// `snapshot`.
    pub from: Option<String>,
    /// The state itself.
    #[schemars(extend("type" = "object"))]
    pub snapshot: Option<Value>,
    /// Overwrite the one with this label.
    #[serde(default)]
    pub replace: bool,
    /// Strip MVU metadata (`$meta`, `$arrayMeta`…) first.
    #[serde(default)]
    pub mvu_strip: bool,
}

/// `SnapshotGlobalSave`: a state saved as a labelled global snapshot; overwriting one
/// (`replace: true` on a label in use) asks first.
impl TypedTool<Arc<Snapshots>> for GlobalSaveArguments {
    type Output = GlobalOutput;
    const TOOL: Declaration = declare! {
        "SnapshotGlobalSave", "Save global snapshot", OVERWRITES, GLOBAL_SAVE, pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<GlobalOutput> {
        let service = service(&context);
        let mut origin = Origin::of(self.from.as_deref(), self.snapshot)?;
        if self.mvu_strip {
            origin = origin.without_mvu_metadata(&service)?;
        }
        Ok(service
            .save_global(&self.label, &self.description, origin, self.replace)?
            .into())
    }

    /// A new label destroys nothing (and a label in use without `replace` is refused when the
    /// call runs); overwriting one is asked.
    fn consent(service: &Arc<Snapshots>, arguments: &Value) -> Result<Consent, ToolError> {
        let arguments: Self = parse_arguments(Self::TOOL.name, arguments.clone())?;
        let replaces = service.replaces_global(&arguments.label, arguments.replace)?;
        Ok(Consent::asked_when(replaces))
    }
}

/// A global snapshot as a tool shows it: its time readable.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GlobalOutput {
    #[serde(flatten)]
    pub summary: GlobalSummary,
    /// The state.
    #[schemars(extend("type" = "object"))]
    pub snapshot: Value,
}

impl From<GlobalSnapshot> for GlobalOutput {
    fn from(mut global: GlobalSnapshot) -> Self {
        let snapshot = std::mem::take(&mut global.value);
        Self {
            summary: global.into(),
            snapshot,
        }
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
    type Output = GlobalOutput;
    const TOOL: Declaration = declare! {
        "SnapshotGlobalGet", "Get global snapshot", CACHED_READ, GLOBAL_GET, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<GlobalOutput> {
        Ok(service(&context).global(&self.id)?.into())
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
