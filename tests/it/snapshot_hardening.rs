//! What a model's reply or a user function must never do to the snapshot engine, on both stores:
//! crash the server with a deep path, leave a snapshot id that cannot be read back, make a long
//! chat cost memory or storage that grows faster than what changed, keep working after the call
//! was cancelled or the client left, or let one character's function see or change another's.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, RawSession, TestClient, call, is_error, spawn_binary, text,
};
use crate::floors::approving;
use crate::snapshots::ok;

/// A client on the memory store, and one on a fresh SQLite file (with its folder); both approve
/// what they are asked (`SnapshotUpdate` asks first).
async fn both_stores() -> Vec<(Client, Option<tempfile::TempDir>)> {
    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().display().to_string();
    vec![
        (spawn_binary(&[], approving()).await, None),
        (
            spawn_binary(&["--data-dir", &data], approving()).await,
            Some(directory),
        ),
    ]
}

fn dotted(segments: usize) -> String {
    vec!["a"; segments].join(".")
}

fn nested(levels: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..levels {
        value = json!({ "a": value });
    }
    value
}

fn ai(text: &str) -> Value {
    json!({"is_user": false, "swipe_id": 0, "swipes": [text], "swipes_info": [{}]})
}

/// Finding 1: a 3,200-segment path in a reply used to overflow the stack and abort the server.
/// Now the call is refused (listed with its function, position and reason), the other calls
/// apply, and the server goes on.
#[tokio::test]
async fn a_very_deep_path_in_a_reply_is_refused_and_the_server_goes_on() {
    for (client, _directory) in both_stores().await {
        let text = format!("开场 @.SET(\"{}\", 1); @.SET(\"ok\", 2);", dotted(3_200));
        let applied = ok(
            &client,
            "SnapshotApply",
            json!({"chatFile": "c", "text": text}),
        )
        .await;
        assert_eq!(applied["snapshot"], json!({"ok": 2}));
        let errors = applied["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0]["function"], "SET");
        assert_eq!(errors[0]["position"], 3);
        let message = errors[0]["message"].as_str().unwrap();
        assert!(
            message.contains("3200") && message.contains("limit of 64"),
            "{message}"
        );
        let messages = json!([ai(&text)]);
        let processed = ok(
            &client,
            "SnapshotProcess",
            json!({"chatFile": "p", "messages": messages}),
        )
        .await;
        assert_eq!(processed["vs_stat_data"], json!({"ok": 2}));
        assert_eq!(processed["errors"].as_array().unwrap().len(), 1);
        // The server is alive and the snapshot reads back.
        let stored = ok(&client, "SnapshotGet", json!({"id": applied["snapshotId"]})).await;
        assert_eq!(stored["snapshot"], json!({"ok": 2}));
        client.cancel().await.unwrap();
    }
}

/// Finding 2: a 200-segment `@.SET` used to be stored under a snapshot id that `SnapshotGet` and
/// later applies could not read. Now whatever is bound reads back: a write within the limit
/// (path segments plus the value's depth) is kept whole, one level more is refused.
#[tokio::test]
async fn every_bound_snapshot_reads_back() {
    for (client, _directory) in both_stores().await {
        let too_deep = format!("@.SET(\"{}\", 1);", dotted(200));
        let applied = ok(
            &client,
            "SnapshotApply",
            json!({"chatFile": "c", "text": too_deep}),
        )
        .await;
        assert_eq!(applied["snapshot"], json!({}));
        assert_eq!(applied["errors"].as_array().unwrap().len(), 1);
        let id = applied["snapshotId"].clone();
        assert_eq!(
            ok(&client, "SnapshotGet", json!({"id": id})).await["snapshot"],
            json!({})
        );

        // 30 segments and a value 34 deep: exactly the limit, kept and readable.
        let value = nested(34);
        let at_the_limit = format!(
            "@.SET(\"{}\", {value}); @.SET(\"b\", {});",
            dotted(30),
            nested(64)
        );
        let applied = ok(
            &client,
            "SnapshotApply",
            json!({"chatFile": "c", "text": at_the_limit, "baseId": id}),
        )
        .await;
        let errors = applied["errors"].as_array().unwrap();
        assert_eq!(
            errors.len(),
            1,
            "only the 65-level write is refused: {errors:?}"
        );
        assert!(errors[0]["message"].as_str().unwrap().contains("65"));
        let mut expected = value;
        for _ in 0..30 {
            expected = json!({ "a": expected });
        }
        assert_eq!(applied["snapshot"], expected);
        let deepest = applied["snapshotId"].clone();
        assert_eq!(
            ok(&client, "SnapshotGet", json!({"id": deepest})).await["snapshot"],
            expected
        );
        // A later apply builds on it.
        let later = ok(
            &client,
            "SnapshotApply",
            json!({"chatFile": "c", "text": "@.SET(\"c\", 3);", "baseId": deepest}),
        )
        .await;
        assert_eq!(later["snapshot"]["c"], 3);

        // Values that enter whole are measured too.
        let refused = call(
            &client,
            "SnapshotUpdate",
            json!({"id": deepest, "snapshot": nested(65)}),
        )
        .await;
        assert!(is_error(&refused), "{}", text(&refused));
        assert!(text(&refused).contains("limit of 64"), "{}", text(&refused));
        let refused = call(
            &client,
            "TemplateSet",
            json!({"characterId": "hero", "template": nested(65)}),
        )
        .await;
        assert!(is_error(&refused), "{}", text(&refused));
        ok(&client, "FunctionUpsert", json!({"function": {
            "name": "DIG", "type": "active", "pattern": "@\\.DIG\\(\\);",
            "executor": "let value = 1; for (let i = 0; i < 100; i++) value = {a: value}; snapshot.deep = value; return snapshot;"
        }}))
        .await;
        let dug = ok(
            &client,
            "SnapshotApply",
            json!({"chatFile": "c", "text": "@.DIG(); @.SET(\"d\", 4);"}),
        )
        .await;
        assert_eq!(dug["snapshot"], json!({"d": 4}));
        let message = dug["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("limit of 64"), "{message}");
        client.cancel().await.unwrap();
    }
}

fn appending(count: usize, from: usize) -> Vec<Value> {
    (from..from + count)
        .map(|index| {
            ai(&format!(
                "@.APPEND(\"history\", \"message {index:05} — the hero walks on, a little further.\");"
            ))
        })
        .collect()
}

/// Finding 5 (storage): a chat whose state grows by one array item per reply used to rewrite
/// the whole array per message, so storage grew with the square of the chat's length. Now an
/// append costs a bounded number of bytes, the same late in the chat as early on.
#[tokio::test]
async fn a_growing_state_costs_storage_linear_in_what_changed() {
    for (client, _directory) in both_stores().await {
        let mut messages = appending(400, 0);
        let first = ok(
            &client,
            "SnapshotProcess",
            json!({"chatFile": "long", "messages": messages}),
        )
        .await;
        for binding in first["bindings"].as_array().unwrap() {
            let index = usize::try_from(binding["messageIndex"].as_u64().unwrap()).unwrap();
            messages[index]["swipes_info"][0]["st_var_system_snapshot_id"] =
                binding["snapshotId"].clone();
        }
        messages.extend(appending(400, 400));
        let second = ok(
            &client,
            "SnapshotProcess",
            json!({"chatFile": "long", "messages": messages}),
        )
        .await;
        assert_eq!(second["bindings"].as_array().unwrap().len(), 400);
        let bytes = |processed: &Value| processed["storage"]["newBytes"].as_u64().unwrap();
        let (early, late) = (bytes(&first), bytes(&second));
        assert!(
            late / 400 <= 2_048,
            "{late} bytes for 400 appends: {} per snapshot",
            late / 400
        );
        assert!(
            late * 2 <= early * 3,
            "appends late in the chat cost {late} bytes, early ones {early}"
        );
        let history = second["vs_stat_data"]["history"].as_array().unwrap();
        assert_eq!(history.len(), 800);
        let newest = ok(
            &client,
            "SnapshotGet",
            json!({"id": second["latestSnapshotId"], "_outputLimit": -1}),
        )
        .await;
        assert_eq!(newest["snapshot"], second["vs_stat_data"]);
        let middle = &second["bindings"][99]["snapshotId"];
        let middle = ok(
            &client,
            "SnapshotGet",
            json!({"id": middle, "_outputLimit": -1}),
        )
        .await;
        assert_eq!(
            middle["snapshot"]["history"].as_array().unwrap()[..],
            history[..500]
        );
        client.cancel().await.unwrap();
    }
}

/// A chat whose every reply keeps a user function busy (a tenth of a second or so), long
/// enough that processing it whole takes minutes.
async fn busy_chat(session: &mut RawSession) -> Value {
    let upserted = session
        .call(1, "FunctionUpsert", json!({"function": {
            "name": "BUSY", "type": "active", "pattern": "@\\.BUSY\\(\\);",
            "executor": "let total = 0; for (let i = 0; i < 4e6; i++) total += i; snapshot.n = (snapshot.n || 0) + 1; return snapshot;"
        }}))
        .await;
    assert!(upserted["result"]["isError"] != json!(true), "{upserted}");
    let messages: Vec<Value> = (0..1_500).map(|_| ai("@.BUSY();")).collect();
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "SnapshotProcess", "arguments": {"chatFile": "busy", "messages": messages}}})
}

