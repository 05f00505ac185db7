//! Hostile and broken input over stdio: every request gets a clear answer (or, for lines that
//! are not JSON-RPC at all, is skipped as JSON-RPC allows) and the server keeps serving.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{RawSession, assert_golden};

async fn still_serving(session: &mut RawSession, id: i64) {
    let answer = session.call(id, "ListVars", json!({})).await;
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
}

#[tokio::test]
async fn unknown_tools_and_wrong_argument_types_get_clear_answers() {
    let mut session = RawSession::initialized(&[]).await;
    let unknown = session.call(1, "NoSuchTool", json!({})).await;
    assert_eq!(unknown["error"]["code"], json!(-32602), "{unknown}");
    let wrong = session.call(2, "ReadVar", json!({"name": 42})).await;
    assert_eq!(wrong["result"]["isError"], json!(true), "{wrong}");
    let extra = session
        .call(3, "ReadVar", json!({"name": "x", "colour": "red"}))
        .await;
    assert_golden(
        "tests/golden/bad_input/unknown-tool-and-wrong-arguments.json",
        &json!([unknown, wrong, extra]),
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
    assert_golden("tests/golden/bad_input/too-deep-to-parse.json", &nested);

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
    assert_golden("tests/golden/bad_input/over-the-line-limit.json", &answer);
    still_serving(&mut session, 10).await;
}

/// A raw session read line by line, keeping each answer's `id` as the exact text the server
/// wrote (a JSON parser would turn a 60-digit id into a float and hide the difference).
struct Wire {
    _child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
}

impl Wire {
    /// A session over the real binary after `initialize`, announcing these client capabilities.
    async fn start(args: &[&str], capabilities: serde_json::Value) -> Self {
        let mut session = RawSession::start(args);
        session
            .send(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": capabilities,
                "clientInfo": {"name": "wire", "version": "1"}}}),
            )
            .await;
        session.response(0).await;
        session
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        let (child, stdin, stdout) = session.split();
        Self {
            _child: child,
            stdin,
            stdout,
        }
    }

    async fn send(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next line the server writes.
    async fn line(&mut self) -> String {
        use tokio::io::AsyncBufReadExt;
        let mut line = String::new();
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            self.stdout.read_line(&mut line),
        )
        .await
        .expect("the server answers")
        .unwrap();
        assert!(read > 0, "the server closed its output");
        line
    }

    /// Reads lines until an answer (a message without `method`) whose `id` is written exactly as
    /// `id`; every line must be JSON-RPC. Returns the parsed answer.
    async fn answer(&mut self, id: &str) -> serde_json::Value {
        loop {
            let line = self.line().await;
            if let Some(answer) = answer_with_id(&line, id) {
                return answer;
            }
        }
    }
}

/// The message on `line` when it is an answer whose `id` is written exactly as `id`.
fn answer_with_id(line: &str, id: &str) -> Option<serde_json::Value> {
    let message: std::collections::HashMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_str(line)
            .unwrap_or_else(|error| panic!("not a JSON object ({error}): {line}"));
    assert_eq!(
        message.get("jsonrpc").map(|version| version.get()),
        Some("\"2.0\""),
        "{line}"
    );
    let written = message.get("id")?.get();
    (!message.contains_key("method") && written == id).then(|| serde_json::from_str(line).unwrap())
}

