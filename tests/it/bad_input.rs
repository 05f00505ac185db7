//! Hostile and broken input over stdio: every request gets a clear answer (or, for lines that
//! are not JSON-RPC at all, is skipped as JSON-RPC allows) and the server keeps serving.

use pretty_assertions::assert_eq;
use serde_json::json;

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
async fn unparsable_requests_with_an_id_get_a_parse_error_for_that_id() {
    let mut session = RawSession::initialized(&[]).await;
    let depth = 100_000;
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"Echo\",\"arguments\":{{\"x\":{}{}}}}}}}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    session.send_bytes(deep.as_bytes()).await;
    let nested = session.response(1).await;
    assert_eq!(nested["error"]["code"], json!(-32700), "{nested}");
    assert!(
        nested["error"]["message"]
            .as_str()
            .unwrap()
            .contains("recursion limit exceeded"),
        "{nested}"
    );

    session
        .send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"ReadVar\",\"arguments\":{\"name\":\"\xff\xfe\"}}}\n")
        .await;
    let invalid_utf8 = session.response(2).await;
    assert_eq!(
        invalid_utf8["error"]["code"],
        json!(-32700),
        "{invalid_utf8}"
    );
    still_serving(&mut session, 3).await;
}

#[tokio::test]
async fn a_request_of_the_wrong_shape_gets_invalid_request_for_its_id() {
    let mut session = RawSession::initialized(&[]).await;
    session
        .send(&json!({"jsonrpc": "2.0", "id": "shape", "method": "tools/call", "params": "not an object"}))
        .await;
    let answer = session.response_to(&json!("shape")).await;
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    still_serving(&mut session, 1).await;
}

#[tokio::test]
async fn lines_that_are_not_json_rpc_are_skipped_and_serving_goes_on() {
    let mut session = RawSession::initialized(&[]).await;
    session.send_bytes(b"this is not json\n").await;
    session.send_bytes(b"\xc3\x28 garbage\n").await;
    session.send_bytes(b"\n\r\n").await;
    session
        .send_bytes(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown\"}\n")
        .await;
    // Every line the server wrote was JSON-RPC (RawSession::response checks each one) and it
    // still answers.
    still_serving(&mut session, 1).await;
    let answered = session
        .call(2, "WriteVar", json!({"name": "after", "value": "ok"}))
        .await;
    assert_eq!(
        answered["result"]["structuredContent"]["created"],
        json!(true)
    );
}

#[tokio::test]
async fn a_request_longer_than_the_line_limit_is_answered_not_lost() {
    let mut session = RawSession::initialized(&[]).await;
    let limit = synapse_mcp::server::transport::MAX_LINE_BYTES;
    let mut line = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"WriteVar","arguments":{"name":"huge","value":""#.to_vec();
    line.resize(line.len() + limit, b'x');
    line.extend_from_slice(b"\"}}}\n");
    session.send_bytes(&line).await;
    let answer = session.response(9).await;
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line limit"),
        "{answer}"
    );
    still_serving(&mut session, 10).await;
}