/// CPU seconds used (user and system) by a process, or by one of its threads.
fn cpu_seconds(stat_path: &str) -> f64 {
    let stat = std::fs::read_to_string(stat_path).unwrap_or_default();
    let Some((_, rest)) = stat.rsplit_once(") ") else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // Linux reports CPU time in clock ticks of 1/100 s.
    #[expect(clippy::cast_precision_loss, reason = "ticks of one test run")]
    let seconds = ticks as f64 / 100.0;
    seconds
}

/// Waits until the server's JavaScript thread has worked for half a second: the chat is being
/// processed.
async fn until_processing(pid: u32) {
    for _ in 0..1_200 {
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
        for thread in threads {
            let path = thread.unwrap().path();
            let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            if name.trim() == "snapshot-js"
                && cpu_seconds(&path.join("stat").display().to_string()) >= 0.5
            {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the server never started processing the chat");
}

/// Finding 5 (cancellation): a cancelled `SnapshotProcess` used to run to its end on the blocking
/// pool and store every snapshot. Now it stops between messages. Every reply here runs into
/// the one-call time limit (a quarter of a second), so the whole chat takes at least ten
/// seconds; fifteen seconds after the cancellation, far fewer than all of its snapshots exist.
#[tokio::test]
async fn a_cancelled_process_stops() {
    let mut session = RawSession::initialized(&[]).await;
    let upserted = session
        .call(1, "FunctionUpsert", json!({"function": {
            "name": "SPIN", "type": "active", "pattern": "@\\.SPIN\\(\\);", "executor": "while (true) {}"
        }}))
        .await;
    assert!(upserted["result"]["isError"] != json!(true), "{upserted}");
    let messages: Vec<Value> = (0..40).map(|_| ai("@.SPIN();")).collect();
    session
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "SnapshotProcess", "arguments": {"chatFile": "spin", "messages": messages}}}))
        .await;
    until_processing(session.pid()).await;
    session
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 2, "reason": "the user left the chat"}}),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(15)).await;
    let listed = session
        .call(3, "SnapshotList", json!({"chatFile": "spin"}))
        .await;
    // A chat with no snapshot at all is refused as such.
    let deleted = listed["result"]["structuredContent"]["floors"]
        .as_array()
        .map_or(0, Vec::len);
    assert!(
        deleted < 20,
        "the cancelled call went on: {deleted} of 40 snapshots stored"
    );
}

