//! The library-arranging tools of the `snapshots` group (`docs/snapshots.md#the-function-library`):
//! `FunctionMove`, `FunctionReorder` and `FunctionEnable` change where functions live, in what
//! order they run and whether they run; `FunctionTest` is a dry run over a text that stores
//! nothing.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, OVERWRITES, service};
use crate::snapshots::functions::{Scope, VarFunction};
use crate::snapshots::{Snapshots, Tested};
use crate::tools::{Annotations, Answered, Declaration, TypedTool, declare};

/// Reads only, and stores nothing (not even its result as a variable).
const READS: Annotations = Annotations::READ_ONLY;

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

/// `FunctionMove`: a function moved between the global library and a character's.
impl TypedTool<Arc<Snapshots>> for MoveArguments {
    type Output = MovedOutput;
    const TOOL: Declaration = declare! {
        "FunctionMove", "Move state function between libraries", OVERWRITES, MOVE, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<MovedOutput> {
        let from = Scope::of(self.character_id.as_deref());
        let to = Scope::of(self.to_character_id.as_deref());
        let function = service(&context).move_function(&self.id, &from, &to)?;
        Ok(MovedOutput::new(function, &from, &to))
    }
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

/// `FunctionReorder`: a library in a new running order.
impl TypedTool<Arc<Snapshots>> for ReorderArguments {
    type Output = FunctionsOutput;
    const TOOL: Declaration = declare! {
        "FunctionReorder", "Reorder state functions", OVERWRITES, REORDER, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<FunctionsOutput> {
        let scope = Scope::of(self.character_id.as_deref());
        let functions = service(&context).reorder(&self.ids, &scope)?;
        Ok(FunctionsOutput { functions })
    }
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

/// `FunctionEnable`: functions turned on or off in bulk.
impl TypedTool<Arc<Snapshots>> for EnableArguments {
    type Output = FunctionsOutput;
    const TOOL: Declaration = declare! {
        "FunctionEnable", "Enable or disable state functions", OVERWRITES, ENABLE, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<FunctionsOutput> {
        let scope = Scope::of(self.character_id.as_deref());
        let functions = service(&context).set_enabled(&self.ids, self.enabled, &scope)?;
        Ok(FunctionsOutput { functions })
    }
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

/// `FunctionTest`: a dry run over a text. It is neither cached nor cut: it stores nothing, and
/// its steps are what the caller asked to see.
impl TypedTool<Arc<Snapshots>> for TestArguments {
    type Output = Tested;
    const TOOL: Declaration = declare! {
        "FunctionTest", "Test state functions on a text", READS, TEST, pooled, uncached, whole
    };

    async fn run(self, context: Call<'_>) -> Answered<Tested> {
        let (base, character) = (self.snapshot.into(), self.character_id.as_deref());
        let cancelled = || context.cancellation.is_cancelled();
        let service = service(&context);
        Ok(service.test(&self.text, base, character, self.function, &cancelled)?)
    }
}

impl MovedOutput {
    fn new(function: VarFunction, from: &Scope, to: &Scope) -> Self {
        Self {
            function,
            from: from.key(),
            to: to.key(),
        }
    }
}
