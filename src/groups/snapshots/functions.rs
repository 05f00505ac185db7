//! The function-library tools of the `snapshots` group: `FunctionList`, `FunctionUpsert`,
//! `FunctionRemove`, `FunctionImport` and `FunctionExport`, over the global library and each
//! character's own.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ASKS_FIRST, CACHED_READ, DESTRUCTIVE, OVERWRITES_OR_ADDS, WRITES, asked_when};
use crate::groups::{off_thread, structured};
use crate::snapshots::Snapshots;
use crate::snapshots::functions::{Export, Scope, VarFunction};
use crate::tools::{
    Consent, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, WORKSPACE_VIEW,
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
pub(super) struct FunctionList {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl FunctionList {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<ScopeArguments>("FunctionList", FUNCTION_LIST, CACHED_READ)
                .with_title("List state functions")
                .with_output::<FunctionListOutput>()
                .with_view(WORKSPACE_VIEW);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for FunctionList {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = Arc::clone(&self.service);
        off_thread(
            &self.definition,
            call,
            move |arguments: ScopeArguments, _| {
                let global = service.functions(&Scope::Global)?;
                let local = match Scope::of(arguments.character_id.as_deref()) {
                    Scope::Global => None,
                    scope @ Scope::Character(_) => Some(service.functions(&scope)?),
                };
                structured(&FunctionListOutput { global, local })
            },
        )
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
pub(super) struct FunctionUpsert {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl FunctionUpsert {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition = ToolDefinition::new::<UpsertArguments>(
            "FunctionUpsert",
            FUNCTION_UPSERT,
            OVERWRITES_OR_ADDS,
        )
        .with_title("Create or replace state function")
        .with_output::<VarFunction>()
        .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for FunctionUpsert {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// A new function destroys nothing, and neither does a call that changes only `enabled`
    /// or `order` (what `FunctionEnable` and `FunctionReorder` change without asking);
    /// replacing anything else of a function of its library (a built-in included) is asked.
    fn consent(&self, arguments: &Value) -> Result<Consent, ToolError> {
        let arguments: UpsertArguments = self.definition.parse(arguments.clone())?;
        let new = arguments.function;
        let stored = self
            .service
            .functions(&Scope::of(arguments.character_id.as_deref()))?
            .into_iter()
            .find(|function| !new.id.is_empty() && function.id == new.id);
        let replaces = stored.is_some_and(|stored| {
            VarFunction {
                enabled: new.enabled,
                order: new.order,
                ..stored
            } != new
        });
        Ok(asked_when(replaces))
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = Arc::clone(&self.service);
        off_thread(
            &self.definition,
            call,
            move |arguments: UpsertArguments, _| {
                let scope = Scope::of(arguments.character_id.as_deref());
                structured(&service.upsert_function(arguments.function, &scope)?)
            },
        )
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RemoveArguments {
    pub id: String,
    pub character_id: Option<String>,
}

/// `FunctionRemove`: a function removed by id.
pub(super) struct FunctionRemove {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl FunctionRemove {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<RemoveArguments>("FunctionRemove", FUNCTION_REMOVE, DESTRUCTIVE)
                .with_title("Remove state function")
                .with_output::<VarFunction>()
                .with_permission(ASKS_FIRST);
        Self {
            definition,
            service,
        }
    }
}

impl Tool for FunctionRemove {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = Arc::clone(&self.service);
        off_thread(
            &self.definition,
            call,
            move |arguments: RemoveArguments, _| {
                let scope = Scope::of(arguments.character_id.as_deref());
                structured(&service.remove_function(&arguments.id, &scope)?)
            },
        )
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
pub(super) struct FunctionImport {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl FunctionImport {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<ImportArguments>("FunctionImport", FUNCTION_IMPORT, WRITES)
                .with_title("Import state functions")
                .with_output::<ImportOutput>();
        Self {
            definition,
            service,
        }
    }
}

impl Tool for FunctionImport {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = Arc::clone(&self.service);
        off_thread(
            &self.definition,
            call,
            move |arguments: ImportArguments, _| {
                let scope = Scope::of(arguments.character_id.as_deref());
                let imported = service.import(export_of(arguments.data)?, &scope)?;
                structured(&ImportOutput {
                    note: format!(
                        "{} functions imported, all disabled: enable each with FunctionUpsert after reviewing it",
                        imported.len()
                    ),
                    imported,
                })
            },
        )
    }
}

/// The export, given as an object or as its JSON text.
fn export_of(data: Value) -> Result<Export, ToolError> {
    let data = match data {
        Value::String(text) => serde_json::from_str(&text)
            .map_err(|error| ToolError::invalid(format!("`data` is not JSON: {error}")))?,
        other => other,
    };
    serde_json::from_value(data).map_err(|error| {
        ToolError::invalid(format!(
            "`data` is not a function export ({{\"version\": \"1.0\", \"functions\": [...]}}): {error}"
        ))
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportArguments {
    /// The functions to export; all of the scope when left out.
    pub ids: Option<Vec<String>>,
    pub character_id: Option<String>,
}

/// `FunctionExport`: functions in the shareable format.
pub(super) struct FunctionExport {
    definition: ToolDefinition,
    service: Arc<Snapshots>,
}

impl FunctionExport {
    pub(super) fn new(service: Arc<Snapshots>) -> Self {
        let definition =
            ToolDefinition::new::<ExportArguments>("FunctionExport", FUNCTION_EXPORT, CACHED_READ)
                .with_title("Export state functions")
                .with_output::<Export>();
        Self {
            definition,
            service,
        }
    }
}

impl Tool for FunctionExport {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let service = Arc::clone(&self.service);
        off_thread(
            &self.definition,
            call,
            move |arguments: ExportArguments, _| {
                let scope = Scope::of(arguments.character_id.as_deref());
                structured(&service.export(arguments.ids.as_deref(), &scope)?)
            },
        )
    }
}
