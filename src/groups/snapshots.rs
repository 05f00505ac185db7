//! The `snapshots` group (`docs/snapshots.md`): chat state snapshots, the function library and character
//! templates, as thin adapters over [`crate::snapshots::Snapshots`]. The work (SQLite, QuickJS)
//! is synchronous and may take a while on a long chat, so it runs on tokio's blocking pool; the
//! call's cancellation (the client cancelled, or left) reaches it there.

pub mod functions;

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{off_thread, structured};
use crate::snapshots::builtins::strip_mvu_metadata;
use crate::snapshots::chat::ChatMessage;
use crate::snapshots::functions::{Export, Scope, VarFunction};
use crate::snapshots::{self, Applied, Processed, Snapshots};
use crate::store::StoredSnapshot;
use crate::tools::{
    Annotations, RulePrompt, Tool, ToolCall, ToolDefinition, ToolError, ToolGroup, ToolOutput,
    parse_arguments,
};

pub const GROUP: &str = "snapshots";

type Run = fn(&Snapshots, Value, &CancellationToken) -> Result<ToolOutput, ToolError>;

struct SnapshotTool {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
    run: Run,
    /// Takes whole chats and answers for a program (`SnapshotProcess`): its arguments run to
    /// megabytes, and caching them and the result as variables would cost a durable write of
    /// that size per call and evict the variables an agent keeps; and the result is never cut
    /// to the output limit, since a binding left out would leave its message without a
    /// snapshot.
    whole_chats: bool,
}

impl Tool for SnapshotTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = Arc::clone(&self.service);
        let run = self.run;
        let arguments = call.arguments;
        let cancellation = call.cancellation.clone();
        off_thread(move || run(&service, arguments, &cancellation))
    }

    fn caches_result(&self) -> bool {
        !self.whole_chats
    }

    fn skip_truncation(&self) -> bool {
        self.whole_chats
    }
}

fn failed(error: snapshots::Error) -> ToolError {
    match error {
        snapshots::Error::Invalid(message) => ToolError::Invalid(message),
        snapshots::Error::Store(error) => ToolError::Internal(error.to_string()),
    }
}

/// Reads that change no stored data but cache their result (and arguments) as variables the
/// user can list: not read-only, and not destructive, since a cached result only ever evicts
/// other cached results.
const CACHED_READ: Annotations = annotations(false, false, false);
/// Adds new records, replacing none.
const WRITES: Annotations = annotations(false, false, false);
/// Replaces what is stored under a name or id.
const OVERWRITES: Annotations = annotations(false, true, true);
/// Deletes stored records.
const DESTRUCTIVE: Annotations = annotations(false, true, true);

const fn annotations(read_only: bool, destructive: bool, idempotent: bool) -> Annotations {
    Annotations {
        read_only,
        destructive,
        idempotent,
        open_world: false,
    }
}