/// A client sends a 60-digit id; JSON-RPC numbers have no size limit, and the answer must carry
/// the same id, or the client never matches it to its request (the `jsonrpc_lines` fuzz target
/// found the id coming back as `8.888888888888889e59`).
#[tokio::test]
async fn ids_come_back_exactly_as_sent_integers_of_any_size_included() {
    let mut wire = Wire::start(&[], json!({})).await;
    let sixty = format!("{}1", "8".repeat(59));
    wire.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{sixty},"method":"rs/read","params":{{"uri":"var://a"}}}}"#
    ))
    .await;
    let unknown = wire.answer(&sixty).await;
    assert_eq!(unknown["error"]["code"], json!(-32601), "{unknown}");
    for id in [
        "123456789012345678901234567890",
        "-9223372036854775809",
        "1.5",
        "1e2",
        "2.50",
    ] {
        wire.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
            .await;
        let pong = wire.answer(id).await;
        assert_eq!(pong["result"], json!({}), "{id}: {pong}");
    }
    wire.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{sixty}0,"method":"tools/call","params":{{"name":"WriteVar","arguments":{{"name":"big-id","value":"kept"}}}}}}"#
    ))
    .await;
    let written = wire.answer(&format!("{sixty}0")).await;
    assert_eq!(written["result"]["isError"], json!(false), "{written}");
    wire.send(r#"{"jsonrpc":"2.0","id":"\u0041","method":"ping"}"#)
        .await;
    let escaped = wire.answer(r#""\u0041""#).await;
    assert_eq!(escaped["result"], json!({}), "{escaped}");
}

/// Two requests in flight with one id: rmcp kept one slot per id, so the second replaced the
/// first and only one was ever answered. Now the second is refused at once, with its id, and
/// the first still gets its own answer. The first is held in flight by an approval question.
#[tokio::test]
async fn a_second_request_reusing_an_id_in_flight_is_refused_and_both_are_answered() {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(&config, "[tools.WriteVar]\nexecution = \"ask-always\"\n").unwrap();
    let mut wire = Wire::start(
        &["--config", config.to_str().unwrap()],
        json!({"elicitation": {}}),
    )
    .await;
    wire.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"WriteVar","arguments":{"name":"held","value":"v"}}}"#)
        .await;
    let question = loop {
        let line = wire.line().await;
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if message["method"] == json!("elicitation/create") {
            break message;
        }
    };
    wire.send(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#)
        .await;
    let refused = wire.answer("5").await;
    assert_eq!(refused["error"]["code"], json!(-32600), "{refused}");
    assert_golden("tests/golden/bad_input/id-in-flight.json", &refused);
    wire.send(
        &json!({"jsonrpc": "2.0", "id": question["id"],
            "result": {"action": "accept", "content": {"approve": true}}})
        .to_string(),
    )
    .await;
    let written = wire.answer("5").await;
    assert_eq!(written["result"]["isError"], json!(false), "{written}");
    // Once answered, the id is free again.
    wire.send(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#)
        .await;
    assert_eq!(wire.answer("5").await["result"], json!({}));
}

/// A known method whose params have the wrong type fell through to rmcp's catch-all request and
/// was answered "Method not found"; the method exists, its params are what is wrong.
#[tokio::test]
async fn known_methods_with_params_of_the_wrong_type_get_invalid_params() {
    let mut wire = Wire::start(&[], json!({})).await;
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ListVars","arguments":[1,2]}}"#,
            "arguments",
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}"#,
            "integer `5`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"resources/read"}"#,
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":["tool-rules"]}}"#,
            "sequence",
        ),
    ];
    let mut answers = Vec::new();
    for (index, (line, named)) in cases.iter().enumerate() {
        wire.send(line).await;
        let answer = wire.answer(&(index + 1).to_string()).await;
        assert_eq!(answer["error"]["code"], json!(-32602), "{line}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        let method = serde_json::from_str::<serde_json::Value>(line).unwrap()["method"].clone();
        assert!(
            message.contains(method.as_str().unwrap()) && message.contains(named),
            "{line}: {message}"
        );
        answers.push(answer);
    }
    assert_golden("tests/golden/bad_input/wrong-params.json", &json!(answers));
    wire.send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ListVars","arguments":{}}}"#)
        .await;
    assert_eq!(wire.answer("9").await["result"]["isError"], json!(false));
}

