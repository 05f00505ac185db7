//! Soak: the real binary on an SQLite workspace under a mixed concurrent load — variables,
//! `$VAR_REF` references, skills, plans, state and chat snapshots — for a bounded time, then the
//! invariants a user relies on: every request answered, every acknowledged write readable (before
//! and after a restart), every snapshot of a live chat intact although other workers' chats were
//! deleted and their shared nodes swept meanwhile, the capacity never exceeded although eviction
//! ran.
//!
//! The load runs `SYNAPSE_SOAK_SECONDS` seconds (default 15, the CI setting); set it higher to
//! soak longer: `SYNAPSE_SOAK_SECONDS=600 cargo test --test it soak -- --nocapture`.

use std::path::Path;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use rmcp::Peer;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

use crate::common::{Elicitation, TestClient, copy_tree, manifest, spawn_binary, text};

/// Concurrent clients' worth of load (tasks sharing one session, as an agent's parallel calls).
const WORKERS: usize = 4;
/// Variables each worker overwrites in turn.
const SLOTS: usize = 4;
/// Small enough that the cached results of the load overflow it many times.
const CAPACITY: usize = 500;
/// AI replies per chat before its worker deletes the chat and starts the next one.
const CHAT_LENGTH: usize = 12;
/// Long enough to be a stored tree node of its own: every worker's snapshots share it, so
/// deleting one worker's chat sweeps nodes while the others' snapshots still point at this one.
const LORE: &str =
    "The city of Soak stands where four rivers meet; every traveller pays one coin at the gate.";

/// What one worker saw acknowledged.
#[derive(Debug, Default)]
struct Ledger {
    /// The last acknowledged value of each of the worker's variables, by slot.
    values: Vec<Option<String>>,
    /// The last acknowledged state value of the worker.
    state: Option<u64>,
    /// Snapshots of the worker's live chat: id and the state it must hold.
    snapshots: Vec<(String, Value)>,
    /// Snapshots of the worker's deleted chats, the most recent last.
    deleted: Vec<String>,
    requests: usize,
    answered: usize,
    /// Calls of tools whose results are cached as two variables each.
    cached_calls: usize,
}

fn soak_duration() -> Duration {
    let seconds = std::env::var("SYNAPSE_SOAK_SECONDS")
        .ok()
        .map_or(15, |text| {
            text.parse()
                .unwrap_or_else(|_| panic!("SYNAPSE_SOAK_SECONDS={text:?} is not whole seconds"))
        });
    Duration::from_secs(seconds)
}

fn structured(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("no structured content in {result:?}"))
}

/// One call with a deadline; a call never answered fails the soak.
async fn call(
    peer: &Peer<RoleClient>,
    ledger: &mut Ledger,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    ledger.requests += 1;
    let request =
        peer.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments));
    let result = tokio::time::timeout(Duration::from_mins(1), request)
        .await
        .unwrap_or_else(|_| panic!("{tool} was not answered within a minute"))
        .unwrap_or_else(|error| panic!("{tool} failed at the protocol level: {error}"));
    ledger.answered += 1;
    result
}

fn name(worker: usize, slot: usize) -> String {
    format!("soak-{worker}-{slot}")
}

/// A worker's chat as a SillyTavern client holds it: messages with the snapshot ids the server
/// bound written back, and the tag of each AI message's selected swipe.
struct Chat {
    worker: usize,
    generation: u64,
    messages: Vec<Value>,
    tags: Vec<String>,
}

impl Chat {
    fn new(worker: usize) -> Self {
        Self {
            worker,
            generation: 0,
            messages: Vec::new(),
            tags: Vec::new(),
        }
    }

    fn file(&self) -> String {
        format!("soak-chat-{}-{}", self.worker, self.generation)
    }

    /// The state the selected swipes' calls build from the template.
    fn expected(&self) -> Value {
        json!({"lore": LORE, "turns": self.tags.len(), "log": self.tags, "last": self.tags.last()})
    }

    fn reply(tag: &str) -> String {
        format!(
            "好的。 @.ADD(\"turns\", 1); @.SET(\"last\", \"{tag}\"); @.APPEND(\"log\", \"{tag}\");"
        )
    }

