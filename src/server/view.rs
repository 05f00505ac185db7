//! The workspace view: an MCP App (`io.modelcontextprotocol/ui`) served as the resource
//! `ui://synapse/workspace`, one self-contained HTML document built from `app/` by `build.rs`.
//! Tools that open it carry `_meta.ui.resourceUri`; the page reads and writes the workspace
//! by calling the ordinary tools through its host, so every call keeps its approval policy.

use rmcp::model::{MetaObject, ReadResourceResult, Resource, ResourceContents};
use serde_json::{Value, json};

use crate::tools::WORKSPACE_VIEW;

/// The MIME type of an MCP App's HTML.
pub(super) const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The built page (`app/workspace.html` with its stylesheet and script inlined).
const PAGE: &str = include_str!(concat!(env!("OUT_DIR"), "/workspace.html"));

/// `_meta.ui` of a tool whose result the view shows.
pub(super) fn tool_meta(view: &str) -> MetaObject {
    meta(json!({ "resourceUri": view }))
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
