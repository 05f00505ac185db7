//! What a hostile upstream server must never do to synapse-mcp (second round of hardening):
//! grow its memory with requests, floods of progress or a stderr line without end, hang a call
//! with an answer too large or none at all, or carry its error text past the output limit.
//! The upstream is `examples/hostile_upstream.rs`, told what to do by its argument; every
//! flood is scaled down through the `[[upstream]]` limits.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{RawSession, example};

/// A server whose one upstream, `h`, is the hostile server in `mode`, with more keys; the
/// folder holding its config file lives as long as the session.
async fn hostile(mode: &[&str], extra: &str) -> (RawSession, tempfile::TempDir) {
    let directory = tempfile::tempdir().unwrap();
    let command = example("hostile_upstream").display().to_string();
    let config = directory.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"h\"\ncommand = {command:?}\nargs = {mode:?}\n\
             execution = \"auto\"\n{extra}\n"
        ),
    )
    .unwrap();
    let session = RawSession::initialized(&["--config", config.to_str().unwrap()]).await;
    (session, directory)
}

/// The peak resident memory of a process, in KiB (`VmHWM`).
pub(crate) fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The peak memory of an idle server that has answered one call, in KiB: the floor each
/// flood's cost is measured from.
async fn idle_peak_kib() -> u64 {
    let mut session = RawSession::initialized(&[]).await;
    session.call(1, "ListVars", json!({})).await;
    peak_kib(session.pid())
}

