//! The one error decision (`src/tools/errors.rs`), driven over the protocol as a client drives
//! it: a caller's mistake is a tool result with `isError: true` and the domain's message; a
//! failure of the real SQLite store (filled up to its `store_max_bytes`) is JSON-RPC `-32603`,
//! for the vars and the snapshots tools alike, and loses nothing acknowledged.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::RawSession;

/// JSON-RPC's internal error.
const INTERNAL_ERROR: i64 = -32603;

/// A server on `directory` whose store may hold 256 KiB, so that it fills up quickly.
async fn small_store(directory: &Path) -> RawSession {
    let config = directory.join("config.toml");
    std::fs::write(&config, "store_max_bytes = 262144\n").unwrap();
    let data = directory.join("data").display().to_string();
    let config = config.display().to_string();
    RawSession::initialized(&["--data-dir", &data, "--config", &config]).await
}

/// 20,000 characters that differ from call to call (the store keeps one copy of equal values).
fn filler(index: usize) -> String {
    (0..20_000)
        .map(|offset| char::from(b'a' + u8::try_from((index * 7 + offset) % 26).unwrap()))
        .collect()
}

/// Calls `tool` with `arguments(index)` for index 0, 1, … until an answer is not a success;
/// returns that index and answer.
async fn call_until_failure(
    session: &mut RawSession,
    tool: &str,
    arguments: impl Fn(usize) -> Value,
) -> (usize, Value) {
    for index in 0..100 {
        let id = i64::try_from(index).unwrap() + 1_000;
        let answer = session.call(id, tool, arguments(index)).await;
        if answer["result"]["isError"] != json!(false) {
            return (index, answer);
        }
    }
    panic!("the store never filled up");
}

/// An answer that is JSON-RPC's internal error of `tool`, saying that the store is full, and
/// not where the store is (its path is the operator's business, in the log).
fn assert_store_full(answer: &Value, tool: &str) {
    assert_eq!(
        answer["error"],
        json!({
            "code": INTERNAL_ERROR,
            "message": format!(
                "`{tool}` failed: the store failed: database or disk is full: free some space \
                 (or raise store_max_bytes); nothing was changed"
            ),
        }),
        "{answer}"
    );
}

/// A tool error's text.
fn tool_error(answer: &Value) -> &str {
    assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
    answer["result"]["content"][0]["text"].as_str().unwrap()
}

#[tokio::test]
async fn a_callers_mistake_on_a_vars_tool_is_a_tool_error_with_the_message() {
    let mut session = RawSession::initialized(&[]).await;
    let unknown = session.call(1, "ReadVar", json!({"name": "nowhere"})).await;
    assert_eq!(tool_error(&unknown), "variable `nowhere` not found");
    let rule = session
        .call(
            2,
            "WriteVar",
            json!({"name": "Rule/Agent/VarRef", "value": "x"}),
        )
        .await;
    assert_eq!(
        tool_error(&rule),
        "variable `Rule/Agent/VarRef` is a rule (RULE) and cannot be changed; write to another name"
    );
    let bad_name = session
        .call(3, "WriteVar", json!({"name": "a{b}", "value": 1}))
        .await;
    assert!(
        tool_error(&bad_name).starts_with("invalid variable name `a{b}`: "),
        "{bad_name}"
    );
}

#[tokio::test]
async fn a_callers_mistake_on_a_snapshots_tool_is_a_tool_error_with_the_message() {
    let mut session = RawSession::initialized(&[]).await;
    let unknown = session
        .call(1, "SnapshotGet", json!({"id": "nowhere"}))
        .await;
    assert_eq!(
        tool_error(&unknown),
        "no snapshot `nowhere`; its chat may have been deleted (SnapshotProcess makes new ones)"
    );
    let not_an_object = session
        .call(
            2,
            "TemplateSet",
            json!({"characterId": "c", "template": [1]}),
        )
        .await;
    assert!(
        tool_error(&not_an_object).starts_with("a template must be a JSON object"),
        "{not_an_object}"
    );
}

#[tokio::test]
async fn a_store_failure_on_a_vars_tool_is_an_internal_error_and_keeps_what_was_stored() {
    let directory = tempfile::tempdir().unwrap();
    let mut session = small_store(directory.path()).await;
    let before = session
        .call(1, "WriteVar", json!({"name": "before", "value": "safe"}))
        .await;
    assert_eq!(before["result"]["isError"], json!(false), "{before}");
    let (index, failed) = call_until_failure(
        &mut session,
        "WriteVar",
        |index| json!({"name": format!("filler-{index}"), "value": filler(index)}),
    )
    .await;
    assert_store_full(&failed, "WriteVar");
    let missing = session
        .call(2, "ReadVar", json!({"name": format!("filler-{index}")}))
        .await;
    assert!(
        tool_error(&missing).contains("not found"),
        "a failed write leaves nothing behind in memory"
    );
    let kept = session.call(3, "ReadVar", json!({"name": "before"})).await;
    assert!(
        kept["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("\nsafe")
    );
    drop(session);

    let mut session = small_store(directory.path()).await;
    let listed = session
        .call(1, "ListVars", json!({"filter": {"search": "filler-"}}))
        .await;
    assert_eq!(
        listed["result"]["structuredContent"]["count"],
        json!(index),
        "what was acknowledged is still there: {listed}"
    );
}

#[tokio::test]
async fn a_store_failure_on_a_snapshots_tool_is_an_internal_error() {
    let directory = tempfile::tempdir().unwrap();
    let mut session = small_store(directory.path()).await;
    let (index, failed) = call_until_failure(&mut session, "TemplateSet", |index| {
        json!({"characterId": format!("character-{index}"), "template": {"notes": filler(index)}})
    })
    .await;
    assert_store_full(&failed, "TemplateSet");
    // What was stored before the store filled up is whole (read without the output limit).
    let first = session
        .call(
            1,
            "TemplateGet",
            json!({"characterId": "character-0", "_outputLimit": -1}),
        )
        .await;
    let notes = &first["result"]["structuredContent"]["template"]["notes"];
    assert!(
        index > 0 && *notes == json!(filler(0)),
        "the first of {index} templates is not whole"
    );
}

/// Second round, finding 12: a bad `_outputPath` or variable name was echoed whole in its error
/// (40 KB for a 40,000-character path). Now an error quotes its head.
#[tokio::test]
async fn an_error_quotes_a_long_output_path_or_name_by_its_head() {
    let mut session = RawSession::initialized(&[]).await;
    let long = "x".repeat(40_000);
    for (id, arguments) in [
        (1, json!({"name": "a", "value": "v", "_outputPath": long})),
        (
            2,
            json!({"name": "a", "value": "v", "_outputPath": format!("†var.{{{long}")}),
        ),
        (3, json!({"name": format!("{{{long}"), "value": "v"})),
    ] {
        let answer = session.call(id, "WriteVar", arguments).await;
        let message = tool_error(&answer);
        assert!(
            message.len() < 1_000,
            "{} bytes: {}",
            message.len(),
            &message[..200]
        );
    }
}
