//! How deep and how large what the model writes may grow: dot paths and JSON values deeper than
//! the nesting limit are refused where they enter (so nothing accepted fails to read back), a
//! state stored too deep by an older build stays readable and `doctor --repair` flattens it,
//! reference expansion is paid per expansion from one budget per call or plan, and a workspace
//! has a byte cap.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{RawSession, assert_golden_text, run_command};

/// A dot path of `segments` segments, `a.a.a…`.
fn deep_path(segments: usize) -> String {
    vec!["a"; segments].join(".")
}

/// `{"k": {"k": … 1}}`, `levels` objects deep.
fn nested(levels: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..levels {
        value = json!({ "k": value });
    }
    value
}

fn tool_text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a tool result: {answer}"))
        .to_owned()
}

fn is_tool_error(answer: &Value) -> bool {
    answer["result"]["isError"] == json!(true)
}

async fn ping(session: &mut RawSession, id: i64) {
    session
        .send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
        .await;
    let answer = session.response(id).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
}

fn data_args(directory: &Path) -> Vec<String> {
    vec!["--data-dir".to_owned(), directory.display().to_string()]
}

async fn durable(directory: &Path, extra: &[&str]) -> RawSession {
    let mut args = data_args(directory);
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    RawSession::initialized(&args).await
}

async fn refuses_a_deep_path_and_keeps_serving(mut session: RawSession, segments: usize) {
    let written = session
        .call(
            1,
            "WriteState",
            json!({"path": deep_path(segments), "value": 1}),
        )
        .await;
    assert!(is_tool_error(&written), "{written}");
    assert_golden_text(
        &format!("depth/write-too-deep-{segments}.txt"),
        &tool_text(&written),
    );
    let read = session.call(2, "ReadState", json!({})).await;
    assert!(!is_tool_error(&read), "{read}");
    assert_eq!(tool_text(&read), "[state: characters 0–2 of 2]\n{}");
    ping(&mut session, 3).await;
}

#[tokio::test]
async fn a_path_of_thousands_of_segments_is_refused_on_the_memory_store() {
    // Was: acknowledged, then the next ReadState overflowed the stack and the process aborted.
    refuses_a_deep_path_and_keeps_serving(RawSession::initialized(&[]).await, 17_000).await;
}

#[tokio::test]
async fn a_path_of_tens_of_thousands_of_segments_is_refused_on_sqlite() {
    // Was: the write itself overflowed the stack and the process aborted.
    let directory = tempfile::tempdir().unwrap();
    refuses_a_deep_path_and_keeps_serving(durable(directory.path(), &[]).await, 74_500).await;
}

