//! What a browser front end (the SillyTavern extension, `integrations/sillytavern/`) needs of
//! the server, driven as it drives it: CORS over HTTP for the origins given with
//! `--allowed-origin` (preflights, the headers allowed and exposed, a `401` it can read, no CORS
//! for other origins or without the flag), and `SnapshotProcess` fed only the messages from the
//! newest bound floor on (`firstIndex`), which must give the indices and states of the whole
//! chat and refuse a tail it cannot trust.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{Elicitation, TestClient, spawn_binary};
use crate::http::{HttpServer, http_client, initialize};
use crate::snapshots::{ok, refused};

const PAGE: &str = "http://127.0.0.1:8000";

/// The CORS headers of a response, by name, lower-cased; absent ones left out.
fn cors_headers(response: &reqwest::Response) -> Value {
    let mut found = serde_json::Map::new();
    for name in [
        "access-control-allow-origin",
        "access-control-allow-methods",
        "access-control-allow-headers",
        "access-control-expose-headers",
        "access-control-max-age",
        "vary",
    ] {
        if let Some(value) = response.headers().get(name) {
            found.insert(name.to_owned(), json!(value.to_str().unwrap()));
        }
    }
    Value::Object(found)
}

async fn preflight(server: &HttpServer, origin: &str) -> (u16, Value) {
    let response = http_client()
        .request(reqwest::Method::OPTIONS, server.url("/mcp"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type,mcp-protocol-version,mcp-session-id",
        )
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), cors_headers(&response))
}

