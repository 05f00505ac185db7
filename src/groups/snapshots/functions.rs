//! The library-arranging tools of the `snapshots` group (`docs/snapshots.md#the-function-library`):
//! `FunctionMove`, `FunctionReorder`, `FunctionEnable`, `FunctionTest` and `SnapshotEnable`, as
//! thin adapters over [`crate::snapshots::Snapshots`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{OVERWRITES, Run, SnapshotTool, annotations, failed};
use crate::groups::structured;
use crate::snapshots::functions::{Scope, VarFunction};
use crate::snapshots::switches::{Setting, Switches};
use crate::snapshots::{Snapshots, TestBase, Tested};
use crate::tools::{Annotations, Tool, ToolDefinition, ToolError, ToolOutput, parse_arguments};

/// Reads only, and stores nothing (not even its result as a variable).
const READS: Annotations = annotations(true, false, true);

pub(super) fn tools(service: &Arc<Snapshots>) -> Vec<Arc<dyn Tool>> {
    let tool = |definition: ToolDefinition, run: Run| -> Arc<dyn Tool> {
        Arc::new(SnapshotTool {
            definition,
            service: Arc::clone(service),
            run,
            whole_chats: false,
        })
    };
    vec![
        tool(
            ToolDefinition::new::<MoveArguments>("FunctionMove", MOVE, OVERWRITES)
                .with_title("Move state function between libraries")
                .with_output::<MovedOutput>(),
            function_move,
        ),
        tool(
            ToolDefinition::new::<ReorderArguments>("FunctionReorder", REORDER, OVERWRITES)
                .with_title("Reorder state functions")
                .with_output::<FunctionsOutput>(),
            function_reorder,
        ),
        tool(
            ToolDefinition::new::<EnableArguments>("FunctionEnable", ENABLE, OVERWRITES)
                .with_title("Enable or disable state functions")
                .with_output::<FunctionsOutput>(),
            function_enable,
        ),
        // Like SnapshotProcess it is neither cached nor cut: a dry run stores nothing, and its
        // steps are what the caller asked to see.
        Arc::new(SnapshotTool {
            definition: ToolDefinition::new::<TestArguments>("FunctionTest", TEST, READS)
                .with_title("Test state functions on a text")
                .with_output::<Tested>(),
            service: Arc::clone(service),
            run: function_test,
            whole_chats: true,
        }),
        tool(
            ToolDefinition::new::<SwitchArguments>("SnapshotEnable", SWITCH, OVERWRITES)
                .with_title("Switch chat state processing on or off")
                .with_output::<Switches>(),
            snapshot_enable,
        ),
    ]
}

const MOVE: &str = "Move a state function (by id, or by name when unique) from one library to \
    another: from the global library or `characterId`'s, to the global library or \
    `toCharacterId`'s. A character's chats run the global functions and its own. Built-ins stay \
    global.";

const REORDER: &str = "Set the running order of a library (global, or `characterId`'s): the \
    functions listed in `ids` (ids or names) first, in that order, then the others in their \
    current order; each `order` becomes 1, 2, … . Passive functions run by `order`; active calls \
    run in text order.";

const ENABLE: &str = "Turn state functions on (`enabled: true`) or off in one step, by id or \
    name, in the global library or `characterId`'s. Every name is checked before anything \
    changes.";

const TEST: &str = "Dry-run the state functions over a text and store nothing: every call found \
    (function, position in characters, arguments as parsed), the state after each step, and the \
    errors, including calls that name no function (with the nearest known name). Starts from \
    `snapshot` (a stored snapshot's id, or a state object), else the character's template. \
    `function` adds an unsaved function (or replaces the one with its id) to try a pattern or \
    an executor.";

