//! The workspace view (an MCP App) over stdio: the `ui://synapse/workspace` resource is listed
//! and read with the app MIME type, an empty CSP allowlist and a self-contained page under
//! 300 KB, and the tools that open it link to it with `_meta.ui.resourceUri`.

use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

use crate::common::{Elicitation, TestClient, spawn_binary};

const VIEW: &str = "ui://synapse/workspace";
const MIME: &str = "text/html;profile=mcp-app";

#[tokio::test]
async fn the_workspace_view_is_a_self_contained_app_resource() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;

    let listed = client.list_all_resources().await.unwrap();
    let entry = listed
        .iter()
        .find(|resource| resource.uri == VIEW)
        .expect("resources/list shows the workspace view");
    assert_eq!(entry.mime_type.as_deref(), Some(MIME));
    let empty_csp = json!({"connectDomains": [], "resourceDomains": []});
    let listed_meta = serde_json::to_value(&entry.meta).unwrap();
    assert_eq!(listed_meta["ui"]["csp"], empty_csp, "{listed_meta}");

    let read = client
        .read_resource(ReadResourceRequestParams::new(VIEW))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents {
        text,
        mime_type,
        meta,
        ..
    } = &read.contents[0]
    else {
        panic!("not text: {read:?}");
    };
    assert_eq!(mime_type.as_deref(), Some(MIME));
    assert_eq!(serde_json::to_value(meta).unwrap()["ui"]["csp"], empty_csp);
    assert!(text.len() < 300_000, "the page is {} bytes", text.len());
    assert_eq!(entry.size, Some(text.len() as u64));
    assert!(text.starts_with("<!doctype html>"), "{}", &text[..40]);
    // Self-contained: the stylesheet and the script are inlined, nothing is fetched.
    for linked in [
        "<link rel=\"stylesheet\"",
        "<script src",
        "http://",
        "https://",
    ] {
        assert!(!text.contains(linked), "the page refers to `{linked}`");
    }
    assert!(text.contains("ui/initialize") && text.contains("--accent"));
}

#[tokio::test]
async fn the_tools_that_open_the_view_link_to_it_and_stay_visible_to_the_model() {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(&config, "[groups]\nsnapshots = true\n").unwrap();
    let client = spawn_binary(
        &["--config", config.to_str().unwrap()],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    let linked: Vec<(String, Value)> = tools
        .iter()
        .filter_map(|tool| {
            let meta = serde_json::to_value(tool.meta.as_ref()?).unwrap();
            Some((tool.name.to_string(), meta))
        })
        .collect();
    let names: Vec<&str> = linked.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "FunctionList",
            "ListVars",
            "ReadState",
            "RunPlan",
            "SnapshotList"
        ],
        "{linked:?}"
    );
    for (name, meta) in &linked {
        assert_eq!(meta["ui"]["resourceUri"], VIEW, "{name}: {meta}");
        // No visibility: the default, seen by the model and callable by the app.
        assert!(meta["ui"].get("visibility").is_none(), "{name}: {meta}");
    }
}

#[tokio::test]
async fn a_client_without_the_app_extension_still_gets_text_from_the_view_tools() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new("ListVars"))
        .await
        .unwrap();
    let text = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<String>();
    assert!(text.contains("capacity"), "{text}");
}
