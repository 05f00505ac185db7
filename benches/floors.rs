//! The budgets for a chat's floors, on a 10,000-message chat (5,000 AI replies, three built-in
//! calls each) in the SQLite file store holding five such chats (each of its own character, so
//! they share no state): `SnapshotList` ≤ 20 ms, and `SnapshotReprocess` from the middle
//! (message 5,000 on) no slower than processing the whole chat from scratch — both with the
//! same messages (every reply regenerated alike: the new states are the old ones) and after the
//! reply at 5,000 was edited (every later state changes, so the old ones' nodes are freed).
//! Measured in process (`Snapshots::floors`, `Snapshots::reprocess`, `Snapshots::process`) and
//! `SnapshotList` through the executor as well (arguments and result as JSON, the result cut to
//! the output limit and cached); `SnapshotList` both as a client calls it by default (the
//! newest page of floors) and for every floor in one page. Run with `cargo bench --bench floors`.
#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]
#![allow(
    clippy::too_many_lines,
    reason = "the benchmark reads top to bottom: set up, measure, report"
)]
#![allow(
    clippy::expect_used,
    reason = "a benchmark that cannot set up should stop at once"
)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use synapse_mcp::snapshots::chat::ChatMessage;
use synapse_mcp::snapshots::javascript::Limits;
use synapse_mcp::snapshots::{FloorQuery, PAGE, Snapshots, Start};
use synapse_mcp::store::{SqliteOptions, SqliteStore};

const MESSAGES: usize = 10_000;
const MIDDLE: usize = MESSAGES / 2;
const LIST_BUDGET: Duration = Duration::from_millis(20);

/// The starting state of the chat of character `name`.
fn template(name: &str) -> Value {
    json!({
        "世界": {"时间": "第1天 清晨", "地点": "魔都"},
        "角色": {"名字": name, "生命值": 100, "金币": 500},
        "背包": ["治疗药水", "魔法卷轴"]
    })
}

/// The reply at `index` after it was edited: it gives far more gold, so every later state
/// differs from the one stored before.
fn edited(index: usize) -> ChatMessage {
    let reply = format!("你找到了宝藏。\n@.ADD(\"角色.金币\", {});", 1_000 + index);
    serde_json::from_value(
        json!({"is_user": false, "swipe_id": 0, "swipes": [reply], "swipes_info": [{}]}),
    )
    .expect("an edited message")
}

/// Binds each message to the snapshot `bindings` gives it.
fn bind(chat: &mut [ChatMessage], bindings: &[synapse_mcp::snapshots::chat::Binding]) {
    for binding in bindings {
        chat[binding.message_index].bind(&binding.snapshot_id);
    }
}

