//! The workspace export file: every variable with all its fields, the remembered approvals, the
//! plans' state document, and the chat snapshots, function libraries and character templates, as
//! JSON (schema: `schemas/workspace-export.json`). Importing it restores all of it, timestamps
//! included. Version 1 files (variables and approvals only) still import.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tree::{Encoded, SnapshotKey};
use super::{Batch, Error, GlobalSnapshot, SnapshotStore, Store, StoredSnapshot};
use crate::vars::{Record, Timestamp};

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
    pub variables: Vec<Record>,
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
    /// The snapshot flow's enable switches, by target (`chat:<file>`, `character:<id>`); a
    /// target left out follows the default (version 2).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub switches: BTreeMap<String, bool>,
    /// Tool groups and tools switched on or off at runtime, by target (`group:<name>`,
    /// `tool:<name>`); a target left out follows the configuration (version 2).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_switches: BTreeMap<String, bool>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
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
    let mut variables = store.load(workspace)?.variables;
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
        switches: store.switches(workspace)?.into_iter().collect(),
        tool_switches: store.tool_switches(workspace)?.into_iter().collect(),
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
        written: export.variables,
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
    for (target, enabled) in &export.switches {
        store.set_switch(workspace, target, Some(*enabled))?;
    }
    for (target, enabled) in &export.tool_switches {
        store.set_tool_switch(workspace, target, *enabled)?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    /// An export as versions before the shared variable record wrote it (format version 2):
    /// every optional field present on one variable, absent on the other.
    const VERSION_2: &str = r#"{
      "format": "synapse-mcp/workspace",
      "version": 2,
      "workspace": "old",
      "exportedAt": "2025-01-01T00:00:00.000000Z",
      "variables": [
        {"name": "plain", "value": "text", "kind": "text", "type": "LLMAdd", "tags": [],
         "keep": false, "created": 1, "updated": 2, "lastVisited": 3, "referenceCount": 0},
        {"name": "Rule/x", "value": "{\"a\":1}", "kind": "json", "type": "RULE", "desc": "d",
         "tags": ["t", "u"], "keep": true, "created": 10, "updated": 20, "lastVisited": 30,
         "referenceCount": 4}
      ],
      "approvals": ["ask-once key"],
      "state": {"plan": {"step": 3}}
    }"#;

    /// Format version 1: variables and approvals only, optional fields left out.
    const VERSION_1: &str = r#"{
      "format": "synapse-mcp/workspace",
      "version": 1,
      "workspace": "older",
      "exportedAt": "2024-01-01T00:00:00.000000Z",
      "variables": [
        {"name": "v", "value": "x", "kind": "text", "type": "USER_ADD",
         "created": 5, "updated": 6, "lastVisited": 7}
      ],
      "approvals": []
    }"#;

    /// Imports into every kind of store and exports again: each store gives the same export.
    fn round_trip(text: &str) -> (Value, WorkspaceExport) {
        let original: Value = serde_json::from_str(text).unwrap();
        let parsed: WorkspaceExport = serde_json::from_str(text).unwrap();
        let exports: Vec<WorkspaceExport> = crate::store::every_store()
            .iter()
            .map(|store| {
                import(store.as_ref(), "imported", parsed.clone()).unwrap();
                export(store.as_ref(), "imported", Timestamp(0)).unwrap()
            })
            .collect();
        for other in &exports[1..] {
            assert_eq!(
                other, &exports[0],
                "every store exports what it imported alike"
            );
        }
        (original, exports[0].clone())
    }

    #[test]
    fn a_version_2_export_imports_and_exports_again_field_for_field() {
        let (original, exported) = round_trip(VERSION_2);

        let mut expected = original["variables"].as_array().unwrap().clone();
        expected.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        // Same fields, same order, same values: the file format did not change.
        assert_eq!(
            serde_json::to_string(&exported.variables).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        assert_eq!(exported.version, 2);
        assert_eq!(exported.approvals, ["ask-once key"]);
        assert_eq!(exported.state, json!({"plan": {"step": 3}}));
    }

    #[test]
    fn a_version_1_export_imports_with_the_defaults_of_the_fields_it_lacks() {
        let (_, exported) = round_trip(VERSION_1);

        assert_eq!(
            serde_json::to_value(&exported.variables).unwrap(),
            json!([{"name": "v", "value": "x", "kind": "text", "type": "USER_ADD", "tags": [],
                    "keep": false, "created": 5, "updated": 6, "lastVisited": 7,
                    "referenceCount": 0}])
        );
        assert_eq!(exported.state, json!({}));
    }

    #[test]
    fn the_enable_switches_and_tool_switches_travel_with_the_workspace() {
        let mut text: Value = serde_json::from_str(VERSION_2).unwrap();
        text["switches"] = json!({"chat:paused.jsonl": false, "character:艾拉.png": true});
        text["toolSwitches"] = json!({"group:github": false, "tool:WriteVar": true});
        let (_, exported) = round_trip(&text.to_string());

        assert_eq!(
            exported.switches,
            BTreeMap::from([
                ("character:艾拉.png".to_owned(), true),
                ("chat:paused.jsonl".to_owned(), false)
            ])
        );
        assert_eq!(
            exported.tool_switches,
            BTreeMap::from([
                ("group:github".to_owned(), false),
                ("tool:WriteVar".to_owned(), true)
            ])
        );
    }
}
