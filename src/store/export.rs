//! The workspace export file: every variable with all its fields, and the remembered approvals,
//! as JSON (schema: `schemas/workspace-export.json`). Importing it restores the variables byte
//! for byte, timestamps included.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Batch, Error, Store};
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
    store: &dyn Store,
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
    Ok(WorkspaceExport {
        format: FORMAT.to_owned(),
        version: 1,
        workspace: workspace.to_owned(),
        exported_at: now.to_rfc3339(),
        variables,
        approvals: store.approvals(workspace)?,
    })
}

/// Writes an export into the store as workspace `workspace`, in one transaction.
pub fn import(store: &dyn Store, workspace: &str, export: WorkspaceExport) -> Result<usize, Error> {
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
    Ok(count)
}