    /// A new user message and AI reply, or a regenerated (new, selected) swipe of the last reply.
    fn advance(&mut self, tag: String, regenerate: bool) {
        if regenerate && !self.tags.is_empty() {
            let last = self.messages.last_mut().unwrap();
            last["swipes"]
                .as_array_mut()
                .unwrap()
                .push(json!(Self::reply(&tag)));
            last["swipes_info"].as_array_mut().unwrap().push(json!({}));
            last["swipe_id"] = json!(last["swipes"].as_array().unwrap().len() - 1);
            *self.tags.last_mut().unwrap() = tag;
        } else {
            self.messages
                .push(json!({"is_user": true, "mes": "继续", "swipe_id": 0, "swipes": ["继续"]}));
            self.messages.push(json!({"is_user": false, "swipe_id": 0, "swipes": [Self::reply(&tag)], "swipes_info": [{}]}));
            self.tags.push(tag);
        }
    }

    /// Writes the server's bindings back into the messages, as a client does.
    fn bind(&mut self, processed: &Value) {
        for binding in processed["bindings"].as_array().unwrap() {
            let index = usize::try_from(binding["messageIndex"].as_u64().unwrap()).unwrap();
            let swipe = usize::try_from(binding["swipeId"].as_u64().unwrap()).unwrap();
            self.messages[index]["swipes_info"][swipe]["st_var_system_snapshot_id"] =
                binding["snapshotId"].clone();
        }
    }
}

/// One round of chat: a reply or a regenerated swipe processed incrementally, the result checked
/// against the calls made; a snapshot applied on top of it; every `CHAT_LENGTH` replies the chat
/// is deleted (sweeping its nodes while other workers write theirs) and a new one begins.
async fn chat_round(peer: &Peer<RoleClient>, ledger: &mut Ledger, chat: &mut Chat, round: u64) {
    if chat.tags.len() >= CHAT_LENGTH {
        let deleted = call(
            peer,
            ledger,
            "SnapshotDeleteChat",
            json!({"chatFile": chat.file()}),
        )
        .await;
        assert_eq!(
            structured(&deleted)["deleted"],
            json!(ledger.snapshots.len()),
            "{}",
            text(&deleted)
        );
        ledger
            .deleted
            .extend(ledger.snapshots.drain(..).map(|(id, _)| id));
        *chat = Chat {
            generation: chat.generation + 1,
            ..Chat::new(chat.worker)
        };
    }
    let tag = format!("{}-{round}", chat.worker);
    chat.advance(tag.clone(), round.is_multiple_of(3));
    let processed = call(
        peer,
        ledger,
        "SnapshotProcess",
        json!({"chatFile": chat.file(), "messages": chat.messages, "characterId": "soak"}),
    )
    .await;
    let processed = structured(&processed).clone();
    assert_eq!(processed["errors"], json!([]), "{processed}");
    assert_eq!(
        processed["bindings"].as_array().unwrap().len(),
        1,
        "only the new reply or swipe is processed: {processed}"
    );
    assert_eq!(processed["vs_stat_data"], chat.expected(), "{processed}");
    chat.bind(&processed);
    let latest = processed["latestSnapshotId"].as_str().unwrap().to_owned();
    ledger.snapshots.push((latest.clone(), chat.expected()));

    let applied = call(
        peer,
        ledger,
        "SnapshotApply",
        json!({"chatFile": chat.file(), "baseId": latest, "characterId": "soak",
               "text": format!("@.SET(\"applied\", \"{tag}\");")}),
    )
    .await;
    let applied = structured(&applied).clone();
    let mut expected = chat.expected();
    expected["applied"] = json!(tag);
    assert_eq!(applied["snapshot"], expected, "{applied}");
    ledger
        .snapshots
        .push((applied["snapshotId"].as_str().unwrap().to_owned(), expected));
}

