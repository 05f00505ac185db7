//! The function-library tools of the `snapshots` group: `FunctionList`, `FunctionUpsert`,
//! `FunctionRemove`, `FunctionImport` and `FunctionExport`, over the global library and each
//! character's own.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CACHED_READ, Call, DESTRUCTIVE, OVERWRITES_OR_ADDS, WRITES, service};
use crate::snapshots::Snapshots;
use crate::snapshots::functions::{Export, Scope, VarFunction};
use crate::tools::{
    Answered, Consent, Declaration, ToolError, TypedTool, WORKSPACE_VIEW, declare, parse_arguments,
};

const FUNCTION_LIST: &str = "List the state functions: the global library (built-ins included) \
    and, with `characterId`, that character's own.";

const FUNCTION_UPSERT: &str = "Create (no `id`) or replace a state function. Active ones match a \
    JavaScript regex `pattern` in replies, its groups becoming `args`; passive ones run on every \
    message at a `timing`. The `executor` is a JavaScript function body given `snapshot`, `args`, \
    `context` and a lodash-like `_`, returning the snapshot. Built-ins take only \
    enabled/order/description changes.";

const FUNCTION_REMOVE: &str = "Remove a state function by id (built-ins can only be disabled).";

const FUNCTION_IMPORT: &str = "Import functions from the export format `{\"version\": \"1.0\", \
    \"functions\": […]}`. Each gets a new id and starts disabled: review, then enable.";

const FUNCTION_EXPORT: &str = "Export state functions in the shareable format (a scope's, or \
    `ids`).";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScopeArguments {
    /// Also this character's own functions.
    pub character_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FunctionListOutput {
    pub global: Vec<VarFunction>,
    /// The character's functions (with `characterId`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<Vec<VarFunction>>,
}

/// `FunctionList`: the global functions, and a character's own.
impl TypedTool<Arc<Snapshots>> for ScopeArguments {
    type Output = FunctionListOutput;
    const TOOL: Declaration = declare! {
        "FunctionList", "List state functions", CACHED_READ, FUNCTION_LIST,
        pooled, view(WORKSPACE_VIEW)
    };

    async fn run(self, context: Call<'_>) -> Answered<FunctionListOutput> {
        let character = self.character_id.as_deref();
        let (global, local) = service(&context).function_lists(character)?;
        Ok(FunctionListOutput { global, local })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpsertArguments {
    /// The function (`VarFunction` shape).
    pub function: VarFunction,
    /// Store it in this character's library, not the global one.
    pub character_id: Option<String>,
}

/// `FunctionUpsert`: a function created or replaced; replacing one's pattern, executor or
/// description asks first (the old ones are gone).
impl TypedTool<Arc<Snapshots>> for UpsertArguments {
    type Output = VarFunction;
    const TOOL: Declaration = declare! {
        "FunctionUpsert", "Create or replace state function", OVERWRITES_OR_ADDS, FUNCTION_UPSERT,
        pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<VarFunction> {
        let scope = Scope::of(self.character_id.as_deref());
        Ok(service(&context).upsert_function(self.function, &scope)?)
    }

    /// Replacing what the user would miss is asked ([`Snapshots::upsert_replaces`]).
    fn consent(service: &Arc<Snapshots>, arguments: &Value) -> Result<Consent, ToolError> {
        let arguments: Self = parse_arguments(Self::TOOL.name, arguments.clone())?;
        let scope = Scope::of(arguments.character_id.as_deref());
        let replaces = service.upsert_replaces(&arguments.function, &scope)?;
        Ok(Consent::asked_when(replaces))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RemoveArguments {
    pub id: String,
    pub character_id: Option<String>,
}

/// `FunctionRemove`: a function removed by id.
impl TypedTool<Arc<Snapshots>> for RemoveArguments {
    type Output = VarFunction;
    const TOOL: Declaration = declare! {
        "FunctionRemove", "Remove state function", DESTRUCTIVE, FUNCTION_REMOVE, pooled, asks_once
    };

    async fn run(self, context: Call<'_>) -> Answered<VarFunction> {
        let scope = Scope::of(self.character_id.as_deref());
        Ok(service(&context).remove_function(&self.id, &scope)?)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImportArguments {
    /// The export, as an object or JSON text.
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

/// `FunctionImport`: functions from the export format, each with a new id, all disabled.
impl TypedTool<Arc<Snapshots>> for ImportArguments {
    type Output = ImportOutput;
    const TOOL: Declaration = declare! {
        "FunctionImport", "Import state functions", WRITES, FUNCTION_IMPORT, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<ImportOutput> {
        let scope = Scope::of(self.character_id.as_deref());
        Ok(service(&context)
            .import(Export::parse(self.data)?, &scope)?
            .into())
    }
}

impl From<(Vec<VarFunction>, usize)> for ImportOutput {
    fn from((imported, builtins): (Vec<VarFunction>, usize)) -> Self {
        let mut note = format!(
            "{} functions imported, all disabled: enable each with FunctionUpsert after reviewing it",
            imported.len()
        );
        if builtins > 0 {
            write!(
                note,
                "; {builtins} built-in function(s) of the export left out (every library has them)"
            )
            .ok();
        }
        Self { imported, note }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportArguments {
    /// Only these functions.
    pub ids: Option<Vec<String>>,
    pub character_id: Option<String>,
}

/// `FunctionExport`: functions in the shareable format.
impl TypedTool<Arc<Snapshots>> for ExportArguments {
    type Output = Export;
    const TOOL: Declaration = declare! {
        "FunctionExport", "Export state functions", CACHED_READ, FUNCTION_EXPORT, pooled
    };

    async fn run(self, context: Call<'_>) -> Answered<Export> {
        let scope = Scope::of(self.character_id.as_deref());
        Ok(service(&context).export(self.ids.as_deref(), &scope)?)
    }
}