pub fn group(service: &Arc<Snapshots>) -> ToolGroup {
    let tool = |definition: ToolDefinition, run: Run| -> Arc<dyn Tool> {
        Arc::new(SnapshotTool {
            definition,
            service: Arc::clone(service),
            run,
            whole_chats: false,
        })
    };
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(SnapshotTool {
            definition: ToolDefinition::new::<ProcessArguments>("SnapshotProcess", PROCESS, WRITES)
                .with_title("Process chat into snapshots")
                .with_output::<Processed>(),
            service: Arc::clone(service),
            run: process,
            whole_chats: true,
        }),
        tool(
            ToolDefinition::new::<ApplyArguments>("SnapshotApply", APPLY, WRITES)
                .with_title("Apply calls to a snapshot")
                .with_output::<Applied>(),
            apply,
        ),
        tool(
            ToolDefinition::new::<GetArguments>("SnapshotGet", GET, CACHED_READ)
                .with_title("Get snapshot")
                .with_output::<SnapshotOutput>(),
            get,
        ),
        tool(
            ToolDefinition::new::<UpdateArguments>("SnapshotUpdate", UPDATE, OVERWRITES)
                .with_title("Update snapshot")
                .with_output::<SnapshotOutput>(),
            update,
        ),
        tool(
            ToolDefinition::new::<DeleteChatArguments>(
                "SnapshotDeleteChat",
                DELETE_CHAT,
                DESTRUCTIVE,
            )
            .with_title("Delete chat snapshots")
            .with_output::<DeletedOutput>(),
            delete_chat,
        ),
        tool(
            ToolDefinition::new::<CleanupArguments>("SnapshotCleanup", CLEANUP, DESTRUCTIVE)
                .with_title("Clean up snapshots")
                .with_output::<CleanupOutput>(),
            cleanup,
        ),
    ];
    tools.extend(library_tools(&tool));
    tools.extend(functions::tools(service));
    ToolGroup {
        name: GROUP.to_owned(),
        tools,
        rule_prompt: RulePrompt::Static(
            include_str!("../../skills/synapse-workspace/rules/snapshots-group.md").to_owned(),
        ),
        rules: Vec::new(),
    }
}

/// The function library's and the templates' tools.
fn library_tools(tool: &dyn Fn(ToolDefinition, Run) -> Arc<dyn Tool>) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolDefinition::new::<ScopeArguments>("FunctionList", FUNCTION_LIST, CACHED_READ)
                .with_title("List state functions")
                .with_output::<FunctionListOutput>(),
            function_list,
        ),
        tool(
            ToolDefinition::new::<UpsertArguments>("FunctionUpsert", FUNCTION_UPSERT, OVERWRITES)
                .with_title("Create or replace state function")
                .with_output::<VarFunction>(),
            function_upsert,
        ),
        tool(
            ToolDefinition::new::<RemoveArguments>("FunctionRemove", FUNCTION_REMOVE, DESTRUCTIVE)
                .with_title("Remove state function")
                .with_output::<VarFunction>(),
            function_remove,
        ),
        tool(
            ToolDefinition::new::<ImportArguments>("FunctionImport", FUNCTION_IMPORT, WRITES)
                .with_title("Import state functions")
                .with_output::<ImportOutput>(),
            function_import,
        ),
        tool(
            ToolDefinition::new::<ExportArguments>("FunctionExport", FUNCTION_EXPORT, CACHED_READ)
                .with_title("Export state functions")
                .with_output::<Export>(),
            function_export,
        ),
        tool(
            ToolDefinition::new::<TemplateGetArguments>("TemplateGet", TEMPLATE_GET, CACHED_READ)
                .with_title("Get character template")
                .with_output::<TemplateOutput>(),
            template_get,
        ),
        tool(
            ToolDefinition::new::<TemplateSetArguments>("TemplateSet", TEMPLATE_SET, OVERWRITES)
                .with_title("Set character template")
                .with_output::<TemplateOutput>(),
            template_set,
        ),
    ]
}

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
    or deleted elsewhere); returns the chats removed.";

const FUNCTION_LIST: &str = "List the state functions: the global library (with the built-ins \
    SET, ADD, SUB, APPEND, REMOVE, ASSIGN, UNSET, TIME and the optional MVU and JSON_PATCH \
    syntaxes) and, with `characterId`, that character's own functions.";

const FUNCTION_UPSERT: &str = "Create or replace a state function. Active functions have a \
    JavaScript regex `pattern` whose capture groups become `args`; passive ones a `timing` \
    (`before_active` / `after_active`). The `executor` is a JavaScript function body with \
    `snapshot`, `args`, `context` and a lodash-like `_` (get/set/has/unset/merge/cloneDeep) that \
    returns the snapshot. Leave out `id` to create. Built-ins accept only enabled/order/description \
    changes. With `characterId` the function belongs to that character.";

const FUNCTION_REMOVE: &str = "Remove a state function by id (built-ins can only be disabled).";