/// A tool error's text.
fn tool_error(answer: &Value) -> String {
    assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Calls `h__act` until its error says `wanted`, for up to `seconds`; gives that error.
async fn error_saying(session: &mut RawSession, wanted: &str, seconds: u64) -> String {
    let started = Instant::now();
    let mut id = 100;
    loop {
        id += 1;
        let answer = session.call(id, "h__act", json!({})).await;
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if text.contains(wanted) {
            return text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(seconds),
            "no error saying {wanted:?} within {seconds} s; the last answer: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const MIB: u64 = 1024;

/// Finding 1: an upstream that wrote `ping` requests in a loop (and never read its stdin) grew
/// synapse-mcp to 3.2 GB in 30 s. Now requests past the rate are refused, a flood disconnects
/// the server (its tools say why), and the memory stays within 64 MiB of an idle server's.
#[tokio::test]
async fn a_server_flooding_requests_is_disconnected_and_memory_stays_bounded() {
    let idle = idle_peak_kib().await;
    let (mut session, _directory) = hostile(&["ping-flood"], "").await;
    let said = error_saying(&mut session, "disconnected as a flood", 30).await;
    assert!(said.contains("the MCP server `h` is not running"), "{said}");
    // Let it come back and flood a few more times.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let peak = peak_kib(session.pid());
    assert!(
        peak < idle + 64 * MIB,
        "peak {peak} KiB against {idle} KiB idle"
    );
}

/// Finding 9: an answer over the line limit was dropped by the transport, and neither that
/// call nor the next was ever answered. Now the call fails at once, saying how large the answer
/// was, and the next call is answered the same way.
#[tokio::test]
async fn an_answer_over_the_size_limit_fails_its_call_with_the_size() {
    let (mut session, _directory) = hostile(&["huge", "17000000"], "").await;
    for id in [1, 2] {
        let answer = session.call(id, "h__act", json!({})).await;
        let said = tool_error(&answer);
        assert!(
            said.starts_with(
                "the MCP server `h` answered the call of `act` with an error: its answer was 170000"
            ) && said.contains("over the limit of 16777216 bytes (`max_message_bytes`)"),
            "{said}"
        );
    }
}

/// Finding 9: there was no timeout for upstream calls; a server that never answers held the
/// call until the client gave up. Now the call fails after `call_timeout_seconds`.
#[tokio::test]
async fn a_call_the_server_never_answers_fails_after_the_timeout() {
    let (mut session, _directory) = hostile(&["hang"], "call_timeout_seconds = 1").await;
    let started = Instant::now();
    let answer = session.call(1, "h__act", json!({})).await;
    assert_eq!(
        tool_error(&answer),
        "the MCP server `h` did not answer the call of `act` within 1 s \
         (`call_timeout_seconds`); the call was cancelled on the server"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// Finding 8: an `isError` result of 5 MB reached the model whole, whatever `_outputLimit`
/// said. Now it is cut to the call's limit like any other text.
#[tokio::test]
async fn an_upstream_error_result_is_cut_to_the_output_limit() {
    let (mut session, _directory) = hostile(&["error", "200000"], "").await;
    let answer = session
        .call(1, "h__act", json!({"_outputLimit": 100}))
        .await;
    let said = tool_error(&answer);
    assert!(
        said.chars().count() < 200 && said.contains("characters omitted"),
        "{} characters: {}",
        said.len(),
        &said[..said.len().min(300)]
    );
}

/// Finding 7: a stderr line without end was held whole (1 GB of it: 1,022 MB of memory) and
/// copied whole into our log and into the next tool error. Now a line keeps its first 4 KiB, a
/// session logs at most 1 MiB, and the memory stays within 64 MiB of an idle server's.
#[tokio::test]
async fn a_stderr_line_without_end_is_cut_and_memory_stays_bounded() {
    let idle = idle_peak_kib().await;
    let (mut session, _directory) = hostile(&["stderr", "200000000"], "").await;
    // The call makes it write 200 MB on stderr and exit.
    let first = session.call(1, "h__act", json!({})).await;
    tool_error(&first);
    let said = error_saying(&mut session, "its last words on stderr", 30).await;
    assert!(
        said.contains("more bytes of this line skipped") && said.len() < 10_000,
        "{} bytes: {}",
        said.len(),
        &said[..said.len().min(300)]
    );
    let peak = peak_kib(session.pid());
    assert!(
        peak < idle + 64 * MIB,
        "peak {peak} KiB against {idle} KiB idle"
    );
}

/// Finding 6: progress of an upstream call was queued without bound while the client did not
/// read (2 M notifications: 108 → 537 MB). Now a call keeps only the newest update waiting, and
/// the memory stays within 64 MiB of an idle server's; the answer still arrives.
#[tokio::test]
async fn progress_to_a_client_that_does_not_read_is_coalesced_and_memory_stays_bounded() {
    let idle = idle_peak_kib().await;
    let (mut session, _directory) = hostile(&["progress", "600000"], "").await;
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "h__act", "arguments": {}, "_meta": {"progressToken": "p"}}}),
        )
        .await;
    // The client reads nothing while the server reports.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let peak = peak_kib(session.pid());
    assert!(
        peak < idle + 64 * MIB,
        "peak {peak} KiB against {idle} KiB idle"
    );
    let answer = session.response(1).await;
    assert_eq!(
        answer["result"]["content"][0]["text"],
        json!("done"),
        "{answer}"
    );
}

/// Finding 12: a server that never comes up left an empty group, its tools answered "unknown
/// tool", and the reason was only in our log. Now `ToolGroups` lists the group with why it is
/// not running, and a call of one of its tools says so.
#[tokio::test]
async fn a_server_that_never_comes_up_says_why_in_the_listing_and_in_calls() {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(
        &config,
        "[[upstream]]\nname = \"gone\"\ncommand = \"/nonexistent/server\"\n",
    )
    .unwrap();
    let mut session = RawSession::initialized(&["--config", config.to_str().unwrap()]).await;
    let listed = session.call(1, "ToolGroups", json!({})).await;
    let groups = listed["result"]["structuredContent"]["groups"]
        .as_array()
        .unwrap();
    let gone = groups.iter().find(|group| group["name"] == "gone").unwrap();
    let unavailable = gone["unavailable"].as_str().unwrap();
    assert!(
        unavailable.starts_with(
            "the MCP server `gone` is not running (cannot start `/nonexistent/server`: "
        ),
        "{gone}"
    );
    // A tool name that cannot be routed is a JSON-RPC error (-32602), as for any unknown tool.
    let called = session.call(2, "gone__anything", json!({})).await;
    assert_eq!(called["error"]["code"], json!(-32602), "{called}");
    let said = called["error"]["message"].as_str().unwrap();
    assert!(
        said.starts_with(
            "`gone__anything` cannot be called now: the MCP server `gone` is not running (cannot start"
        ),
        "{said}"
    );
}

/// Finding 12: the docs said synapse-mcp talks to its servers on protocol 2025-11-25, and it
/// offered 2026-07-28 (rmcp's default, a version without `initialize`) in its `initialize`. The
/// server here writes what it was sent on stderr and exits; its last words show the version.
#[tokio::test]
async fn the_upstream_is_offered_the_protocol_the_docs_name() {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(
        &config,
        "[[upstream]]\nname = \"h\"\ncommand = \"sh\"\n\
         args = [\"-c\", \"read line; echo \\\"$line\\\" >&2\"]\n",
    )
    .unwrap();
    let mut session = RawSession::initialized(&["--config", config.to_str().unwrap()]).await;
    let docs = std::fs::read_to_string(crate::common::manifest("docs/upstreams.md")).unwrap();
    assert!(
        docs.contains("protocol 2025-11-25"),
        "docs/upstreams.md changed"
    );
    for id in 1..=100 {
        let listed = session.call(id, "ToolGroups", json!({})).await;
        let groups = listed["result"]["structuredContent"]["groups"].clone();
        let said = groups
            .as_array()
            .unwrap()
            .iter()
            .find(|group| group["name"] == "h")
            .and_then(|group| group["unavailable"].as_str())
            .unwrap_or_default()
            .to_owned();
        if said.contains("protocolVersion") {
            assert!(said.contains(r#""protocolVersion":"2025-11-25""#), "{said}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the server's last words never showed its initialize");
}
