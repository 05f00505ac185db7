//! Change notifications in both protocol eras, and the lists they point at: cached tool results
//! are neither listed nor announced, a skill save is announced once per kind, lists come in
//! pages with cursors, and a 2026-07-28 client hears about changes on `subscriptions/listen`.

use std::time::Duration;

use pretty_assertions::assert_eq;
use rmcp::model::PaginatedRequestParams;
use serde_json::{Value, json};

use crate::common::{
    Elicitation, RawSession, TestClient, call, copy_tree, is_error, manifest, spawn_binary, text,
    wait_for,
};

#[tokio::test]
async fn cached_results_are_neither_listed_nor_announced() {
    let observer = TestClient::new(Elicitation::Unsupported);
    let client = spawn_binary(&[], observer.clone()).await;
    let before = client.list_all_resources().await.unwrap();
    for _ in 0..5 {
        let listed = call(&client, "FunctionList", json!({})).await;
        assert!(!is_error(&listed), "{}", text(&listed));
    }
    let after = client.list_all_resources().await.unwrap();
    assert_eq!(after, before, "five cached results changed resources/list");
    // The cached results are still there to read, through ListVars and the var:// template.
    let listing = text(
        &call(
            &client,
            "ListVars",
            json!({"filter": {"tag": "FunctionList"}, "cached": true}),
        )
        .await,
    );
    assert!(listing.contains("FunctionList_"), "{listing}");

    // A variable the model writes is listed and announced; the five calls before it were not.
    let written = call(&client, "WriteVar", json!({"name": "marker", "value": "x"})).await;
    assert!(!is_error(&written), "{}", text(&written));
    wait_for(&observer, "resources/list_changed").await;
    let written = call(
        &client,
        "WriteVar",
        json!({"name": "marker-2", "value": "y"}),
    )
    .await;
    assert!(!is_error(&written), "{}", text(&written));
    observer.wait_for_more("resources/list_changed", 1).await;
    assert_eq!(
        observer.count("resources/list_changed"),
        2,
        "{:?}",
        observer.notifications()
    );
    let uris: Vec<String> = client
        .list_all_resources()
        .await
        .unwrap()
        .iter()
        .map(|resource| resource.uri.clone())
        .collect();
    assert!(uris.iter().any(|uri| uri == "var://marker"), "{uris:?}");
    assert_eq!(uris.len(), before.len() + 2, "{uris:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_skill_save_is_announced_once_per_kind() {
    let directory = tempfile::tempdir().unwrap();
    let root = directory.path().join("skills");
    copy_tree(&manifest("tests/fixtures/skills"), &root);
    let config = directory.path().join("config.toml");
    std::fs::write(
        &config,
        "skill_prompts = true\n[tools.SkillSave]\nexecution = \"auto\"\n",
    )
    .unwrap();
    let args = [
        "--skills".to_owned(),
        root.display().to_string(),
        "--config".to_owned(),
        config.display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let observer = TestClient::new(Elicitation::Unsupported);
    let client = spawn_binary(&args, observer.clone()).await;
    let searched = call(&client, "SkillSearch", json!({"query": "pdf"})).await;
    assert!(!is_error(&searched), "{}", text(&searched));
    // Let the watcher settle the start-up scan's own `index.json` write.
    tokio::time::sleep(Duration::from_millis(600)).await;

    let saved = call(
        &client,
        "SkillSave",
        json!({"name": "release-notes",
        "description": "Write release notes. Use when a version is tagged.",
        "body": "# Release notes", "files": {"references/template.md": "## Added\n"}}),
    )
    .await;
    assert!(!is_error(&saved), "{}", text(&saved));
    wait_for(&observer, "resources/list_changed").await;
    wait_for(&observer, "prompts/list_changed").await;
    // The watcher sees the save's files and rescans (after its debounce and a second look at
    // the new folder); that rescan finds what the save already announced.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let written = call(&client, "WriteVar", json!({"name": "marker", "value": "x"})).await;
    assert!(!is_error(&written), "{}", text(&written));
    observer.wait_for_more("resources/list_changed", 1).await;
    assert_eq!(
        (
            observer.count("resources/list_changed"),
            observer.count("prompts/list_changed")
        ),
        (2, 1),
        "one save, one marker: {:?}",
        observer.notifications()
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn lists_come_in_pages_and_unknown_cursors_are_refused() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    for index in 0..120 {
        let written = call(
            &client,
            "WriteVar",
            json!({"name": format!("page-{index:03}"), "value": "v"}),
        )
        .await;
        assert!(!is_error(&written), "{}", text(&written));
    }
    let first = client.list_resources(None).await.unwrap();
    assert_eq!(first.resources.len(), 100);
    let cursor = first.next_cursor.clone().expect("a second page");
    let second = client
        .list_resources(Some(
            PaginatedRequestParams::default().with_cursor(Some(cursor)),
        ))
        .await
        .unwrap();
    assert_eq!(second.next_cursor, None);
    let all = client.list_all_resources().await.unwrap();
    assert_eq!(first.resources.len() + second.resources.len(), all.len());
    let mut paged: Vec<&str> = first
        .resources
        .iter()
        .chain(&second.resources)
        .map(|resource| resource.uri.as_str())
        .collect();
    let listed = paged.len();
    paged.dedup();
    assert_eq!(paged.len(), listed, "no resource on two pages");
    for index in 0..120 {
        let uri = format!("var://page-{index:03}");
        assert!(paged.contains(&uri.as_str()), "{uri} missing");
    }
    client.cancel().await.unwrap();

    let mut session = RawSession::initialized(&[]).await;
    for (id, method) in [
        (1, "resources/list"),
        (2, "resources/templates/list"),
        (3, "prompts/list"),
        (4, "tools/list"),
    ] {
        session
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method,
                "params": {"cursor": "bogus"}}))
            .await;
        let answer = session.response(id).await;
        assert_eq!(answer["error"]["code"], json!(-32602), "{method}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("`bogus`"),
            "{answer}"
        );
    }
}

