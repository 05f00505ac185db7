//! The workspace view: an MCP App (`io.modelcontextprotocol/ui`) served as the resource
//! `ui://synapse/workspace`, one self-contained HTML document built from `app/` by `build.rs`.
//! Tools that open it carry `_meta.ui.resourceUri`; the page reads and writes the workspace
//! by calling the ordinary tools through its host, so every call keeps its approval policy.
//! Its own tools (`AppWriteVar`) carry `_meta.ui.visibility: ["app"]` and reach only a client
//! that declares the extension ([`audience`]).

use rmcp::model::{ClientCapabilities, MetaObject, ReadResourceResult, Resource, ResourceContents};
use serde_json::{Value, json};

use crate::tools::{Audience, ToolDefinition, Visibility, WORKSPACE_VIEW};

/// The MCP Apps extension, as clients declare it in their capabilities.
const APPS_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an MCP App's HTML.
pub(super) const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The built page (`app/workspace.html` with its stylesheet and script inlined).
const PAGE: &str = include_str!(concat!(env!("OUT_DIR"), "/workspace.html"));

/// Whose tools a request may reach: a client that declares the extension renders apps, and
/// its host keeps the views' own tools from its model; any other client gets the model's.
pub(super) fn audience(capabilities: Option<&ClientCapabilities>) -> Audience {
    let renders_apps = capabilities
        .and_then(|capabilities| capabilities.extensions.as_ref())
        .is_some_and(|extensions| extensions.contains_key(APPS_EXTENSION));
    if renders_apps {
        Audience::ModelAndViews
    } else {
        Audience::Model
    }
}

/// `_meta.ui` of a tool whose result the view shows (`resourceUri`), or that only the views
/// call (`visibility: ["app"]`); `None` for any other tool.
pub(super) fn tool_meta(definition: &ToolDefinition) -> Option<MetaObject> {
    let mut ui = serde_json::Map::new();
    if let Some(view) = definition.view {
        ui.insert("resourceUri".to_owned(), json!(view));
    }
    if definition.visibility == Visibility::App {
        ui.insert("visibility".to_owned(), json!(["app"]));
    }
    (!ui.is_empty()).then(|| meta(Value::Object(ui)))
}

/// `_meta.ui` of the resource: it loads nothing from the network (an empty CSP allowlist) and
/// looks best with the host's border.
fn resource_meta() -> MetaObject {
    meta(json!({
        "csp": { "connectDomains": [], "resourceDomains": [] },
        "prefersBorder": true,
    }))
}

fn meta(ui: Value) -> MetaObject {
    let mut object = serde_json::Map::new();
    object.insert("ui".to_owned(), ui);
    MetaObject(object)
}

/// The view's `resources/list` entry.
pub(super) fn resource() -> Resource {
    Resource::new(WORKSPACE_VIEW, "workspace")
        .with_title("Workspace")
        .with_description("Browse variables and edit the state document (an MCP App)")
        .with_mime_type(APP_MIME_TYPE)
        .with_size(PAGE.len() as u64)
        .with_meta(resource_meta())
}

/// `resources/read` of the view, when `uri` names it.
pub(super) fn read(uri: &str) -> Option<ReadResourceResult> {
    (uri == WORKSPACE_VIEW).then(|| {
        let contents = ResourceContents::text(PAGE, uri)
            .with_mime_type(APP_MIME_TYPE)
            .with_meta(resource_meta());
        ReadResourceResult::new(vec![contents])
    })
}