/// One worker's loop: write, read back, copy by reference, search or load a skill, run a plan,
/// write state; every result checked as it comes.
async fn work(peer: Peer<RoleClient>, worker: usize, until: Instant) -> Ledger {
    let mut ledger = Ledger {
        values: vec![None; SLOTS],
        ..Ledger::default()
    };
    let mut chat = Chat::new(worker);
    let mut round: u64 = 0;
    while Instant::now() < until {
        round += 1;
        let slot = usize::try_from(round).unwrap() % SLOTS;
        let variable = name(worker, slot);
        let value = format!(
            "worker {worker} round {round} {}",
            "x".repeat(usize::try_from(round % 7).unwrap() * 100)
        );
        let written = call(
            &peer,
            &mut ledger,
            "WriteVar",
            json!({"name": variable, "value": value}),
        )
        .await;
        assert_eq!(written.is_error, Some(false), "{}", text(&written));
        ledger.values[slot] = Some(value.clone());

        let read = call(&peer, &mut ledger, "ReadVar", json!({"name": variable})).await;
        assert!(text(&read).ends_with(&value), "read back {}", text(&read));

        let copy = format!("soak-copy-{worker}");
        let copied = call(&peer, &mut ledger, "WriteVar",
            json!({"name": copy, "value": format!("<$VAR_REF{{{{{variable}}}}}|$VAR_REF{{{{{variable}:0:6}}}}>")})).await;
        assert_eq!(copied.is_error, Some(false), "{}", text(&copied));
        let read = call(&peer, &mut ledger, "ReadVar", json!({"name": copy})).await;
        assert!(
            text(&read).ends_with(&format!("<{value}|worker>")),
            "{}",
            text(&read)
        );

        let skill = if round.is_multiple_of(2) {
            call(
                &peer,
                &mut ledger,
                "SkillSearch",
                json!({"query": "merge pdf files"}),
            )
            .await
        } else {
            call(
                &peer,
                &mut ledger,
                "SkillLoad",
                json!({"name": "csv-cleaner", "force": true}),
            )
            .await
        };
        assert_eq!(skill.is_error, Some(false), "{}", text(&skill));
        ledger.cached_calls += 1;

        let plan = json!({"input": {"n": round}, "steps": [
            {"_id": "put", "_tool": "WriteState", "path": format!("soak.plan-{worker}"), "value": "†input.n",
             "_outputPath": format!("†state.soak.trace-{worker}")},
            {"_id": "copy", "_tool": "WriteVar", "name": format!("soak-plan-{worker}"), "value": "†steps.put"}
        ]});
        let ran = call(&peer, &mut ledger, "RunPlan", plan).await;
        assert_eq!(structured(&ran)["ok"], json!(true), "{}", text(&ran));
        ledger.cached_calls += 2;

        let state = call(
            &peer,
            &mut ledger,
            "WriteState",
            json!({"path": format!("soak.worker-{worker}"), "value": round}),
        )
        .await;
        assert_eq!(state.is_error, Some(false), "{}", text(&state));
        ledger.state = Some(round);
        ledger.cached_calls += 1;

        chat_round(&peer, &mut ledger, &mut chat, round).await;
    }
    ledger
}

/// Every worker's last acknowledged variables and state, as the server has them now.
async fn check_acknowledged(peer: &Peer<RoleClient>, ledgers: &[Ledger]) {
    let mut scratch = Ledger::default();
    for (worker, ledger) in ledgers.iter().enumerate() {
        for (slot, value) in ledger.values.iter().enumerate() {
            let Some(value) = value else { continue };
            let read = call(
                peer,
                &mut scratch,
                "ReadVar",
                json!({"name": name(worker, slot)}),
            )
            .await;
            assert_eq!(
                read.is_error,
                Some(false),
                "acknowledged {} lost: {}",
                name(worker, slot),
                text(&read)
            );
            assert!(
                text(&read).ends_with(value.as_str()),
                "{} holds {}",
                name(worker, slot),
                text(&read)
            );
        }
        let state = call(
            peer,
            &mut scratch,
            "ReadState",
            json!({"path": format!("soak.worker-{worker}")}),
        )
        .await;
        let expected = ledger
            .state
            .expect("every worker finished a round")
            .to_string();
        assert!(
            text(&state).ends_with(&format!("\n{expected}")),
            "state of worker {worker}: {}",
            text(&state)
        );
        for (id, expected) in &ledger.snapshots {
            let stored = call(peer, &mut scratch, "SnapshotGet", json!({"id": id})).await;
            assert_eq!(
                &structured(&stored)["snapshot"],
                expected,
                "snapshot {id} of worker {worker}"
            );
        }
        for id in ledger.deleted.iter().rev().take(50) {
            let gone = call(peer, &mut scratch, "SnapshotGet", json!({"id": id})).await;
            assert!(
                gone.is_error == Some(true) && text(&gone).contains("no snapshot"),
                "snapshot {id} of a deleted chat: {}",
                text(&gone)
            );
        }
    }
}