/// Requests whose id is null, an object, a boolean or an array were dropped without a word:
/// JSON-RPC answers an invalid request with `"id": null`.
#[tokio::test]
async fn requests_with_an_id_of_the_wrong_type_are_answered_with_a_null_id() {
    let mut wire = Wire::start(&[], json!({})).await;
    for id in ["null", "{\"n\":1}", "true", "[1]"] {
        wire.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
            .await;
        let answer = wire.answer("null").await;
        assert_eq!(answer["error"]["code"], json!(-32600), "{id}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("number or a string"), "{id}: {message}");
    }
    wire.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .await;
    assert_eq!(wire.answer("1").await["result"], json!({}));
}

/// A batch (a JSON array of requests) was dropped without a word. This server does not take
/// batches (MCP removed them in 2025-06-18); each request in one gets an error with its id, in
/// one array as JSON-RPC answers batches, and an empty batch gets one error with a null id.
#[tokio::test]
async fn batches_are_answered_with_an_error_for_each_request() {
    let mut wire = Wire::start(&[], json!({})).await;
    wire.send(r#"[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"tools/list"}]"#)
        .await;
    let batch = loop {
        let line = wire.line().await;
        if line.starts_with('[') {
            break serde_json::from_str::<serde_json::Value>(&line).unwrap();
        }
    };
    let answers = batch.as_array().unwrap();
    let ids: Vec<&serde_json::Value> = answers.iter().map(|answer| &answer["id"]).collect();
    assert_eq!(ids, [&json!(8), &json!("b")], "{batch}");
    for answer in answers {
        assert_eq!(answer["jsonrpc"], json!("2.0"), "{batch}");
        assert_eq!(answer["error"]["code"], json!(-32600), "{batch}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("one line each"),
            "{batch}"
        );
    }
    wire.send("[]").await;
    let empty = wire.answer("null").await;
    assert_eq!(empty["error"]["code"], json!(-32600), "{empty}");
    wire.send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#)
        .await;
    assert_eq!(wire.answer("9").await["result"], json!({}));
}

/// Requests beyond the in-flight limit wait until one in flight is answered: a client that
/// pipelines 100,000 requests no longer makes the server work on them all (about 10 KB each) at
/// once. Everything the client wrote is already in the pipe here, so a receive that does not
/// complete at once is waiting for an answer to go out, not for input.
#[tokio::test]
async fn requests_beyond_the_limit_wait_until_one_in_flight_is_answered() {
    use futures::FutureExt;
    use rmcp::model::{ServerJsonRpcMessage, ServerResult};
    use rmcp::transport::Transport;
    use synapse_mcp::server::transport::{LineTransport, MAX_IN_FLIGHT};
    use tokio::io::AsyncWriteExt;

    let (server_input, mut client_output) = tokio::io::duplex(1 << 20);
    let (server_output, _client_input) = tokio::io::duplex(1 << 20);
    let mut transport = LineTransport::new(server_input, server_output);
    for id in 0..=MAX_IN_FLIGHT {
        client_output
            .write_all(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes(),
            )
            .await
            .unwrap();
    }
    let mut ids = Vec::new();
    for _ in 0..MAX_IN_FLIGHT {
        let message = Transport::<rmcp::RoleServer>::receive(&mut transport)
            .await
            .expect("a request");
        let (_, id) = message.into_request().expect("a request");
        ids.push(id);
    }
    let waiting =
        tokio::task::unconstrained(Transport::<rmcp::RoleServer>::receive(&mut transport))
            .now_or_never();
    assert!(
        waiting.is_none(),
        "a request beyond the limit was read while {MAX_IN_FLIGHT} were in flight"
    );
    Transport::<rmcp::RoleServer>::send(
        &mut transport,
        ServerJsonRpcMessage::response(ServerResult::empty(()), ids.remove(0)),
    )
    .await
    .unwrap();
    let next = Transport::<rmcp::RoleServer>::receive(&mut transport)
        .await
        .expect("the next request once one is answered");
    assert!(next.into_request().is_some());
}

/// With the limit reached, requests read wait in the transport, but a cancellation behind them
/// still reaches the server at once (it frees a place, and the waiting request goes next), and a
/// request cancelled while it waited is never started.
#[tokio::test]
async fn a_cancellation_gets_through_while_the_limit_is_reached() {
    use rmcp::model::{ClientNotification, ServerJsonRpcMessage, ServerResult};
    use rmcp::transport::Transport;
    use synapse_mcp::server::transport::{LineTransport, MAX_IN_FLIGHT};
    use tokio::io::AsyncWriteExt;

    let (server_input, mut client_output) = tokio::io::duplex(1 << 20);
    let (server_output, _client_input) = tokio::io::duplex(1 << 20);
    let mut transport = LineTransport::new(server_input, server_output);
    for id in 0..MAX_IN_FLIGHT + 2 {
        client_output
            .write_all(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes(),
            )
            .await
            .unwrap();
    }
    let waiting = MAX_IN_FLIGHT + 1;
    for id in [0, waiting] {
        client_output
            .write_all(format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id}}}}}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut started = Vec::new();
    for _ in 0..MAX_IN_FLIGHT {
        let message = Transport::<rmcp::RoleServer>::receive(&mut transport)
            .await
            .unwrap();
        started.push(message.into_request().expect("a request").1);
    }
    let cancellation = |message: rmcp::service::RxJsonRpcMessage<rmcp::RoleServer>| {
        let Some(ClientNotification::CancelledNotification(cancellation)) =
            message.into_notification()
        else {
            panic!("a cancellation")
        };
        cancellation.params.request_id
    };
    // The cancellation of request 0 is read past the two waiting requests.
    let message = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        Transport::<rmcp::RoleServer>::receive(&mut transport),
    )
    .await
    .expect("input is still read while the limit is reached")
    .unwrap();
    assert_eq!(cancellation(message), Some(started.remove(0)));
    // Its place goes to the first request that waited.
    let message = Transport::<rmcp::RoleServer>::receive(&mut transport)
        .await
        .unwrap();
    started.push(message.into_request().expect("the request that waited").1);
    // The other is cancelled while it waits; given a place, it is dropped, not started.
    let message = Transport::<rmcp::RoleServer>::receive(&mut transport)
        .await
        .unwrap();
    assert!(cancellation(message).is_some());
    Transport::<rmcp::RoleServer>::send(
        &mut transport,
        ServerJsonRpcMessage::response(ServerResult::empty(()), started.remove(0)),
    )
    .await
    .unwrap();
    drop(client_output);
    assert!(
        Transport::<rmcp::RoleServer>::receive(&mut transport)
            .await
            .is_none(),
        "the request cancelled while it waited was started"
    );
}

