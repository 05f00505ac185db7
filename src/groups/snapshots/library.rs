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

const MOVE: &str = "Move a state function (id, or unique name) between the global library and a \
    character's (`characterId` → `toCharacterId`; leave one out for global). Built-ins stay \
    global.";

const REORDER: &str = "Set a library's running order: `ids` first, in that order, then the rest as \
    they were. Passive functions run by `order`; active calls in text order.";

const ENABLE: &str = "Turn state functions on or off at once, by id or unique name; every name is \
    checked before anything changes.";

const TEST: &str = "Dry-run the state functions over a text, storing nothing: every call found \
    (function, position, arguments), the state after each step, and the errors (unknown names get \
    the nearest one). Starts from `snapshot`, else the template; `function` tries an unsaved \
    function.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MoveArguments {
    /// The function's id, or its unique name.
    pub id: String,
    /// Its character now (global when left out).
    pub character_id: Option<String>,
    /// The character it moves to (global when left out).
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
    /// Ids or unique names, in running order.
    pub ids: Vec<String>,
    /// The character's library (global when left out).
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
    /// Ids or unique names.
    pub ids: Vec<String>,
    /// On or off.
    pub enabled: bool,
    /// The character's library (global when left out).
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
    /// The text (an AI reply).
    pub text: String,
    /// A stored snapshot's id, or a state object.
    #[schemars(extend("anyOf" = [{"type": "string"}, {"type": "object"}]))]
    pub snapshot: Option<Value>,
    /// The character whose template and functions apply.
    pub character_id: Option<String>,
    /// An unsaved function (`FunctionUpsert`'s `function`); replaces the one with its id.
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
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
