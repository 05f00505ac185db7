//! Running the server for others (docs/operations.md): `--metrics ADDR` serves Prometheus text
//! that counts and times each method and each tool call by outcome, with method and tool names
//! as the only labels, over HTTP and over stdio (with the store's connections); `--log-format
//! json` writes one JSON object per line on stderr, each line inside a request carrying its
//! method, id, tool, workspace and principal.

use std::collections::BTreeMap;
use std::process::Stdio;

use pretty_assertions::assert_eq;
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::common::{Client, Elicitation, TestClient, binary, call, is_error, quiet_home};
use crate::http::{HttpServer, http_client};

/// `GET http://ADDRESS/metrics`, checked to be Prometheus text.
async fn scrape(address: &str) -> String {
    let response = http_client()
        .get(format!("http://{address}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let kind = response.headers()["content-type"].to_str().unwrap();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    response.text().await.unwrap()
}

/// The samples of a Prometheus text page: `name{labels}` → value.
fn samples(page: &str) -> BTreeMap<String, f64> {
    page.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (name, value) = line.rsplit_once(' ').unwrap();
            (name.to_owned(), value.parse().unwrap())
        })
        .collect()
}

/// Fails unless each sample has its value.
fn assert_samples(page: &str, expected: &[(&str, f64)]) {
    let samples = samples(page);
    for (name, value) in expected {
        assert_eq!(
            samples.get(*name),
            Some(value),
            "`{name}` in the metrics:\n{page}"
        );
    }
}

/// Principal alice's initialize-era client in workspace `research`.
async fn alice_in_research(server: &HttpServer) -> Client {
    let token = server.token("alice", &["research"], false);
    server
        .client(
            "/mcp/research",
            &token,
            TestClient::new(Elicitation::Unsupported),
        )
        .await
}

#[tokio::test]
async fn metrics_count_and_time_each_method_and_tool_by_outcome() {
    let server = HttpServer::start(&["--metrics", "127.0.0.1:0"]).await;
    let address = server.metrics.clone().expect("the server says where");
    let client = alice_in_research(&server).await;
    client.list_all_tools().await.unwrap();
    let written = call(
        &client,
        "WriteVar",
        json!({"name": "secret_topic", "value": "bees"}),
    )
    .await;
    assert!(!is_error(&written), "{written:?}");
    let missing = call(&client, "ReadVar", json!({"name": "no_such_variable"})).await;
    assert!(is_error(&missing), "{missing:?}");
    let unknown = client
        .call_tool(CallToolRequestParams::new("NoSuchTool"))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");

    let page = scrape(&address).await;
    assert_samples(
        &page,
        &[
            (
                r#"synapse_mcp_tool_calls_total{tool="WriteVar",outcome="ok"}"#,
                1.0,
            ),
            (
                r#"synapse_mcp_tool_calls_total{tool="ReadVar",outcome="tool_error"}"#,
                1.0,
            ),
            (
                r#"synapse_mcp_tool_calls_total{tool="unknown",outcome="protocol_error"}"#,
                1.0,
            ),
            (
                r#"synapse_mcp_requests_total{method="tools/call",outcome="ok"}"#,
                2.0,
            ),
            (
                r#"synapse_mcp_requests_total{method="tools/call",outcome="error"}"#,
                1.0,
            ),
            (
                r#"synapse_mcp_requests_total{method="initialize",outcome="ok"}"#,
                1.0,
            ),
            (
                r#"synapse_mcp_request_duration_seconds_count{method="tools/call"}"#,
                3.0,
            ),
            (
                r#"synapse_mcp_request_duration_seconds_bucket{method="tools/call",le="+Inf"}"#,
                3.0,
            ),
            (
                r#"synapse_mcp_tool_call_duration_seconds_count{tool="WriteVar"}"#,
                1.0,
            ),
            (
                r#"synapse_mcp_tool_call_duration_seconds_bucket{tool="ReadVar",le="+Inf"}"#,
                1.0,
            ),
            ("synapse_mcp_sessions_active", 1.0),
            ("synapse_mcp_requests_in_flight", 0.0),
            ("synapse_mcp_store_up", 1.0),
        ],
    );
    assert!(
        samples(&page)
            .get(r#"synapse_mcp_requests_total{method="tools/list",outcome="ok"}"#)
            .is_some_and(|count| *count >= 1.0),
        "{page}"
    );
    assert!(page.contains("\nprocess_resident_memory_bytes "), "{page}");
    // Nothing of the workspace, the caller or the arguments is a label.
    for private in ["research", "alice", "secret_topic", "bees", "NoSuchTool"] {
        assert!(
            !page.contains(private),
            "`{private}` in the metrics:\n{page}"
        );
    }
    client.cancel().await.unwrap();
}

/// The stderr lines of a process, as they come.
type Lines = tokio::io::Lines<BufReader<tokio::process::ChildStderr>>;

/// The next line of `lines` that contains `wanted`.
async fn line_with(lines: &mut Lines, wanted: &str) -> String {
    loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("the log ended before a line with `{wanted}`"));
        if line.contains(wanted) {
            return line;
        }
    }
}

