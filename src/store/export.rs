//! The workspace export file: every variable with all its fields, the remembered approvals, the
//! plans' state document, and the chat snapshots, function libraries and character templates, as
//! JSON (schema: `schemas/workspace-export.json`). Importing it restores all of it, timestamps
//! included. Version 1 files (variables and approvals only) still import.

use std::collections::BTreeMap;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use serde_json::Value;

use super::tree::{Encoded, SnapshotKey};
use super::{Batch, Error, GlobalSnapshot, SnapshotStore, Store, StoredSnapshot};
use crate::vars::{RestoredVariable, Timestamp, ValueKind, VarType};

/// The `format` every export carries.
pub const FORMAT: &str = "synapse-mcp/workspace";

/// A whole workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceExport {
    /// Always `synapse-mcp/workspace`.
    pub format: String,
    /// Version of this format (1).
    pub version: u32,
    /// The workspace's name when it was exported.
    pub workspace: String,
    /// When it was exported (RFC 3339).
    pub exported_at: String,
    /// Every variable, sorted by name.
    pub variables: Vec<ExportedVariable>,
    /// Remembered `ask-once` approvals.
    pub approvals: Vec<String>,
    /// The plans' state document (version 2).
    #[serde(default = "empty_object")]
    pub state: Value,
    /// Stored state functions by scope (`global`, `character:<id>`), in their order (version 2).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub functions: BTreeMap<String, Vec<Value>>,
    /// Character templates by character id (version 2).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub templates: BTreeMap<String, Value>,
    /// Chat state snapshots, by chat and message (version 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<StoredSnapshot>,
    /// Global snapshots, by label (version 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub global_snapshots: Vec<GlobalSnapshot>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// One variable with every field. Times are microseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportedVariable {
    pub name: String,
    /// The value, always text (JSON text when `kind` is `json`).
    pub value: String,
    pub kind: ValueKind,
    #[serde(rename = "type")]
    pub var_type: VarType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Never evicted.
    #[serde(default)]
    pub keep: bool,
    pub created: u64,
    pub updated: u64,
    pub last_visited: u64,
    #[serde(default)]
    pub reference_count: u64,
}

impl From<RestoredVariable> for ExportedVariable {
    fn from(variable: RestoredVariable) -> Self {
        Self {
            name: variable.name,
            value: variable.value.to_string(),
            kind: variable.kind,
            var_type: variable.var_type,
            desc: variable.desc,
            tags: variable.tags,
            keep: variable.keep,
            created: variable.created.0,
            updated: variable.updated.0,
            last_visited: variable.last_visited.0,
            reference_count: variable.reference_count,
        }
    }
}

impl From<ExportedVariable> for RestoredVariable {
    fn from(variable: ExportedVariable) -> Self {
        Self {
            name: variable.name,
            value: Arc::from(variable.value),
            kind: variable.kind,
            var_type: variable.var_type,
            desc: variable.desc,
            tags: variable.tags,
            keep: variable.keep,
            created: Timestamp(variable.created),
            updated: Timestamp(variable.updated),
            last_visited: Timestamp(variable.last_visited),
            reference_count: variable.reference_count,
        }
    }
}

/// Reads a workspace out of the store.
pub fn export(
    store: &(impl Store + SnapshotStore + ?Sized),
    workspace: &str,
    now: Timestamp,
) -> Result<WorkspaceExport, Error> {
    let known = store
        .workspaces()?
        .iter()
        .any(|summary| summary.name == workspace);
    if !known {
        return Err(Error::UnknownWorkspace {
            name: workspace.to_owned(),
            path: store.location().to_owned(),
        });
    }
    let mut variables: Vec<ExportedVariable> = store
        .load(workspace)?
        .variables
        .into_iter()
        .map(ExportedVariable::from)
        .collect();
    variables.sort_by(|a, b| a.name.cmp(&b.name));
    let mut global_snapshots = Vec::new();
    for summary in store.globals(workspace)? {
        global_snapshots.extend(store.global(workspace, &summary.id)?);
    }
    let mut functions = BTreeMap::new();
    for scope in store.function_scopes(workspace)? {
        let stored = store.functions(workspace, &scope)?;
        functions.insert(scope, stored);
    }
    Ok(WorkspaceExport {
        format: FORMAT.to_owned(),
        version: 2,
        workspace: workspace.to_owned(),
        exported_at: now.to_rfc3339(),
        variables,
        approvals: store.approvals(workspace)?,
        state: store.state(workspace)?,
        functions,
        templates: store.templates(workspace)?.into_iter().collect(),
        snapshots: store.all_snapshots(workspace)?,
        global_snapshots,
    })
}

/// Writes an export into the store as workspace `workspace`, in one transaction.
pub fn import(
    store: &(impl Store + SnapshotStore + ?Sized),
    workspace: &str,
    export: WorkspaceExport,
) -> Result<usize, Error> {
    let count = export.variables.len();
    let batch = Batch {
        written: export
            .variables
            .into_iter()
            .map(RestoredVariable::from)
            .collect(),
        removed: Vec::new(),
    };
    store.commit(workspace, &batch)?;
    for key in &export.approvals {
        store.remember_approval(workspace, key)?;
    }
    let state = export.state;
    let mut replace = |document: &mut Value| {
        document.clone_from(&state);
        Ok(())
    };
    store
        .update_state(workspace, &mut replace)?
        .map_err(|message| Error::Database {
            path: store.location().to_owned(),
            message,
        })?;
    for (scope, definitions) in &export.functions {
        let rows: Vec<(String, Value)> = definitions
            .iter()
            .map(|definition| {
                let id = definition
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                (id.to_owned(), definition.clone())
            })
            .collect();
        store.put_functions(workspace, scope, &rows)?;
    }
    for (character, template) in &export.templates {
        store.set_template(workspace, character, template)?;
    }
    if !export.snapshots.is_empty() {
        let mut encoded = Encoded::new();
        for snapshot in &export.snapshots {
            let key = SnapshotKey {
                id: snapshot.id.clone(),
                chat_file: snapshot.chat_file.clone(),
                message_id: snapshot.message_id,
                swipe_id: snapshot.swipe_id,
                created_at: Some(snapshot.created_at),
                summary: snapshot.summary.clone(),
                stored_bytes: None,
            };
            encoded
                .add(key, &snapshot.value)
                .map_err(|error| Error::Database {
                    path: store.location().to_owned(),
                    message: format!("snapshot `{}` {error}", snapshot.id),
                })?;
        }
        store.put_snapshots(workspace, &encoded)?;
    }
    for global in &export.global_snapshots {
        store.put_global(workspace, global)?;
    }
    Ok(count)
}
