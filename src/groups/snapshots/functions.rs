//! The function-library tools of the `snapshots` group: `FunctionList`, `FunctionUpsert`,
//! `FunctionRemove`, `FunctionImport` and `FunctionExport`, over the global library and each
//! character's own.

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
    /// The function, in the shareable `VarFunction` shape.
    pub function: VarFunction,
    /// Store it in this character's (local) library instead of the global one.
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

impl From<Vec<VarFunction>> for ImportOutput {
    fn from(imported: Vec<VarFunction>) -> Self {
        Self {
            note: format!(
                "{} functions imported, all disabled: enable each with FunctionUpsert after reviewing it",
                imported.len()
            ),
            imported,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportArguments {
    /// The functions to export; all of the scope when left out.
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
