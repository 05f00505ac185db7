//! Whole JSON-RPC lines into a whole server: an in-process `Server` (memory store, a copy of the
//! test skills) served as on stdio (`Server::serve_lines`), a new session for each input with a completed
//! `initialize` handshake, then the fuzzer's bytes as they come, then a closing `ping`. The server
//! is built once per process (building one per input loads the skills each time, at a few inputs
//! a second); sessions share its workspace, as sessions of one binary share a store. Checks
//! what a client relies on: every line written is JSON-RPC, every request is answered as often
//! as it was sent, with its id exactly as written (unless the input cancels something), the
//! session ends cleanly when the input closes, and nothing hangs or panics.
#![no_main]

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use serde_json::value::RawValue;
use synapse_mcp::app::App;
use synapse_mcp::app::Settings;
use synapse_mcp::config::Cli;
use synapse_mcp::server::Server;
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
        .get_or_init(|| Server::new(App::open(&config()).expect("the app starts")))
        .clone()
}

fn config() -> Settings {
    let root = skills_root().display().to_string();
    let cli = <Cli as clap::Parser>::parse_from([
        "synapse-mcp",
        "--store",
        "memory",
        "--skills",
        root.as_str(),
    ]);
    Settings::load(&cli).expect("the fuzz configuration loads")
}

/// The members of a JSON object, each value as written.
type Members<'a> = HashMap<Cow<'a, str>, &'a RawValue>;

/// A request id as the server must echo it: numbers by their exact text (a JSON parser would
/// turn a 60-digit id into a float, and two such floats may print alike or not), strings by
/// value, anything else as the `null` an invalid request is answered with.
fn id_key(id: &RawValue) -> String {
    let text = id.get();
    match text.as_bytes().first() {
        // A string that does not decode (a lone surrogate escape) is no valid id either.
        Some(b'"') => serde_json::from_str::<String>(text)
            .map_or_else(|_| "null".to_owned(), |text| json!(text).to_string()),
        Some(b'-' | b'0'..=b'9') => text.to_owned(),
        _ => "null".to_owned(),
    }
}

/// Whether a message is a cancellation (which lets the server leave a request unanswered).
fn cancels(members: &Members) -> bool {
    members.get("method").is_some_and(|method| {
        serde_json::from_str::<Cow<str>>(method.get())
            .is_ok_and(|method| method == "notifications/cancelled")
    })
}

/// The answers the input must get, by id key, counted: every object with a `method` and an `id`
/// is a request (answered with its id, or `null` when the id is not a number or a string), one
/// line or one batch element each; a batch without requests gets one answer with a `null` id.
fn expected_ids(bytes: &[u8]) -> BTreeMap<String, usize> {
    let mut ids = BTreeMap::new();
    let mut cancelled = bytes.windows(9).any(|window| window == b"cancelled");
    for line in bytes.split(|&byte| byte == b'\n') {
        let elements: Vec<&RawValue> = if line.trim_ascii_start().starts_with(b"[") {
            let Ok(elements) = serde_json::from_slice::<Vec<&RawValue>>(line) else {
                continue;
            };
            let requests = elements
                .iter()
                .filter_map(|element| serde_json::from_str::<Members>(element.get()).ok())
                .filter(|members| members.contains_key("method") && members.contains_key("id"))
                .count();
            if requests == 0 {
                *ids.entry("null".to_owned()).or_default() += 1;
            }
            elements
        } else {
            match serde_json::from_slice::<&RawValue>(line) {
                Ok(element) => vec![element],
                Err(_) => continue,
            }
        };
        for element in elements {
            let Ok(members) = serde_json::from_str::<Members>(element.get()) else {
                continue;
            };
            cancelled |= cancels(&members);
            if let (true, Some(id)) = (members.contains_key("method"), members.get("id")) {
                *ids.entry(id_key(id)).or_default() += 1;
            }
        }
    }
    if cancelled {
        ids.clear();
    }
    ids
}

/// Counts off the answers one output line carries (one answer, or a batch's array of them).
fn answered(line: &str, expected: &mut BTreeMap<String, usize>) {
    let answers: Vec<&RawValue> =
        if line.starts_with('[') {
            serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("the server wrote a broken array ({error}): {line}"))
        } else {
            vec![serde_json::from_str(line).unwrap_or_else(|error| {
                panic!("the server wrote a non-JSON line ({error}): {line}")
            })]
        };
    for answer in answers {
        let members: Members = serde_json::from_str(answer.get())
            .unwrap_or_else(|error| panic!("not a JSON-RPC message ({error}): {line}"));
        assert_eq!(
            members.get("jsonrpc").map(|version| version.get()),
            Some("\"2.0\""),
            "not JSON-RPC: {line}"
        );
        if members.contains_key("method") {
            continue;
        }
        let Some(id) = members.get("id") else {
            continue;
        };
        if let Some(count) = expected.get_mut(&id_key(id)) {
            *count -= 1;
            if *count == 0 {
                expected.remove(&id_key(id));
            }
        }
    }
}

async fn session(bytes: &[u8]) {
    let server = server();
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving = tokio::spawn(server.serve_lines(server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client_side);
    let mut expected = expected_ids(bytes);
    *expected.entry(json!("fuzz-end").to_string()).or_default() += 1;
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
            answered(&line, &mut expected);
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
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(error))) => panic!("the session ended with an error: {error}"),
        Ok(Err(error)) => panic!("the session task failed: {error}"),
        Err(_) => panic!("the server did not stop within {PATIENCE:?} of its input closing"),
    }
    draining.abort();
}

fuzz_target!(|bytes: &[u8]| {
    runtime().block_on(session(bytes));
});
