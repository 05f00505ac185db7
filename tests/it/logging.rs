//! MCP logging over stdio: `logging/setLevel` on initialize-era sessions, the server's events at
//! or above the client's level as `notifications/message` (logger = module), and no logging
//! advertised or served to 2026-07-28 clients.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::RawSession;

/// A line that does not parse but shows its id: answered `-32700`, and logged as a warning.
fn broken_line(id: i64) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\n")
        .into_bytes()
}

/// Reads up to the response with `id`, returning the log messages seen on the way.
async fn log_messages_until(session: &mut RawSession, id: i64) -> Vec<Value> {
    let mut messages = Vec::new();
    loop {
        let message = session.message().await;
        if message["id"] == json!(id) {
            return messages;
        }
        if message["method"] == json!("notifications/message") {
            messages.push(message["params"].clone());
        }
    }
}

#[tokio::test]
async fn events_at_or_above_the_clients_level_reach_it_as_log_messages() {
    let mut session = RawSession::start(&[]);
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        )
        .await;
    let initialized = session.response(0).await;
    assert_eq!(
        initialized["result"]["capabilities"]["logging"],
        json!({}),
        "{initialized}"
    );
    session
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
            "params": {"level": "error"}}),
        )
        .await;
    assert_eq!(session.response(1).await["result"], json!({}));
    // A warning below the client's level: not sent.
    session.send_bytes(&broken_line(2)).await;
    assert_eq!(session.response(2).await["error"]["code"], json!(-32700));

    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
            "params": {"level": "warning"}}),
        )
        .await;
    assert_eq!(session.response(3).await["result"], json!({}));
    session.send_bytes(&broken_line(4)).await;
    assert_eq!(session.response(4).await["error"]["code"], json!(-32700));
    // The log message is queued, so it may follow the answer: a ping after it comes later still.
    session
        .send(&json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}))
        .await;
    let mut messages = log_messages_until(&mut session, 5).await;
    for id in 6..100 {
        if !messages.is_empty() {
            break;
        }
        session
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .await;
        messages = log_messages_until(&mut session, id).await;
    }
    assert!(!messages.is_empty(), "no log message came");
    let first = &messages[0];
    assert_eq!(first["level"], json!("warning"), "{first}");
    assert_eq!(first["logger"], json!("synapse_mcp::server::transport"));
    assert_eq!(
        first["data"]["id"],
        json!("4"),
        "the warning about request 2 was below the level: {messages:?}"
    );
    assert_eq!(first["data"]["message"], json!("answered a broken request"));
}

#[tokio::test]
async fn a_2026_07_28_client_is_neither_offered_nor_served_logging() {
    let mut session = RawSession::start(&[]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": meta}}),
        )
        .await;
    let discovered = session.response(1).await;
    assert!(
        discovered["result"]["capabilities"]
            .get("logging")
            .is_none(),
        "{discovered}"
    );
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
            "params": {"_meta": meta, "level": "debug"}}),
        )
        .await;
    assert_eq!(session.response(2).await["error"]["code"], json!(-32601));
}