/// One JSON log line, checked for the fields every line has.
fn json_line(line: &str) -> Value {
    let parsed: Value =
        serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: `{line}`"));
    for key in ["timestamp", "level", "target", "fields"] {
        assert!(parsed.get(key).is_some(), "no `{key}` in `{line}`");
    }
    parsed
}

#[tokio::test]
async fn stdio_with_metrics_and_json_logs_keeps_stdout_for_the_protocol() {
    let folder = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", folder.path().join("synapse.db").display());
    let mut command = tokio::process::Command::new(binary());
    command
        .env("HOME", quiet_home())
        .args(["--store", &store, "--log-format", "json"])
        .args(["--log-level", "synapse_mcp=debug,warn"])
        .args(["serve", "--metrics", "127.0.0.1:0"]);
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(stderr.unwrap()).lines();
    let announced = json_line(&line_with(&mut lines, "metrics at http://").await);
    let message = announced["fields"]["message"].as_str().unwrap();
    let address = message
        .split_once("http://")
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    // The client talks over stdout: JSON logs on it would break the session.
    let client = TestClient::new(Elicitation::Unsupported)
        .serve(transport)
        .await
        .unwrap();
    let written = call(
        &client,
        "WriteVar",
        json!({"name": "topic", "value": "bees"}),
    )
    .await;
    assert!(!is_error(&written), "{written:?}");

    let handled = json_line(&line_with(&mut lines, "request handled").await);
    let handled = if handled["span"]["method"] == "tools/call" {
        handled
    } else {
        loop {
            let next = json_line(&line_with(&mut lines, "request handled").await);
            if next["span"]["method"] == "tools/call" {
                break next;
            }
        }
    };
    assert_eq!(handled["level"], "DEBUG");
    assert_eq!(handled["fields"]["outcome"], "ok");
    assert_eq!(handled["span"]["tool"], "WriteVar");
    assert_eq!(handled["span"]["workspace"], "default");
    assert!(handled["span"]["id"].is_string(), "{handled}");
    assert!(handled["span"].get("principal").is_none(), "{handled}");

    let page = scrape(&address).await;
    assert_samples(
        &page,
        &[
            (
                r#"synapse_mcp_tool_calls_total{tool="WriteVar",outcome="ok"}"#,
                1.0,
            ),
            ("synapse_mcp_sessions_active", 1.0),
            ("synapse_mcp_store_connections_max", 1.0),
            ("synapse_mcp_store_up", 1.0),
        ],
    );
    let samples = samples(&page);
    let connections = samples[r#"synapse_mcp_store_connections{state="in_use"}"#]
        + samples[r#"synapse_mcp_store_connections{state="idle"}"#];
    // One connection, in use or idle.
    assert!((connections - 1.0).abs() < f64::EPSILON, "{page}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn json_logs_over_http_name_the_principal_and_workspace() {
    let server = HttpServer::start(&[
        "--log-format",
        "json",
        "--log-level",
        "synapse_mcp=debug,warn",
    ])
    .await;
    let client = alice_in_research(&server).await;
    let written = call(
        &client,
        "WriteVar",
        json!({"name": "topic", "value": "bees"}),
    )
    .await;
    assert!(!is_error(&written), "{written:?}");
    client.cancel().await.unwrap();
    // The line is written before the answer is sent; the test reads the log on a task of its
    // own, so it may come a little later.
    let handled = loop {
        let found = server
            .log
            .lock()
            .unwrap()
            .iter()
            .map(|line| json_line(line))
            .find(|line| {
                line["fields"]["message"] == "request handled" && line["span"]["tool"] == "WriteVar"
            });
        if let Some(found) = found {
            break found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(handled["span"]["method"], "tools/call");
    assert_eq!(handled["span"]["workspace"], "research");
    assert_eq!(handled["span"]["principal"], "alice");
    assert_eq!(handled["fields"]["outcome"], "ok");
    assert!(handled["fields"]["elapsed_us"].is_u64(), "{handled}");
}

/// The `fn` names of the `impl` block that starts with `header` in the source file `path`.
fn methods_of(path: &str, header: &str) -> std::collections::BTreeSet<String> {
    let source = std::fs::read_to_string(crate::common::manifest(path)).unwrap();
    let start = source
        .find(header)
        .unwrap_or_else(|| panic!("no `{header}` in {path}"));
    let block = &source[start..];
    let block = &block[..block.find("\n}\n").unwrap()];
    block
        .split("fn ")
        .skip(1)
        .map(|rest| rest.split(['(', '<']).next().unwrap().to_owned())
        .collect()
}

/// rmcp is given `Observed`, not `Server`: a method `Server` implements that `Observed` does
/// not pass on would silently fall back to rmcp's default.
#[test]
fn the_observed_handler_passes_on_every_method_of_the_server() {
    let server = methods_of("src/server.rs", "impl ServerHandler for Server {");
    let observed = methods_of("src/server/metrics.rs", "impl ServerHandler for Observed {");
    let missing: Vec<&String> = server.difference(&observed).collect();
    assert!(missing.is_empty(), "Observed does not pass on {missing:?}");
    assert!(
        server.contains("call_tool") && server.len() > 10,
        "{server:?}"
    );
}