/// What a cancelled call stored is listed and readable; `stopped` says how far it got.
#[test]
fn a_cancelled_process_lists_what_it_stored() {
    use std::cell::Cell;
    use synapse_mcp::snapshots::Snapshots;
    use synapse_mcp::snapshots::chat::ChatMessage;
    use synapse_mcp::snapshots::javascript::Limits;
    use synapse_mcp::store::SqliteStore;

    let service = Snapshots::new(
        SqliteStore::open_in_memory().unwrap(),
        "w",
        Limits::default(),
    );
    let messages: Vec<ChatMessage> =
        serde_json::from_value(Value::Array(appending(600, 0))).unwrap();
    // Asked twice a message: before it, and before its one call.
    let asked = Cell::new(0);
    let cancelled = || {
        asked.set(asked.get() + 1);
        asked.get() > 600
    };
    let processed = service
        .process("c", &messages, None, None, &cancelled)
        .unwrap();
    let stopped = processed.stopped.unwrap();
    assert_eq!((stopped.processed, stopped.remaining), (300, 300));
    assert_eq!(processed.bindings.len(), 300);
    assert_eq!(processed.storage.snapshots, 300);
    for binding in [&processed.bindings[0], &processed.bindings[299]] {
        let stored = service.snapshot(&binding.snapshot_id).unwrap();
        assert_eq!(
            stored.value["history"].as_array().unwrap().len(),
            binding.message_index + 1
        );
    }
    assert_eq!(
        serde_json::to_value(&processed).unwrap()["stopped"],
        json!({"processed": 300, "remaining": 300})
    );
}

