//! Hostile and broken input over stdio: every request gets a clear answer (or, for lines that
//! are not JSON-RPC at all, is skipped as JSON-RPC allows) and the server keeps serving.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::RawSession;

async fn still_serving(session: &mut RawSession, id: i64) {
    let answer = session.call(id, "ListVars", json!({})).await;
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
}

#[tokio::test]
async fn unknown_tools_and_wrong_argument_types_get_clear_answers() {
    let mut session = RawSession::initialized(&[]).await;
    let unknown = session.call(1, "NoSuchTool", json!({})).await;
    assert_eq!(unknown["error"]["code"], json!(-32602), "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("NoSuchTool")
    );
    let wrong = session.call(2, "ReadVar", json!({"name": 42})).await;
    assert_eq!(wrong["result"]["isError"], json!(true), "{wrong}");
    let message = wrong["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        message.starts_with("invalid arguments for ReadVar: invalid type: integer `42`"),
        "{message}"
    );
    let extra = session
        .call(3, "ReadVar", json!({"name": "x", "colour": "red"}))
        .await;
    assert!(
        extra["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("unknown field `colour`"),
        "{extra}"
    );
    still_serving(&mut session, 4).await;
}

#[tokio::test]
async fn a_ten_megabyte_argument_is_stored_and_read_back() {
    let mut session = RawSession::initialized(&[]).await;
    let big = "é".repeat(5 * 1024 * 1024);
    let written = session
        .call(1, "WriteVar", json!({"name": "big", "value": big}))
        .await;
    assert_eq!(
        written["result"]["structuredContent"]["length"],
        json!(5 * 1024 * 1024),
        "{}",
        &written.to_string()[..200.min(written.to_string().len())]
    );
    let tail = session
        .call(
            2,
            "ReadVar",
            json!({"name": "big", "start": 5 * 1024 * 1024 - 3}),
        )
        .await;
    assert!(
        tail["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("\nééé")
    );
    still_serving(&mut session, 3).await;
}

#[tokio::test]
async fn deeply_nested_json_non_json_and_invalid_utf8_lines_do_not_stop_the_server() {
    let mut session = RawSession::initialized(&[]).await;
    let depth = 100_000;
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"Echo\",\"arguments\":{{\"x\":{}{}}}}}}}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    session.send_bytes(deep.as_bytes()).await;
    session.send_bytes(b"this is not json\n").await;
    session.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"ReadVar\",\"arguments\":{\"name\":\"\xff\xfe\"}}}\n").await;
    session.send_bytes(b"\xc3\x28 garbage\n").await;
    still_serving(&mut session, 3).await;
    // Whatever the server made of the broken lines, everything it wrote was JSON-RPC
    // (RawSession::response checks every line) and it still answers.
    let answered: Value = session
        .call(4, "WriteVar", json!({"name": "after", "value": "ok"}))
        .await;
    assert_eq!(
        answered["result"]["structuredContent"]["created"],
        json!(true)
    );
}
