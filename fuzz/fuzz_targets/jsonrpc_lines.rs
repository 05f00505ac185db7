//! Whole JSON-RPC lines into a whole server: an in-process `Server` (memory store, a copy of the
//! test skills) behind the stdio `LineTransport`, a new session for each input with a completed
//! `initialize` handshake, then the fuzzer's bytes as they come, then a closing `ping`. The server
//! is built once per process (building one per input loads the skills each time, at a few inputs
//! a second); sessions share its workspace, as sessions of one binary share a store. Checks what a client relies on: every line
//! written is JSON-RPC, every request with an id is answered (unless the input cancels
//! something), the session ends cleanly when the input closes, and nothing hangs or panics.
#![no_main]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use rmcp::ServiceExt;
use serde_json::{Value, json};
use synapse_mcp::config::{Cli, Config};
use synapse_mcp::server::Server;
use synapse_mcp::server::transport::LineTransport;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long a session may take before it counts as a hang.
const PATIENCE: Duration = Duration::from_secs(10);

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// A copy of `tests/fixtures/skills`, so `SkillSave` never writes into the repository.
fn skills_root() -> &'static PathBuf {
    static ROOT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &ROOT
        .get_or_init(|| {
            let directory = tempfile::tempdir().expect("a temporary folder");
            let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/skills");
            let target = directory.path().join("skills");
            copy_tree(&source, &target);
            (directory, target)
        })
        .1
}

fn copy_tree(source: &std::path::Path, target: &std::path::Path) {
    std::fs::create_dir_all(target).expect("create the skills copy");
    for entry in std::fs::read_dir(source).expect("read the test skills") {
        let entry = entry.expect("a folder entry");
        let path = entry.path();
        let destination = target.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_tree(&path, &destination);
        } else {
            std::fs::copy(&path, &destination).expect("copy a skill file");
        }
    }
}

fn server() -> Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER
        .get_or_init(|| Server::new(&config()).expect("the server starts"))
        .clone()
}

fn config() -> Config {
    let root = skills_root().display().to_string();
    let cli = <Cli as clap::Parser>::parse_from([
        "synapse-mcp",
        "--store",
        "memory",
        "--skills",
        root.as_str(),
    ]);
    Config::load(&cli).expect("the fuzz configuration loads")
}

/// The ids of the requests in the input that must be answered.
fn expected_ids(bytes: &[u8]) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    if bytes.windows(9).any(|window| window == b"cancelled") {
        return ids;
    }
    for line in bytes.split(|&byte| byte == b'\n') {
        let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let is_request = message.get("method").is_some_and(Value::is_string)
            && !message.contains_key("result")
            && !message.contains_key("error");
        match message.get("id") {
            Some(id @ (Value::Number(_) | Value::String(_))) if is_request => {
                ids.insert(id.to_string());
            }
            _ => {}
        }
    }
    ids
}

async fn session(bytes: &[u8]) {
    let server = server();
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving = tokio::spawn(async move {
        let running = server
            .serve(LineTransport::new(server_read, server_write))
            .await
            .expect("initialize is answered");
        running.waiting().await
    });
    let (client_read, mut client_write) = tokio::io::split(client_side);
    let mut expected = expected_ids(bytes);
    expected.insert(json!("fuzz-end").to_string());
    let writer = tokio::spawn({
        let mut input = Vec::new();
        input.extend_from_slice(
            br#"{"jsonrpc":"2.0","id":"fuzz-init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#,
        );
        input.extend_from_slice(
            b"\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
        );
        input.extend_from_slice(bytes);
        input.extend_from_slice(
            b"\n{\"jsonrpc\":\"2.0\",\"id\":\"fuzz-end\",\"method\":\"ping\"}\n",
        );
        async move {
            client_write
                .write_all(&input)
                .await
                .expect("the server reads its input");
            client_write
        }
    });
    let mut lines = BufReader::new(client_read).lines();
    let answered = tokio::time::timeout(PATIENCE, async {
        while !expected.is_empty() {
            let Some(line) = lines
                .next_line()
                .await
                .expect("the server writes UTF-8 lines")
            else {
                panic!("the server closed its output with requests unanswered: {expected:?}");
            };
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|error| {
                panic!("the server wrote a non-JSON line ({error}): {line}")
            });
            assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC: {line}");
            if message.get("method").is_none() {
                expected.remove(&message["id"].to_string());
            }
        }
    })
    .await;
    if answered.is_err() {
        panic!("requests unanswered after {PATIENCE:?}: {expected:?}");
    }
    let mut client_write = writer.await.expect("the writer finishes");
    client_write.shutdown().await.expect("the input closes");
    // Whatever the server still writes (notifications) is read, so it never blocks on a full pipe.
    let draining = tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    match tokio::time::timeout(PATIENCE, serving).await {
        Ok(Ok(Ok(_reason))) => {}
        Ok(Ok(Err(error))) => panic!("the session ended with an error: {error}"),
        Ok(Err(error)) => panic!("the session task failed: {error}"),
        Err(_) => panic!("the server did not stop within {PATIENCE:?} of its input closing"),
    }
    draining.abort();
}

fuzz_target!(|bytes: &[u8]| {
    runtime().block_on(session(bytes));
});