/// Finding 5 (the client leaves): closing stdin during a long `SnapshotProcess` used to keep the
/// process alive until the work was done. Now the work stops and the server exits.
#[tokio::test]
async fn a_process_stops_when_the_client_leaves() {
    let mut session = RawSession::initialized(&[]).await;
    let request = busy_chat(&mut session).await;
    session.send(&request).await;
    let (mut child, stdin, stdout) = session.split();
    let pid = child.id().unwrap();
    until_processing(pid).await;
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the server was still working 20 s after its client left")
        .unwrap();
    assert!(status.code().is_some(), "died of a signal: {status}");
    drop(stdout);
}

/// Finding 9: a function of one character used to change the JavaScript world of every later
/// function (a polluted `Object.prototype`, a replaced `JSON.stringify` and `_`, a global), and
/// `Object.getPrototypeOf(Date).now()` read the real clock. Now each call starts clean and time
/// is the message's time all the way down.
#[tokio::test]
async fn user_functions_cannot_reach_each_other() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    ok(&client, "FunctionUpsert", json!({"characterId": "attacker", "function": {
        "name": "EVIL", "type": "active", "pattern": "@\\.EVIL\\(\\);",
        "executor": "Object.prototype.polluted = 'yes'; JSON.stringify = () => '{\"hijacked\":true}'; globalThis._ = {get: () => 'hijacked'}; globalThis.leak = 1; Array.prototype.push = () => 0; snapshot.done = true; return snapshot;"
    }}))
    .await;
    ok(&client, "FunctionUpsert", json!({"characterId": "victim", "function": {
        "name": "LOOK", "type": "active", "pattern": "@\\.LOOK\\(\\);",
        "executor": "const probe = {}; const list = []; list.push(1); const base = Object.getPrototypeOf(Date); snapshot.seen = {polluted: probe.polluted === undefined ? null : probe.polluted, leak: typeof globalThis.leak, underscore: _.get({a: 1}, 'a'), pushed: list.length, baseNow: typeof base.now === 'function' ? base.now() : 'none', now: Date.now(), made: new Date().getTime(), viaPrototype: new (Object.getPrototypeOf(new Date()).constructor)().getTime(), clocks: [typeof performance, typeof WeakRef]}; return snapshot;"
    }}))
    .await;
    let attacked = ok(
        &client,
        "SnapshotApply",
        json!({"chatFile": "a", "text": "@.EVIL();", "characterId": "attacker"}),
    )
    .await;
    // The attacker's own call still returns what it made: the dispatcher keeps its own tools.
    assert_eq!(attacked["snapshot"], json!({"done": true}));
    let seen = ok(
        &client,
        "SnapshotApply",
        json!({"chatFile": "b", "text": "@.LOOK();", "characterId": "victim"}),
    )
    .await;
    assert_eq!(
        seen["snapshot"],
        json!({"seen": {"polluted": null, "leak": "undefined", "underscore": 1, "pushed": 1,
            "baseNow": "none", "now": 0, "made": 0, "viaPrototype": 0,
            "clocks": ["undefined", "undefined"]}})
    );
    client.cancel().await.unwrap();
}

