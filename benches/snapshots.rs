//! The budget for chat snapshots: `SnapshotProcess` of a 10,000-message chat with three
//! calls per AI reply, ≤ 200 ms. Measures a cold run (no message bound: 5,000 AI replies applied
//! and stored) and an incremental run (one new user message and one AI reply after a bound
//! chat), in process on the SQLite file store, both through `Snapshots::process` and through the
//! executor (`SnapshotProcess` with the arguments as JSON, as a client sends them), and reports
//! what each snapshot costs in the store. Run with `cargo bench --bench snapshots`.
#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]
#![allow(
    clippy::cast_precision_loss,
    reason = "counts and sizes far below 2^52"
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
use synapse_mcp::snapshots::Snapshots;
use synapse_mcp::snapshots::chat::ChatMessage;
use synapse_mcp::snapshots::javascript::Limits;
use synapse_mcp::store::{SqliteOptions, SqliteStore};

const MESSAGES: usize = 10_000;
const BUDGET: Duration = Duration::from_millis(200);

fn template() -> Value {
    json!({
        "世界": {"时间": "第1天 清晨", "地点": "魔都", "天气": "晴", "描述": "一座被雾笼罩的古城，街道两旁是石砌的房屋与挂着灯笼的小店。"},
        "角色": {"名字": "张三", "等级": 1, "生命值": 100, "魔力": 50, "金币": 500,
                 "属性": {"力量": 12, "敏捷": 14, "智力": 10, "体质": 13}},
        "背包": ["治疗药水", "魔法卷轴", "火把", "绳索"],
        "任务": [{"名称": "寻找失踪的商人", "状态": "进行中"}, {"名称": "清理地下室", "状态": "完成"}],
        "关系": {"李四": 20, "王五": -5, "酒馆老板": 40}
    })
}

/// A reply of ~400 characters of prose and three calls.
fn reply(index: usize) -> String {
    let places = ["魔都", "港口", "森林", "地下城", "酒馆"];
    format!(
        "夜色渐深，你沿着石板路走向{place}。风里带着潮湿的气味，远处传来钟声。你想起了今天的遭遇，\
         心中有些不安，但还是握紧了手中的火把。路边的摊贩正在收拾货物，一位老人向你点头致意。\
         你停下脚步，听他讲述关于这座城市的旧事：很多年前，这里曾是一片荒原……\n\
         @.ADD(\"角色.金币\", {gold});\n@.SET(\"世界.时间\", \"第{day}天 {part}\");\n@.SET(\"世界.地点\", \"{place}\");",
        place = places[index % places.len()],
        gold = i64::try_from(index % 7).unwrap_or(0) - 3,
        day = index / 4 + 1,
        part = ["清晨", "正午", "黄昏", "深夜"][index % 4],
    )
}