/// Pipelining thousands of requests while reading the answers: every one is answered once, in
/// spite of the in-flight limit holding the input back.
#[tokio::test]
async fn thousands_of_pipelined_requests_are_each_answered_once() {
    use tokio::io::AsyncWriteExt;
    let count = 3_000;
    let mut wire = Wire::start(&[], json!({})).await;
    let mut stdin = wire.stdin;
    let writer = tokio::spawn(async move {
        for id in 0..count {
            let line = if id % 2 == 0 {
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")
            } else {
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"ListVars\",\"arguments\":{{}}}}}}\n"
                )
            };
            stdin.write_all(line.as_bytes()).await.unwrap();
        }
        stdin
    });
    let mut answered = vec![0_u32; count];
    let mut remaining = count;
    while remaining > 0 {
        let line = {
            use tokio::io::AsyncBufReadExt;
            let mut line = String::new();
            let read = tokio::time::timeout(
                std::time::Duration::from_mins(1),
                wire.stdout.read_line(&mut line),
            )
            .await
            .expect("answers keep coming")
            .unwrap();
            assert!(read > 0, "the server closed its output");
            line
        };
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = message["id"].as_u64() {
            let id = usize::try_from(id).unwrap();
            assert!(message.get("error").is_none(), "{message}");
            answered[id] += 1;
            assert_eq!(answered[id], 1, "id {id} answered twice");
            remaining -= 1;
        }
    }
    writer.await.unwrap();
}