/// The `snapshot_calls` fuzz target's property, over its seeds: every call that applies says
/// which paths it changed, and the snapshot laid out again from those paths alone reads back
/// exactly; no call makes it nest deeper than the limit.
#[test]
fn snapshots_laid_out_from_the_changed_paths_read_back() {
    use std::collections::HashMap;
    use synapse_mcp::json::nesting;
    use synapse_mcp::snapshots::builtins::Builtin;
    use synapse_mcp::snapshots::calls::{self, Action, Syntaxes};
    use synapse_mcp::store::tree::{self, Changed, Encoded, SnapshotKey};

    let key = || SnapshotKey {
        id: "seed".to_owned(),
        chat_file: "seed".to_owned(),
        message_id: None,
        swipe_id: None,
        created_at: None,
        summary: None,
        stored_bytes: None,
    };
    let syntaxes = Syntaxes {
        callable: Builtin::CALLABLE.to_vec(),
        mvu: true,
        json_patch: true,
    };
    let seeds = crate::common::manifest("fuzz/seeds/snapshot_calls");
    for seed in std::fs::read_dir(seeds).unwrap() {
        let text = std::fs::read_to_string(seed.unwrap().path()).unwrap();
        let mut snapshot = json!({"角色": {"名字": "张三", "金币": 5}, "背包": ["剑"], "n": null,
            "long": (0..40).collect::<Vec<_>>()});
        let mut encoded = Encoded::new();
        let mut nodes: HashMap<String, String> = HashMap::new();
        encoded.add(key(), &snapshot).unwrap();
        for call in calls::find(&text, &syntaxes) {
            let mut changed = Changed::new();
            let applied = match &call.action {
                Action::Builtin(builtin, arguments) => builtin
                    .apply(&mut snapshot, arguments)
                    .map(|path| changed.path(&path))
                    .map_err(|error| error.to_string()),
                Action::Patch(operations) => operations.iter().try_for_each(|operation| {
                    operation
                        .apply(&mut snapshot)
                        .map(|paths| paths.iter().for_each(|path| changed.path(path)))
                        .map_err(|error| error.to_string())
                }),
                Action::Malformed(message) => Err(message.clone()),
            };
            drop(applied);
            assert!(nesting::depth(&snapshot) <= nesting::MAX_DEPTH);
            encoded.add_changed(key(), &snapshot, &changed).unwrap();
            nodes.extend(std::mem::take(&mut encoded.nodes));
            let root = encoded.snapshots.pop().unwrap().1;
            encoded.committed();
            let read = tree::decode(
                &root,
                &mut |hash: &str| nodes.get(hash).cloned().ok_or_else(|| hash.to_owned()),
                |message| message,
            );
            assert_eq!(
                read,
                Ok(snapshot.clone()),
                "after {} ({changed:?})",
                call.name
            );
        }
    }
}

/// The longest error text a function may leave under an output limit of `limit`: the head and
/// tail kept, and the marker saying how much was left out between them.
fn cut_length(limit: usize) -> usize {
    limit
        + "\n\n[… 1000000 characters omitted (characters 150–1000150) …]\n\n"
            .chars()
            .count()
}