const FUNCTION_IMPORT: &str = "Import functions from the export format `{\"version\": \"1.0\", \
    \"functions\": [...]}` (an object or its JSON text). Each gets a new id and starts disabled: \
    review, then enable with FunctionUpsert.";

const FUNCTION_EXPORT: &str = "Export state functions in the shareable format (all of a scope, \
    or the given ids).";

const TEMPLATE_GET: &str = "Read a character's template: the state a chat starts from.";

const TEMPLATE_SET: &str = "Set a character's template (a JSON object): the state new chats start \
    from. `mvuStrip: true` removes MVU metadata first.";

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
}

fn process(
    service: &Snapshots,
    arguments: Value,
    cancellation: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: ProcessArguments = parse_arguments("SnapshotProcess", arguments)?;
    let processed = service
        .process(
            &arguments.chat_file,
            &arguments.messages,
            arguments.character_id.as_deref(),
            arguments.template,
            &|| cancellation.is_cancelled(),
        )
        .map_err(failed)?;
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
    /// The snapshot to start from; without it, the character's template (or `{}`).
    pub base_id: Option<String>,
    pub character_id: Option<String>,
    /// The message's index in its chat, if it has one.
    pub message_index: Option<usize>,
}

fn apply(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: ApplyArguments = parse_arguments("SnapshotApply", arguments)?;
    let applied = service
        .apply(
            &arguments.chat_file,
            &arguments.text,
            arguments.base_id.as_deref(),
            arguments.character_id.as_deref(),
            arguments.message_index,
        )
        .map_err(failed)?;
    structured(&applied)
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

fn snapshot_output(service: &Snapshots, id: &str) -> Result<ToolOutput, ToolError> {
    let stored = service.snapshot(id).map_err(failed)?;
    structured(&SnapshotOutput {
        bytes: stored.value.to_string().len(),
        stored,
    })
}

fn get(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: GetArguments = parse_arguments("SnapshotGet", arguments)?;
    snapshot_output(service, &arguments.id)
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

fn update(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let mut arguments: UpdateArguments = parse_arguments("SnapshotUpdate", arguments)?;
    if arguments.mvu_strip {
        strip_mvu_metadata(&mut arguments.snapshot);
    }
    service
        .update(&arguments.id, &arguments.snapshot)
        .map_err(failed)?;
    snapshot_output(service, &arguments.id)
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

fn delete_chat(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: DeleteChatArguments = parse_arguments("SnapshotDeleteChat", arguments)?;
    let deleted = service.delete_chat(&arguments.chat_file).map_err(failed)?;
    structured(&DeletedOutput {
        chat_file: arguments.chat_file,
        deleted,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CleanupArguments {
    /// Every chat file that still exists; snapshots of all others are deleted.
    pub active_chat_files: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CleanupOutput {
    /// The chats whose snapshots were deleted.
    pub removed: Vec<DeletedOutput>,
    /// Snapshots deleted in all.
    pub deleted: u64,
}

fn cleanup(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: CleanupArguments = parse_arguments("SnapshotCleanup", arguments)?;
    let removed: Vec<DeletedOutput> = service
        .cleanup(&arguments.active_chat_files)
        .map_err(failed)?
        .into_iter()
        .map(|(chat_file, deleted)| DeletedOutput { chat_file, deleted })
        .collect();
    structured(&CleanupOutput {
        deleted: removed.iter().map(|chat| chat.deleted).sum(),
        removed,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScopeArguments {
    /// A character whose own (local) functions to include.
    pub character_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FunctionListOutput {
    pub global: Vec<VarFunction>,
    /// The character's functions (with `characterId`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<Vec<VarFunction>>,
}

fn function_list(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: ScopeArguments = parse_arguments("FunctionList", arguments)?;
    let global = service.functions(&Scope::Global).map_err(failed)?;
    let local = match Scope::of(arguments.character_id.as_deref()) {
        Scope::Global => None,
        scope @ Scope::Character(_) => Some(service.functions(&scope).map_err(failed)?),
    };
    structured(&FunctionListOutput { global, local })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpsertArguments {
    /// The function, in the shareable `VarFunction` shape.
    pub function: VarFunction,
    /// Store it in this character's (local) library instead of the global one.
    pub character_id: Option<String>,
}

fn function_upsert(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: UpsertArguments = parse_arguments("FunctionUpsert", arguments)?;
    let scope = Scope::of(arguments.character_id.as_deref());
    let stored = service
        .upsert_function(arguments.function, &scope)
        .map_err(failed)?;
    structured(&stored)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RemoveArguments {
    pub id: String,
    pub character_id: Option<String>,
}

fn function_remove(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: RemoveArguments = parse_arguments("FunctionRemove", arguments)?;
    let scope = Scope::of(arguments.character_id.as_deref());
    let removed = service
        .remove_function(&arguments.id, &scope)
        .map_err(failed)?;
    structured(&removed)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImportArguments {
    /// The export: `{"version": "1.0", "functions": [...]}`, as an object or JSON text.
    #[schemars(extend("anyOf" = [{"type": "object"}, {"type": "string"}]))]
    pub data: Value,
    pub character_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ImportOutput {
    /// The imported functions, with their new ids; all disabled.
    pub imported: Vec<VarFunction>,
    pub note: String,
}

fn function_import(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: ImportArguments = parse_arguments("FunctionImport", arguments)?;
    let data = match arguments.data {
        Value::String(text) => serde_json::from_str(&text)
            .map_err(|error| ToolError::invalid(format!("`data` is not JSON: {error}")))?,
        other => other,
    };
    let export: Export = serde_json::from_value(data).map_err(|error| {
        ToolError::invalid(format!(
            "`data` is not a function export ({{\"version\": \"1.0\", \"functions\": [...]}}): {error}"
        ))
    })?;
    let scope = Scope::of(arguments.character_id.as_deref());
    let imported = service.import(export, &scope).map_err(failed)?;
    structured(&ImportOutput {
        note: format!(
            "{} functions imported, all disabled: enable each with FunctionUpsert after reviewing it",
            imported.len()
        ),
        imported,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportArguments {
    /// The functions to export; all of the scope when left out.
    pub ids: Option<Vec<String>>,
    pub character_id: Option<String>,
}

fn function_export(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: ExportArguments = parse_arguments("FunctionExport", arguments)?;
    let scope = Scope::of(arguments.character_id.as_deref());
    let export = service
        .export(arguments.ids.as_deref(), &scope)
        .map_err(failed)?;
    structured(&export)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TemplateGetArguments {
    pub character_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateOutput {
    pub character_id: String,
    /// The template; absent when none is stored (chats then start from `{}`).
    #[serde(skip_serializing_if = "Value::is_null")]
    #[schemars(extend("type" = "object"))]
    pub template: Value,
}

fn template_get(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: TemplateGetArguments = parse_arguments("TemplateGet", arguments)?;
    let template = service
        .template(&arguments.character_id)
        .map_err(failed)?
        .unwrap_or(Value::Null);
    structured(&TemplateOutput {
        character_id: arguments.character_id,
        template,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TemplateSetArguments {
    pub character_id: String,
    /// The starting state (a JSON object).
    #[schemars(extend("type" = "object"))]
    pub template: Value,
    /// Remove MVU metadata first.
    #[serde(default)]
    pub mvu_strip: bool,
}

fn template_set(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let mut arguments: TemplateSetArguments = parse_arguments("TemplateSet", arguments)?;
    if arguments.mvu_strip {
        strip_mvu_metadata(&mut arguments.template);
    }
    service
        .set_template(&arguments.character_id, &arguments.template)
        .map_err(failed)?;
    structured(&TemplateOutput {
        character_id: arguments.character_id,
        template: arguments.template,
    })
}