async fn variable_count(peer: &Peer<RoleClient>) -> usize {
    let listed = call(peer, &mut Ledger::default(), "ListVars", json!({})).await;
    structured(&listed)["variables"].as_array().unwrap().len()
}

async fn durable_client(data: &Path, skills: &Path, config: &Path) -> crate::common::Client {
    let args = [
        "--data-dir",
        data.to_str().unwrap(),
        "--skills",
        skills.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ];
    spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await
}

#[allow(
    clippy::print_stderr,
    clippy::cast_precision_loss,
    reason = "the soak reports its rate for people reading the test log"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_concurrent_load_loses_no_acknowledged_write() {
    let directory = tempfile::tempdir().unwrap();
    let skills = directory.path().join("skills");
    copy_tree(&manifest("tests/fixtures/skills"), &skills);
    let config = directory.path().join("config.toml");
    // The soak deletes chats as a client that cannot be asked would, with deleting allowed.
    std::fs::write(
        &config,
        format!("capacity = {CAPACITY}\n\n[tools.SnapshotDeleteChat]\nexecution = \"auto\"\n"),
    )
    .unwrap();
    let data = directory.path().join("data");
    let client = durable_client(&data, &skills, &config).await;
    let template = call(
        client.peer(),
        &mut Ledger::default(),
        "TemplateSet",
        json!({"characterId": "soak", "template": {"lore": LORE, "turns": 0, "log": []}}),
    )
    .await;
    assert_eq!(template.is_error, Some(false), "{}", text(&template));

    let started = Instant::now();
    let until = started + soak_duration();
    let workers: Vec<_> = (0..WORKERS)
        .map(|worker| tokio::spawn(work(client.peer().clone(), worker, until)))
        .collect();
    let mut ledgers = Vec::new();
    for worker in workers {
        ledgers.push(worker.await.unwrap());
    }
    let elapsed = started.elapsed();
    let requests: usize = ledgers.iter().map(|ledger| ledger.requests).sum();
    let answered: usize = ledgers.iter().map(|ledger| ledger.answered).sum();
    let cached: usize = ledgers.iter().map(|ledger| ledger.cached_calls).sum();
    let snapshots: usize = ledgers
        .iter()
        .map(|ledger| ledger.snapshots.len() + ledger.deleted.len())
        .sum();
    eprintln!(
        "soak: {requests} requests in {elapsed:.1?} ({:.0}/s) over {WORKERS} workers, {} variables cached, {snapshots} snapshots",
        requests as f64 / elapsed.as_secs_f64(),
        cached * 2
    );
    assert_eq!(answered, requests, "every request is answered");
    assert!(
        cached * 2 > CAPACITY,
        "the soak cached only {} results: too short to exercise eviction at capacity {CAPACITY}",
        cached * 2
    );
    check_invariants(client.peer(), &ledgers, "after the load").await;
    client.cancel().await.unwrap();

    let restarted = durable_client(&data, &skills, &config).await;
    check_invariants(restarted.peer(), &ledgers, "after a restart").await;
    restarted.cancel().await.unwrap();
}

/// Every acknowledged write readable, every live snapshot intact, the capacity respected.
async fn check_invariants(peer: &Peer<RoleClient>, ledgers: &[Ledger], when: &str) {
    check_acknowledged(peer, ledgers).await;
    let count = variable_count(peer).await;
    assert!(
        count <= CAPACITY,
        "{count} variables {when} at capacity {CAPACITY}"
    );
}