/// Second round, finding 2: what a user function throws was never cut. A dry run answered the
/// thrown text four times whole (83 MB for a 20 MB message), and a passive function that throws
/// put its whole message into every message's errors of `SnapshotProcess` (a 419 MB answer for
/// 80 messages). Now each error is cut to the output limit where it leaves the engine.
#[tokio::test]
async fn a_function_error_is_cut_to_the_output_limit() {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(&config, "output_limit = 300\n").unwrap();
    let client = crate::common::spawn_binary(
        &["--config", config.to_str().unwrap()],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let thrower = "throw new Error('E'.repeat(200000));";
    let tested = call(
        &client,
        "FunctionTest",
        json!({"text": "GO()", "_outputLimit": 200, "function": {
            "name": "h", "type": "active", "pattern": "GO\\(\\)", "executor": thrower,
            "enabled": true}}),
    )
    .await;
    let tested = tested.structured_content.unwrap();
    let message = tested["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.chars().count() <= cut_length(300) && message.contains("characters omitted"),
        "{} characters: {}…",
        message.len(),
        message.get(..200).unwrap_or(message)
    );
    // Said once: the step points at it (it was the whole message again, in four copies of the
    // answer's text and structured content).
    assert_eq!(tested["steps"][0]["errors"], json!([0]));
    let whole = serde_json::to_string(&tested).unwrap();
    assert_eq!(
        whole.matches("characters omitted").count(),
        1,
        "{}",
        whole.len()
    );

    ok(
        &client,
        "FunctionUpsert",
        json!({"function": {
        "name": "P", "type": "passive", "timing": "after_active", "executor": thrower}}),
    )
    .await;
    let messages: Vec<Value> = (0..20).map(|index| ai(&format!("reply {index}"))).collect();
    let processed = call(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "thrown", "messages": messages}),
    )
    .await;
    let answer = serde_json::to_string(&processed).unwrap();
    let errors = processed.structured_content.unwrap()["errors"].clone();
    let errors = errors.as_array().unwrap();
    assert_eq!(
        errors.len(),
        20,
        "{}",
        answer.get(..2000).unwrap_or(&answer)
    );
    for error in errors {
        let message = error["message"].as_str().unwrap();
        assert!(
            message.chars().count() <= cut_length(300),
            "{} characters",
            message.len()
        );
    }
    // 20 messages × (text and structured) × a cut error, not 20 × 200,000 characters.
    assert!(answer.len() < 64 * 1024, "{} bytes", answer.len());
    client.cancel().await.unwrap();
}

/// A server whose function calls may each run a minute, and the texts' calls as long together:
/// only cancellation can stop them.
async fn patient_server() -> (RawSession, tempfile::TempDir) {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(
        &config,
        "[snapshots]\nscript_time_limit_ms = 60000\ntext_time_limit_ms = 60000\n",
    )
    .unwrap();
    let session = RawSession::initialized(&["--config", config.to_str().unwrap()]).await;
    (session, directory)
}

fn spinning_test(id: i64, calls: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "FunctionTest", "arguments": {"text": "GO() ".repeat(calls), "function": {
            "name": "h", "type": "active", "pattern": "GO\\(\\)", "executor": "while(true){}",
            "enabled": true}}}})
}

/// Second round, finding 10: a text of many slow calls ran each to its own limit (200 calls of
/// an endless loop: 50 s) whatever happened. Now the calls of one text share a budget (2 s by
/// default), and what did not run is listed as one error.
#[tokio::test]
async fn the_calls_of_one_text_stop_at_the_texts_budget() {
    let mut session = RawSession::initialized(&[]).await;
    let started = std::time::Instant::now();
    session.send(&spinning_test(1, 200)).await;
    let answer = session.response(1).await;
    let elapsed = started.elapsed();
    let errors = answer["result"]["structuredContent"]["errors"]
        .as_array()
        .unwrap();
    let not_run = errors.last().unwrap();
    assert_eq!(not_run["function"], json!("(not run)"), "{not_run}");
    let message = not_run["message"].as_str().unwrap();
    assert!(
        message.ends_with(
            "calls were not run: the calls of this text ran past their budget of 2000 ms together"
        ),
        "{message}"
    );
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
}

/// Finding 10: a cancelled dry run went on to its end (and kept the one JavaScript thread busy
/// for everyone). Now a cancellation interrupts the call that runs: the next call is answered
/// at once.
#[tokio::test]
async fn a_cancelled_dry_run_stops_inside_its_call() {
    let (mut session, _directory) = patient_server().await;
    session.send(&spinning_test(1, 3)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    session
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1, "reason": "enough"}}),
        )
        .await;
    let started = std::time::Instant::now();
    let tested = session
        .call(2, "FunctionTest", json!({"text": "@.SET(\"a\", 1);"}))
        .await;
    assert_eq!(
        tested["result"]["structuredContent"]["snapshot"],
        json!({"a": 1}),
        "{tested}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// Finding 10: after the client left, 2,000 slow calls burned a core for minutes. Now the
/// server exits at once.
#[tokio::test]
async fn a_dry_run_stops_when_the_client_leaves() {
    let (mut session, _directory) = patient_server().await;
    session.send(&spinning_test(1, 2_000)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (mut child, stdin, _stdout) = session.split();
    drop(stdin);
    let exited = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    assert!(
        exited.is_ok(),
        "the server was still running 10 s after its client left"
    );
}