#[tokio::test]
async fn writes_accept_only_what_reads_can_return_across_restarts() {
    let directory = tempfile::tempdir().unwrap();
    let mut session = durable(directory.path(), &[]).await;
    // Was: acknowledged, and from then on every read and write of the state failed with
    // "recursion limit exceeded", across restarts.
    let too_deep_path = session
        .call(1, "WriteState", json!({"path": deep_path(128), "value": 1}))
        .await;
    assert!(is_tool_error(&too_deep_path), "{too_deep_path}");
    assert_golden_text("depth/path-too-deep.txt", &tool_text(&too_deep_path));
    let too_deep_value = session
        .call(2, "WriteState", json!({"path": "v.w", "value": nested(63)}))
        .await;
    assert!(is_tool_error(&too_deep_value), "{too_deep_value}");
    assert_golden_text("depth/value-too-deep.txt", &tool_text(&too_deep_value));
    // At the limit: 2 path segments and a value 62 levels deep.
    let at_limit = session
        .call(3, "WriteState", json!({"path": "v.w", "value": nested(62)}))
        .await;
    assert!(!is_tool_error(&at_limit), "{at_limit}");
    let read = session.call(4, "ReadState", json!({"path": "v.w"})).await;
    assert!(!is_tool_error(&read), "{read}");
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read",
            "params": {"uri": "state://"}}),
        )
        .await;
    let resource = session.response(5).await;
    assert!(
        resource["result"]["contents"][0]["text"].is_string(),
        "{resource}"
    );
    drop(session);

    let mut restarted = durable(directory.path(), &[]).await;
    let read = restarted.call(6, "ReadState", json!({"path": "v.w"})).await;
    let text = tool_text(&read);
    let json_text = text.split_once('\n').unwrap().1;
    assert_eq!(
        serde_json::from_str::<Value>(json_text).unwrap(),
        nested(62)
    );
    let written = restarted
        .call(7, "WriteState", json!({"path": "x", "value": 1}))
        .await;
    assert!(!is_tool_error(&written), "{written}");
    drop(restarted);
    let (out, stderr, ok) = run_command(&[
        "workspace",
        "export",
        "default",
        "--data-dir",
        directory.path().to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let exported: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(exported["state"]["x"], json!(1));
}

#[tokio::test]
async fn an_over_deep_stored_state_stays_readable_and_doctor_repairs_it() {
    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().to_str().unwrap().to_owned();
    let mut session = durable(directory.path(), &[]).await;
    let written = session
        .call(1, "WriteState", json!({"path": "kept", "value": "yes"}))
        .await;
    assert!(!is_tool_error(&written), "{written}");
    drop(session);
    // What an older build let through: a document 3,000 levels deep.
    let deep = format!(
        "{{\"kept\":\"yes\",\"deep\":{}1{}}}",
        "{\"a\":".repeat(3_000),
        "}".repeat(3_000)
    );
    let connection = rusqlite::Connection::open(directory.path().join("synapse.db")).unwrap();
    connection
        .execute(
            "UPDATE state SET document = ?1 WHERE workspace = 'default'",
            [&deep],
        )
        .unwrap();
    drop(connection);

    let mut session = durable(directory.path(), &[]).await;
    let read = session.call(2, "ReadState", json!({"path": "kept"})).await;
    assert!(!is_tool_error(&read), "{read}");
    assert!(tool_text(&read).ends_with("\n\"yes\""), "{read}");
    drop(session);

    let (out, _, ok) = run_command(&["doctor", "--data-dir", &data]);
    assert!(!ok, "doctor must not say ok: {out}");
    assert_golden_text("depth/doctor-too-deep.txt", &out);
    let (out, stderr, ok) = run_command(&["doctor", "--repair", "--data-dir", &data]);
    assert!(ok, "{out}{stderr}");
    assert_golden_text("depth/doctor-repair.txt", &out);
    let (out, stderr, ok) = run_command(&["doctor", "--data-dir", &data]);
    assert!(ok, "{out}{stderr}");

    let mut session = durable(directory.path(), &[]).await;
    let written = session
        .call(3, "WriteState", json!({"path": "more", "value": 2}))
        .await;
    assert!(!is_tool_error(&written), "{written}");
    let read = session
        .call(4, "ReadState", json!({"length": 1_000_000}))
        .await;
    let text = tool_text(&read);
    let document: Value = serde_json::from_str(text.split_once('\n').unwrap().1).unwrap();
    assert_eq!(document["kept"], json!("yes"));
    assert_eq!(document["more"], json!(2));
    // The cut branch is kept, as its JSON text, where it was cut.
    let mut cut = &document["deep"];
    for _ in 0..63 {
        cut = &cut["a"];
    }
    let kept = cut.as_str().unwrap_or_else(|| panic!("{cut}"));
    assert!(kept.starts_with("{\"a\":{\"a\":"), "{kept}");
    assert_eq!(kept.len(), 6 * (3_000 - 63) + 1, "{kept}");
}

/// `l0` is empty and every `lK` references `l(K-1)` `fan_out` times (stored with `$$` escapes).
async fn fan_out(session: &mut RawSession, levels: usize, fan_out: usize, first_id: i64) {
    let written = session
        .call(first_id, "WriteVar", json!({"name": "l0", "value": ""}))
        .await;
    assert!(!is_tool_error(&written), "{written}");
    for level in 1..=levels {
        let value = format!("$$VAR_REF{{{{l{}}}}}", level - 1).repeat(fan_out);
        let id = first_id + i64::try_from(level).unwrap();
        let written = session
            .call(
                id,
                "WriteVar",
                json!({"name": format!("l{level}"), "value": value}),
            )
            .await;
        assert!(!is_tool_error(&written), "{written}");
    }
}

/// The peak resident memory of a process, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[tokio::test]
async fn every_expansion_counts_against_the_budget_even_an_empty_one() {
    let mut session = RawSession::initialized(&[]).await;
    fan_out(&mut session, 10, 8, 1).await;
    // Was: a billion empty expansions, the session blocked and ~1 GB of bookkeeping before
    // the byte budget ran out.
    let expanded = session
        .call(
            20,
            "WriteVar",
            json!({"name": "x", "value": "$VAR_REF{{l10}}"}),
        )
        .await;
    assert!(is_tool_error(&expanded), "{expanded}");
    let message = tool_text(&expanded);
    assert_golden_text("depth/references-expand.txt", &message);
    ping(&mut session, 21).await;
    let peak = peak_rss(session.pid());
    assert!(peak < 200 << 20, "peak RSS {peak} bytes");
    let missing = session.call(22, "ReadVar", json!({"name": "x"})).await;
    assert!(
        is_tool_error(&missing),
        "a refused call stores nothing: {missing}"
    );
}

#[tokio::test]
async fn a_plan_pays_for_every_step_from_one_budget() {
    let mut session = RawSession::initialized(&[]).await;
    fan_out(&mut session, 14, 2, 1).await;
    let alone = session
        .call(
            20,
            "WriteVar",
            json!({"name": "alone", "value": "$VAR_REF{{l14}}"}),
        )
        .await;
    assert!(!is_tool_error(&alone), "one step's worth resolves: {alone}");
    let steps: Vec<Value> = (0..20)
        .map(|index| {
            json!({"_id": format!("s{index}"), "_tool": "WriteVar",
                "name": format!("s{index}"), "value": "$VAR_REF{{l14}}"})
        })
        .collect();
    // Was: each step had a budget of its own, so any number of steps could each expand up to
    // the whole budget. A step's `$VAR_REF` is resolved when the step runs.
    let plan = session
        .call(21, "RunPlan", json!({"steps": steps, "maxParallel": 1}))
        .await;
    let output = &plan["result"]["structuredContent"];
    assert_eq!(output["ok"], json!(false), "{plan}");
    let refused: Vec<&Value> = output["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["status"] == json!("error"))
        .collect();
    assert!(!refused.is_empty(), "{plan}");
    assert!(
        refused[0]["message"]
            .as_str()
            .unwrap()
            .contains("expand more than"),
        "{plan}"
    );
    ping(&mut session, 22).await;
}

#[tokio::test]
async fn cached_arguments_keep_the_references_as_written() {
    let mut session = RawSession::initialized(&[]).await;
    let big = "b".repeat(100_000);
    session
        .call(1, "WriteVar", json!({"name": "big", "value": big}))
        .await;
    let plan = session
        .call(
            2,
            "RunPlan",
            json!({"steps": [{"_id": "one", "_tool": "ReadState"}], "input": {"text": "$VAR_REF{{big}}"}, "dryRun": true}),
        )
        .await;
    assert!(!is_tool_error(&plan), "{plan}");
    let listed = session
        .call(3, "ListVars", json!({"filter": {"type": "ToolCallArgs"}}))
        .await;
    let variables = listed["result"]["structuredContent"]["variables"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(variables.len(), 1, "{listed}");
    let name = variables[0]["name"].as_str().unwrap();
    let read = session.call(4, "ReadVar", json!({"name": name})).await;
    let cached = tool_text(&read);
    assert!(cached.contains("$VAR_REF{{big}}"), "{cached}");
    assert!(
        !cached.contains("bbbb"),
        "{}",
        &cached[..200.min(cached.len())]
    );
}

#[tokio::test]
async fn a_workspace_byte_cap_refuses_writes_past_it_and_keeps_what_was_stored() {
    let directory = tempfile::tempdir().unwrap();
    let mut session = durable(directory.path(), &["--workspace-max-bytes", "100000"]).await;
    let first = session
        .call(
            1,
            "WriteVar",
            json!({"name": "first", "value": "a".repeat(60_000)}),
        )
        .await;
    assert!(!is_tool_error(&first), "{first}");
    let second = session
        .call(
            2,
            "WriteVar",
            json!({"name": "second", "value": "b".repeat(60_000)}),
        )
        .await;
    assert!(is_tool_error(&second), "{second}");
    let message = tool_text(&second);
    assert_golden_text("depth/workspace-cap.txt", &message);
    let state = session
        .call(
            3,
            "WriteState",
            json!({"path": "s", "value": "c".repeat(60_000)}),
        )
        .await;
    assert!(is_tool_error(&state), "{state}");
    assert_golden_text("depth/state-cap.txt", &tool_text(&state));
    let replaced = session
        .call(
            4,
            "WriteVar",
            json!({"name": "first", "value": "d".repeat(90_000)}),
        )
        .await;
    assert!(
        !is_tool_error(&replaced),
        "replacing a value frees its old bytes: {replaced}"
    );
    let read = session
        .call(5, "ReadVar", json!({"name": "first", "start": 89_990}))
        .await;
    assert!(tool_text(&read).ends_with("dddddddddd"), "{read}");
    let missing = session.call(6, "ReadVar", json!({"name": "second"})).await;
    assert!(is_tool_error(&missing), "{missing}");
}
