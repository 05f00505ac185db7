//! MCP logging over stdio: `logging/setLevel` on initialize-era sessions, the server's events at
//! or above the client's level as `notifications/message` (logger = module), and on 2026-07-28
//! the level asked per request in `_meta`, whose messages come before the request's answer.

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
    let initialized = session.initialize().await;
    assert_eq!(
        initialized["result"]["capabilities"]["logging"],
        json!({}),
        "{initialized}"
    );

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

/// The `_meta` of a 2026-07-28 request, asking for log messages at `level` when given.
fn meta_2026(level: Option<&str>) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let Some(level) = level {
        meta["io.modelcontextprotocol/logLevel"] = json!(level);
    }
    meta
}

#[tokio::test]
async fn a_2026_07_28_request_gets_the_log_messages_of_its_level_before_its_answer() {
    let mut session = RawSession::start(&[]);
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": meta_2026(None)}}),
        )
        .await;
    let discovered = session.response(1).await;
    assert_eq!(
        discovered["result"]["capabilities"]["logging"],
        json!({}),
        "{discovered}"
    );

    session
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
            "params": {"_meta": meta_2026(Some("debug"))}}))
        .await;
    let messages = log_messages_until(&mut session, 2).await;
    let handling = messages
        .iter()
        .find(|message| message["data"]["message"] == json!("handling a request"))
        .unwrap_or_else(|| panic!("no debug message before the answer: {messages:?}"));
    assert_eq!(
        handling,
        &json!({"level": "debug", "logger": "synapse_mcp::server::logging",
            "data": {"message": "handling a request", "method": "tools/list", "id": "2"}})
    );

    // At `info`, the debug event of the same request is below the level.
    session
        .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
            "params": {"_meta": meta_2026(Some("info"))}}))
        .await;
    let messages = log_messages_until(&mut session, 3).await;
    assert!(
        messages
            .iter()
            .all(|message| message["level"] != json!("debug")),
        "{messages:?}"
    );

    // Without the key, nothing: a ping after it shows no message was left queued either.
    session
        .send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list",
            "params": {"_meta": meta_2026(None)}}))
        .await;
    session
        .send(&json!({"jsonrpc": "2.0", "id": 5, "method": "ping",
            "params": {"_meta": meta_2026(None)}}))
        .await;
    let mut messages = log_messages_until(&mut session, 4).await;
    messages.extend(log_messages_until(&mut session, 5).await);
    assert_eq!(messages, Vec::<Value>::new());
}

#[tokio::test]
async fn logging_set_level_is_not_a_2026_07_28_method_and_sets_no_level() {
    let mut session = RawSession::start(&[]);
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
            "params": {"_meta": meta_2026(None), "level": "debug"}}),
        )
        .await;
    assert_eq!(session.response(1).await["error"]["code"], json!(-32601));
    // No level was set: a request that does not ask for one gets no log message.
    session
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
            "params": {"_meta": meta_2026(None)}}))
        .await;
    session
        .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping",
            "params": {"_meta": meta_2026(None)}}))
        .await;
    let mut messages = log_messages_until(&mut session, 2).await;
    messages.extend(log_messages_until(&mut session, 3).await);
    assert_eq!(messages, Vec::<Value>::new());
}

#[tokio::test]
async fn the_client_log_carries_only_the_servers_own_events() {
    let directory = tempfile::tempdir().unwrap();
    let root = directory.path().join("skills");
    crate::common::write_skill(&root, "first", "The first skill.", "# First");
    let root_text = root.display().to_string();
    let mut session = RawSession::start(&["--skills", &root_text]);
    session.initialize().await;
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
            "params": {"level": "debug"}}),
        )
        .await;
    let mut messages = log_messages_until(&mut session, 1).await;
    // The watch starts once the first scan is done: a search waits for that scan.
    session
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "SkillSearch", "arguments": {"query": "first"}}}))
        .await;
    messages.extend(log_messages_until(&mut session, 2).await);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // A skill added on disk: the watcher's own crates (notify, mio) log every event they see.
    crate::common::write_skill(&root, "second", "The second skill.", "# Second");
    let rescanned = |messages: &[Value]| {
        messages.iter().any(|message| {
            message["data"]["message"]
                .as_str()
                .is_some_and(|text| text.starts_with("2 skills ready"))
        })
    };
    for id in 3..200 {
        if rescanned(&messages) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        session
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .await;
        messages.extend(log_messages_until(&mut session, id).await);
    }
    assert!(
        rescanned(&messages),
        "the rescan was not logged: {messages:?}"
    );
    let foreign: Vec<&Value> = messages
        .iter()
        .filter(|message| {
            let logger = message["logger"].as_str().unwrap_or_default();
            !(logger == "synapse_mcp" || logger.starts_with("synapse_mcp::"))
                || message.to_string().contains(".cargo/registry")
        })
        .collect();
    assert_eq!(
        foreign,
        Vec::<&Value>::new(),
        "of {} messages",
        messages.len()
    );
}