fn chat(messages: usize) -> Vec<Value> {
    (0..messages)
        .map(|index| {
            if index % 2 == 1 {
                json!({"is_user": true, "name": "You", "mes": "继续前进。", "swipe_id": 0, "swipes": ["继续前进。"], "send_date": 1_729_420_800_000_u64 + index as u64})
            } else {
                json!({"is_user": false, "name": "GM", "swipe_id": 0, "swipes": [reply(index)], "swipes_info": [{}], "send_date": 1_729_420_800_000_u64 + index as u64})
            }
        })
        .collect()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let directory =
        std::env::temp_dir().join(format!("synapse-snapshots-bench-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a temporary folder");
    let path = directory.join("synapse.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).expect("store");
    let service = Snapshots::new(store, "bench", Limits::default());
    let raw = chat(MESSAGES);
    let messages: Vec<ChatMessage> =
        serde_json::from_value(Value::Array(raw.clone())).expect("messages");

    // Cold: nothing bound; every run stores 5,000 new snapshots (under a new chat name).
    let mut cold = Vec::new();
    let mut bound = messages.clone();
    let mut report = None;
    for run in 0..5 {
        let started = Instant::now();
        let processed = service
            .process(
                &format!("cold-{run}"),
                &messages,
                None,
                Some(template()),
                &|| false,
            )
            .expect("process");
        cold.push(started.elapsed());
        if run == 0 {
            assert!(
                processed.errors.is_empty(),
                "{:?}",
                processed.errors.first()
            );
            for binding in &processed.bindings {
                bound[binding.message_index].bind(&binding.snapshot_id);
            }
            report = Some(processed.storage);
        }
    }
    let report = report.expect("a first run");

    // Incremental: the bound chat plus one user message and one new AI reply.
    let mut incremental = Vec::new();
    for run in 0..50 {
        let mut grown = bound.clone();
        grown.extend(
            serde_json::from_value::<Vec<ChatMessage>>(Value::Array(
                chat(MESSAGES + 2).split_off(MESSAGES),
            ))
            .expect("tail"),
        );
        let started = Instant::now();
        let processed = service
            .process("cold-0", &grown, None, Some(template()), &|| false)
            .expect("process");
        incremental.push(started.elapsed());
        assert_eq!(processed.bindings.len(), 1, "run {run}");
    }

    // Through the executor, with the messages as JSON arguments (what a client sends).
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
    let mut through_executor = Vec::new();
    for run in 0..3 {
        let arguments = json!({"chatFile": format!("executor-{run}"), "messages": raw, "template": template(), "_outputLimit": 2000});
        let request = synapse_mcp::tools::CallRequest {
            tool: "SnapshotProcess",
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
        through_executor.push(started.elapsed());
        assert!(
            matches!(outcome, synapse_mcp::tools::Outcome::Finished(_)),
            "run {run}"
        );
    }

    let file_bytes = std::fs::metadata(&path).map_or(0, |metadata| metadata.len())
        + std::fs::metadata(directory.join("synapse.db-wal")).map_or(0, |metadata| metadata.len());
    let ai_replies = MESSAGES / 2;
    let row = |figure: &str, measured: Duration, budget: Option<Duration>| {
        let verdict = budget.map_or(
            "",
            |budget| if measured <= budget { "met" } else { "MISSED" },
        );
        let budget = budget.map_or_else(
            || "-".to_owned(),
            |budget| format!("{} ms", budget.as_millis()),
        );
        println!(
            "{figure:<62} {:>10.2} ms {budget:>8}  {verdict}",
            measured.as_secs_f64() * 1e3
        );
    };
    println!(
        "SnapshotProcess, {MESSAGES} messages ({ai_replies} AI replies, 3 calls each), SQLite file store"
    );
    row(
        "cold, in process (Snapshots::process), median of 5",
        median(cold),
        Some(BUDGET),
    );
    row(
        "cold, through the executor (arguments as JSON), median of 3",
        median(through_executor),
        Some(BUDGET),
    );
    row(
        "incremental (1 new AI reply), median of 50",
        median(incremental),
        None,
    );
    println!(
        "store: {} new tree nodes, {} bytes for {} snapshots = {:.0} bytes per snapshot (a whole state is {} bytes as JSON); database + WAL after 5 cold runs: {:.1} MB",
        report.new_nodes,
        report.new_bytes,
        report.snapshots,
        report.new_bytes as f64 / report.snapshots as f64,
        template().to_string().len(),
        file_bytes as f64 / 1e6
    );

    // What sharing buys on a larger state (~12 KB: a world with many places and characters).
    let mut large = template();
    for index in 0..60 {
        large["人物"][format!("角色{index}")] = json!({"描述": format!("第{index}位人物，住在城市的某个角落，有着自己的故事和秘密。"), "好感": index});
    }
    let large_bytes = large.to_string().len();
    let large_run = service
        .process("large", &messages, None, Some(large), &|| false)
        .expect("process");
    println!(
        "with a {large_bytes}-byte state: {:.0} bytes per snapshot ({:.1}% of a full copy)",
        large_run.storage.new_bytes as f64 / large_run.storage.snapshots as f64,
        100.0 * large_run.storage.new_bytes as f64
            / (large_run.storage.snapshots as f64 * large_bytes as f64)
    );
    drop(app);
    std::fs::remove_dir_all(&directory).ok();
}