async fn initialize_from(
    server: &HttpServer,
    origin: &str,
    token: Option<&str>,
) -> reqwest::Response {
    let mut request = http_client()
        .post(server.url("/mcp"))
        .header("origin", origin)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn an_allowed_origin_gets_cors_on_preflights_answers_and_refusals() {
    let server = HttpServer::start(&[
        "--allowed-origin",
        PAGE,
        "--allowed-origin",
        "http://localhost:*",
    ])
    .await;
    let token = server.token("tavern", &["rp"], false);

    let (status, headers) = preflight(&server, PAGE).await;
    assert_eq!(
        (status, headers),
        (
            204,
            json!({
                "access-control-allow-origin": PAGE,
                "access-control-allow-methods": "GET, POST, DELETE",
                "access-control-allow-headers": "Authorization, Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID",
                "access-control-expose-headers": "Mcp-Session-Id",
                "access-control-max-age": "600",
                "vary": "Origin",
            })
        )
    );
    // Any port of an origin given with `:*`.
    let (status, headers) = preflight(&server, "http://localhost:5173").await;
    assert_eq!(
        (status, &headers["access-control-allow-origin"]),
        (204, &json!("http://localhost:5173"))
    );

    let opened = initialize_from(&server, PAGE, Some(&token)).await;
    assert_eq!(opened.status().as_u16(), 200);
    assert!(opened.headers().contains_key("mcp-session-id"));
    assert_eq!(
        cors_headers(&opened),
        json!({
            "access-control-allow-origin": PAGE,
            "access-control-expose-headers": "Mcp-Session-Id",
            "vary": "Origin",
        })
    );

    // A wrong token: the page can read the 401 and tell it from a server that is down.
    let refused = initialize_from(&server, PAGE, Some("syn_wrong")).await;
    assert_eq!(refused.status().as_u16(), 401);
    assert_eq!(
        cors_headers(&refused)["access-control-allow-origin"],
        json!(PAGE)
    );

    // Another origin: no CORS, and the Origin check refuses its calls.
    let (_, headers) = preflight(&server, "http://evil.example").await;
    assert_eq!(headers, json!({}));
    let other = initialize_from(&server, "http://evil.example", Some(&token)).await;
    assert_eq!(
        (other.status().as_u16(), cors_headers(&other)),
        (403, json!({}))
    );
    let near = initialize_from(&server, "http://127.0.0.1:8001", Some(&token)).await;
    assert_eq!(
        (near.status().as_u16(), cors_headers(&near)),
        (403, json!({}))
    );
}

#[tokio::test]
async fn without_allowed_origins_loopback_pages_may_call_but_get_no_cors() {
    let server = HttpServer::start(&[]).await;
    let token = server.token("tavern", &["rp"], false);
    let (status, headers) = preflight(&server, PAGE).await;
    assert_eq!(headers, json!({}));
    assert_ne!(status, 204);
    let opened = initialize_from(&server, PAGE, Some(&token)).await;
    assert_eq!(
        (opened.status().as_u16(), cors_headers(&opened)),
        (200, json!({}))
    );
}

fn reply(text: &str, bound: Option<&str>) -> Value {
    let info = bound.map_or_else(|| json!({}), |id| json!({"st_var_system_snapshot_id": id}));
    json!({"is_user": false, "mes": text, "swipe_id": 0, "swipes_info": [info]})
}

fn said(text: &str) -> Value {
    json!({"is_user": true, "mes": text})
}

fn binding(result: &Value, at: usize) -> String {
    result["bindings"][at]["snapshotId"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_chat_sent_from_its_newest_bound_floor_gives_the_whole_chats_answer() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let first = vec![
        reply("Hello, traveller.", None),
        said("Fight!"),
        reply(r#"You are hit. @.SET("hero.hp", 5);"#, None),
    ];
    let whole = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "tavern", "messages": first}),
    )
    .await;
    assert_eq!(whole["vs_stat_data"], json!({"hero": {"hp": 5}}));
    let floor_two = binding(&whole, 1);

    // The next reply: the extension sends message 2 (bound), the user's message and the reply.
    let tail = vec![
        reply(r#"You are hit. @.SET("hero.hp", 5);"#, Some(&floor_two)),
        said("Drink the potion."),
        reply(r#"@.ADD("hero.hp", 3);"#, None),
    ];
    let result = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "tavern", "firstIndex": 2, "messages": tail}),
    )
    .await;
    let new_id = binding(&result, 0);
    assert_eq!(
        result,
        json!({
            "bindings": [{"messageIndex": 4, "swipeId": 0, "snapshotId": new_id}],
            "dropped": [],
            "base": {"kind": "snapshot", "messageIndex": 2, "snapshotId": floor_two},
            "latestSnapshotId": new_id,
            "vs_stat_data": {"hero": {"hp": 8}},
            "errors": [],
            "storage": result["storage"],
        })
    );
    let stored = ok(&client, "SnapshotGet", json!({"id": new_id})).await;
    assert_eq!(
        (&stored["messageId"], &stored["snapshot"]),
        (&json!(4), &json!({"hero": {"hp": 8}}))
    );

    // Nothing new: the anchor alone answers its state and stores nothing.
    let again = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "tavern", "firstIndex": 4, "messages": [reply("@.ADD(\"hero.hp\", 3);", Some(&new_id))]}),
    )
    .await;
    assert_eq!(
        (
            &again["bindings"],
            &again["vs_stat_data"],
            &again["storage"]["snapshots"]
        ),
        (&json!([]), &json!({"hero": {"hp": 8}}), &json!(0))
    );

    // A tail with no stored anchor cannot be trusted: the whole chat is asked for.
    let unanchored = refused(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "tavern", "firstIndex": 2, "messages": [reply("x", Some("not-stored")), said("y"), reply("z", None)]}),
    )
    .await;
    assert!(
        unanchored.contains("no AI message among those given from firstIndex 2 is bound to a stored snapshot: send the whole chat (firstIndex 0)"),
        "{unanchored}"
    );
    // A message deleted before the anchor moved it from floor 2 to 1: refused, nothing stored.
    let moved = refused(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "tavern", "firstIndex": 1, "messages": [reply("hit", Some(&floor_two)), said("y"), reply("@.SET(\"hero.hp\", 1);", None)]}),
    )
    .await;
    assert!(
        moved.contains(&format!(
            "snapshot {floor_two}, bound to message 1, was made for message 2"
        )),
        "{moved}"
    );
    let floors = ok(&client, "SnapshotList", json!({"chatFile": "tavern"})).await;
    let listed: Vec<_> = floors["floors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|floor| floor["messageIndex"].clone())
        .collect();
    assert_eq!(listed, vec![json!(0), json!(2), json!(4)]);
}