/// Even messages are AI replies with three calls; odd ones the user's.
fn chat() -> Vec<ChatMessage> {
    let places = ["魔都", "港口", "森林", "地下城", "酒馆"];
    let raw: Vec<Value> = (0..MESSAGES)
        .map(|index| {
            if index % 2 == 1 {
                json!({"is_user": true, "mes": "继续前进。"})
            } else {
                let reply = format!(
                    "你走向{place}。\n@.ADD(\"角色.金币\", {gold});\n@.SET(\"世界.时间\", \"第{day}天\");\n@.SET(\"世界.地点\", \"{place}\");",
                    place = places[index % places.len()],
                    gold = index % 7,
                    day = index / 4 + 1,
                );
                json!({"is_user": false, "swipe_id": 0, "swipes": [reply], "swipes_info": [{}]})
            }
        })
        .collect();
    serde_json::from_value(Value::Array(raw)).expect("messages")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn milliseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn main() {
    let directory =
        std::env::temp_dir().join(format!("synapse-floors-bench-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a temporary folder");
    let store =
        SqliteStore::open(&directory.join("synapse.db"), SqliteOptions::default()).expect("store");
    let service = Snapshots::new(store, "bench", Limits::default());
    let messages = chat();
    let starts: Vec<Start<'_>> = (0..5)
        .map(|run| Start {
            template: Some(template(&format!("张三{run}"))),
            ..Start::default()
        })
        .collect();

    // Whole chats from scratch, each of a character of its own, bound for what follows.
    let mut full = Vec::new();
    let mut bound = Vec::new();
    for (run, start) in starts.iter().enumerate() {
        let started = Instant::now();
        let processed = service
            .process_from(
                &format!("chat-{run}"),
                &messages,
                start,
                &|| false,
                &|_, _| {},
            )
            .expect("process");
        full.push(started.elapsed());
        let mut chat = messages.clone();
        bind(&mut chat, &processed.bindings);
        bound.push(chat);
    }

    // Reprocess each chat from the middle: with the same messages, then after an edit there.
    let mut reprocess = Vec::new();
    let mut reprocess_edited = Vec::new();
    for (run, (chat, start)) in bound.iter_mut().zip(&starts).enumerate() {
        let name = format!("chat-{run}");
        let started = Instant::now();
        let reprocessed = service
            .reprocess(&name, MIDDLE, chat, start, &|| false, &|_, _| {})
            .expect("reprocess");
        reprocess.push(started.elapsed());
        assert_eq!(
            reprocessed.processed.bindings.len(),
            MIDDLE / 2,
            "run {run}"
        );
        assert_eq!(reprocessed.deleted, (MIDDLE / 2) as u64, "run {run}");
        bind(chat, &reprocessed.processed.bindings);
        let mut edit = chat.clone();
        edit[MIDDLE] = edited(MIDDLE);
        let started = Instant::now();
        let reprocessed = service
            .reprocess(&name, MIDDLE, &edit, start, &|| false, &|_, _| {})
            .expect("reprocess an edited chat");
        reprocess_edited.push(started.elapsed());
        assert_eq!(reprocessed.deleted, (MIDDLE / 2) as u64, "run {run}");
    }

    // The default page (the newest floors), and every floor in one page.
    let everything = FloorQuery {
        from_index: Some(0),
        limit: Some(MESSAGES as u64),
        ..FloorQuery::default()
    };
    let (mut list, mut list_all) = (Vec::new(), Vec::new());
    for _ in 0..50 {
        let started = Instant::now();
        let page = service
            .floors("chat-0", FloorQuery::default())
            .expect("floors");
        list.push(started.elapsed());
        assert_eq!(
            (page.floors.len() as u64, page.total),
            (PAGE, (MESSAGES / 2) as u64)
        );
        let started = Instant::now();
        let all = service.floors("chat-0", everything).expect("floors");
        list_all.push(started.elapsed());
        assert_eq!(all.floors.len(), MESSAGES / 2);
    }

    // Through the executor, as a client calls it.
    let cli = <synapse_mcp::config::Cli as clap::Parser>::parse_from([
        "synapse-mcp",
        "--data-dir",
        directory.join("executor").to_str().expect("a UTF-8 path"),
    ]);
    let config = synapse_mcp::app::Settings::load(&cli).expect("config");
    let app = synapse_mcp::app::App::open(&config).expect("app");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let execute = |tool: &'static str, arguments: Value| {
        let request = synapse_mcp::tools::CallRequest {
            tool,
            arguments: arguments.as_object().cloned(),
            asking: synapse_mcp::tools::Asking::Unavailable,
            resume: None,
            cancellation: tokio_util::sync::CancellationToken::new(),
            plan: None,
            progress: None,
            sampler: None,
            relay: None,
            approved: None,
            audience: synapse_mcp::tools::Audience::Model,
        };
        let started = Instant::now();
        let outcome = runtime.block_on(app.executor().execute(request));
        assert!(
            matches!(outcome, synapse_mcp::tools::Outcome::Finished(_)),
            "{tool}"
        );
        started.elapsed()
    };
    let raw = serde_json::to_value(&messages).expect("messages as JSON");
    execute(
        "SnapshotProcess",
        json!({"chatFile": "executor", "messages": raw, "template": template("张三")}),
    );
    let (mut through_executor, mut through_executor_all) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        through_executor.push(execute("SnapshotList", json!({"chatFile": "executor"})));
        through_executor_all.push(execute(
            "SnapshotList",
            json!({"chatFile": "executor", "fromIndex": 0, "limit": MESSAGES}),
        ));
    }

    let full = median(full);
    println!(
        "Floors of a {MESSAGES}-message chat ({} AI replies, 3 calls each), SQLite file store",
        MESSAGES / 2
    );
    let report = |figure: &str, samples: Vec<Duration>, budget: Option<Duration>| {
        let measured = median(samples);
        let verdict = match budget {
            Some(budget) if measured <= budget => {
                format!("budget {:.2} ms  met", milliseconds(budget))
            }
            Some(budget) => format!("budget {:.2} ms  MISSED", milliseconds(budget)),
            None => String::new(),
        };
        println!("{figure:<72} {:>9.2} ms  {verdict}", milliseconds(measured));
    };
    report(
        "SnapshotList, newest page, in process (Snapshots::floors), median of 50",
        list,
        Some(LIST_BUDGET),
    );
    report(
        "SnapshotList, newest page, through the executor, median of 20",
        through_executor,
        Some(LIST_BUDGET),
    );
    report(
        "SnapshotList, every floor in one page, in process, median of 50",
        list_all,
        None,
    );
    report(
        "SnapshotList, every floor in one page, through the executor, median of 20",
        through_executor_all,
        None,
    );
    report(
        "SnapshotProcess of the whole chat, median of 5",
        vec![full],
        None,
    );
    report(
        &format!("SnapshotReprocess from message {MIDDLE}, median of 5"),
        reprocess,
        Some(full),
    );
    report(
        &format!("SnapshotReprocess from message {MIDDLE}, edited there, median of 5"),
        reprocess_edited,
        Some(full),
    );
    drop(app);
    std::fs::remove_dir_all(&directory).ok();
}