const SWITCH: &str = "Switch state processing on or off for a chat (`chatFile`) or a character \
    (`characterId`); `inherit` removes the setting. A chat's setting wins over its character's; \
    with neither, processing is on. SnapshotProcess on a chat that is off stores nothing and \
    says so. Returns every switch set.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MoveArguments {
    /// The function's id, or its name when no other function of its library has that name.
    pub id: String,
    /// The character whose library it is in now; leave out for the global library.
    pub character_id: Option<String>,
    /// The character whose library it moves to; leave out for the global library.
    pub to_character_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MovedOutput {
    /// The function, as stored in its new library.
    pub function: VarFunction,
    /// The library it left: `global` or `character:<id>`.
    pub from: String,
    /// The library it is in now.
    pub to: String,
}

fn function_move(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: MoveArguments = parse_arguments("FunctionMove", arguments)?;
    let from = Scope::of(arguments.character_id.as_deref());
    let to = Scope::of(arguments.to_character_id.as_deref());
    let function = service
        .move_function(&arguments.id, &from, &to)
        .map_err(failed)?;
    structured(&MovedOutput {
        function,
        from: from.key(),
        to: to.key(),
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReorderArguments {
    /// The functions (ids, or names when unique) in the order they should run.
    pub ids: Vec<String>,
    /// The character whose library to reorder; leave out for the global library.
    pub character_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FunctionsOutput {
    /// The functions as stored now.
    pub functions: Vec<VarFunction>,
}

fn function_reorder(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: ReorderArguments = parse_arguments("FunctionReorder", arguments)?;
    let scope = Scope::of(arguments.character_id.as_deref());
    let functions = service.reorder(&arguments.ids, &scope).map_err(failed)?;
    structured(&FunctionsOutput { functions })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnableArguments {
    /// The functions (ids, or names when unique) to switch.
    pub ids: Vec<String>,
    /// `true` turns them on, `false` off.
    pub enabled: bool,
    /// The character whose library they are in; leave out for the global library.
    pub character_id: Option<String>,
}

fn function_enable(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: EnableArguments = parse_arguments("FunctionEnable", arguments)?;
    let scope = Scope::of(arguments.character_id.as_deref());
    let functions = service
        .set_enabled(&arguments.ids, arguments.enabled, &scope)
        .map_err(failed)?;
    structured(&FunctionsOutput { functions })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TestArguments {
    /// The text to run the functions over (an AI reply).
    pub text: String,
    /// What to start from: a stored snapshot's id, or a state (a JSON object). Left out: the
    /// character's template, or `{}`.
    #[schemars(extend("anyOf" = [{"type": "string"}, {"type": "object"}]))]
    pub snapshot: Option<Value>,
    /// The character whose template and own functions apply (with the global ones).
    pub character_id: Option<String>,
    /// An unsaved function to try, in the `VarFunction` shape; it replaces the library's
    /// function with the same id, and runs enabled.
    pub function: Option<VarFunction>,
}

fn function_test(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: TestArguments = parse_arguments("FunctionTest", arguments)?;
    let base = match arguments.snapshot {
        None => TestBase::Template,
        Some(Value::String(id)) => TestBase::Snapshot(id),
        Some(state) => TestBase::State(state),
    };
    let tested = service
        .test(
            &arguments.text,
            base,
            arguments.character_id.as_deref(),
            arguments.function,
        )
        .map_err(failed)?;
    structured(&tested)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SwitchArguments {
    /// The chat to switch (give this or `characterId`).
    pub chat_file: Option<String>,
    /// The character to switch: all its chats without a setting of their own.
    pub character_id: Option<String>,
    /// `on`, `off`, or `inherit` (remove this setting).
    pub setting: Setting,
}

fn snapshot_enable(
    service: &Snapshots,
    arguments: Value,
    _: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let arguments: SwitchArguments = parse_arguments("SnapshotEnable", arguments)?;
    let switches = service
        .set_switch(
            arguments.chat_file.as_deref(),
            arguments.character_id.as_deref(),
            arguments.setting,
        )
        .map_err(failed)?;
    structured(&switches)
}