/// The `_meta` every 2026-07-28 request carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

#[tokio::test]
async fn a_2026_07_28_client_hears_changes_on_subscriptions_listen() {
    let mut session = RawSession::start(&[]);
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": meta()}}),
        )
        .await;
    let discovered = session.response(1).await;
    let capabilities = &discovered["result"]["capabilities"];
    assert_eq!(
        capabilities["resources"],
        json!({"subscribe": true, "listChanged": true}),
        "{discovered}"
    );

    session
        .send(
            &json!({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
            "params": {"_meta": meta(), "notifications": {
                "resourcesListChanged": true, "toolsListChanged": true,
                "resourceSubscriptions": ["var://watched", "https://example.com/nope"]}}}),
        )
        .await;
    let acknowledged = session.message().await;
    assert_eq!(
        acknowledged["method"],
        json!("notifications/subscriptions/acknowledged"),
        "{acknowledged}"
    );
    assert_eq!(
        acknowledged["params"]["notifications"],
        json!({"toolsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": ["var://watched"]}),
        "{acknowledged}"
    );

    // A cached result first: it must not be announced.
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "_meta": meta(), "name": "FunctionList", "arguments": {}}}),
        )
        .await;
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "_meta": meta(), "name": "WriteVar", "arguments": {"name": "watched", "value": "v"}}}),
        )
        .await;
    let mut seen = Vec::new();
    let mut answered = Vec::new();
    while !(answered.len() == 2
        && seen
            .iter()
            .any(|method| method == "notifications/resources/list_changed"))
    {
        let message = session.message().await;
        if let Some(id) = message.get("id") {
            assert!(message.get("error").is_none(), "{message}");
            answered.push(id.clone());
            continue;
        }
        let method = message["method"].as_str().unwrap().to_owned();
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!("listen"),
            "{message}"
        );
        if method == "notifications/resources/updated" {
            assert_eq!(message["params"]["uri"], json!("var://watched"));
        }
        seen.push(method);
    }
    assert_eq!(
        seen,
        [
            "notifications/resources/updated",
            "notifications/resources/list_changed"
        ],
        "the cached FunctionList result was announced"
    );

    // The stream closes when the client cancels it; the server goes on answering.
    session
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "listen", "reason": "done"}}),
        )
        .await;
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "_meta": meta(), "name": "ReadVar", "arguments": {"name": "watched"}}}),
        )
        .await;
    let read = session.response(4).await;
    assert_eq!(read["result"]["isError"], json!(false), "{read}");
}
