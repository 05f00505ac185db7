//! In-process benchmarks for the performance budgets (BENCHMARKS.md): `$VAR_REF` resolution throughput over large
//! arguments (≥ 300 MB/s), variable writes with eviction at capacity 100,000 (≥ 1,000,000 per
//! second), the skills library (search over 10,000 skills, a cached `SkillLoad` body, a warm
//! catalog of 200 skills), workspace reads and writes on both stores and 1,000-step plans.
//! Criterion measures; afterwards each figure is printed beside its budget. The rows measured
//! over stdio (round trips, start-up, resident memory) come from `examples/stdio_roundtrip.rs`
//! and `examples/skills_bench.rs`; `SnapshotProcess` of a 10,000-message chat by
//! `benches/snapshots.rs`.
//! Run with `cargo bench --bench budgets` (one group: `cargo bench --bench budgets -- skills`).
#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]
#![allow(
    clippy::cast_precision_loss,
    reason = "byte and element counts far below 2^52"
)]
#![allow(
    clippy::expect_used,
    reason = "a benchmark that cannot set up should stop at once"
)]

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

#[path = "../examples/support/synthetic_skills.rs"]
#[allow(dead_code, reason = "the examples use more of it than the benchmarks")]
mod synthetic_skills;

use criterion::{BatchSize, Criterion, Throughput};
use serde_json::{Value, json};
use synapse_mcp::folders::Indexes;
use synapse_mcp::groups::skills::{instructions, skill_content};
use synapse_mcp::refs;
use synapse_mcp::skills::Library;
use synapse_mcp::skills::discover::{Root, RootKind};
use synapse_mcp::skills::sections::DEFAULT_BODY_LIMIT;
use synapse_mcp::store::{SqliteOptions, SqliteStore};
use synapse_mcp::vars::{NewVariable, SystemClock, ValueKind, VarType, VariableSystem};
use synapse_mcp::workspace::Workspace;

const MEGABYTE: usize = 1 << 20;

fn lookup_of(
    system: &mut VariableSystem,
) -> impl FnMut(&str) -> Option<(Arc<str>, ValueKind)> + '_ {
    |name: &str| system.resolve_reference(name)
}

/// Eight megabytes of prose with no reference at all: the common case, a pure scan.
fn plain_arguments() -> Value {
    json!({ "text": "lorem ipsum dolor sit amet, ".repeat(8 * MEGABYTE / 28) })
}

/// Eight megabytes of prose with a reference every 64 KB, each pulling in a 1 KB slice.
fn referencing_arguments() -> Value {
    let chunk = "consectetur adipiscing elit ".repeat(64 * 1024 / 28);
    let mut text = String::new();
    for _ in 0..128 {
        text.push_str(&chunk);
        text.push_str("$VAR_REF{{page:100:1000}}");
    }
    json!({ "text": text })
}

/// Ten thousand small strings in nested objects, one in a hundred with a reference.
fn many_small_arguments() -> Value {
    let items: Vec<Value> = (0..10_000)
        .map(|index| {
            let text = if index % 100 == 0 {
                "see $VAR_REF{{page:0:200}}".to_owned()
            } else {
                format!("item number {index} of the list")
            };
            json!({ "id": index, "text": text, "tags": ["a", "b"] })
        })
        .collect();
    json!({ "items": items })
}

fn text_bytes(value: &Value) -> u64 {
    match value {
        Value::String(text) => text.len() as u64,
        Value::Array(items) => items.iter().map(text_bytes).sum(),
        Value::Object(members) => members.values().map(text_bytes).sum(),
        _ => 0,
    }
}

fn bench_references(criterion: &mut Criterion) {
    let mut system = VariableSystem::new(1000, Arc::new(SystemClock::new()));
    system.insert(NewVariable::text(
        "page",
        "x".repeat(64 * 1024),
        VarType::LlmAdd,
    ));
    let mut group = criterion.benchmark_group("refs");
    for (name, arguments) in [
        ("plain_8mb", plain_arguments()),
        ("referencing_8mb", referencing_arguments()),
        ("many_small", many_small_arguments()),
    ] {
        group.throughput(Throughput::Bytes(text_bytes(&arguments)));
        group.bench_function(name, |bencher| {
            bencher.iter_batched_ref(
                || arguments.clone(),
                |arguments| refs::resolve_value(arguments, &mut lookup_of(&mut system)),
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

const WRITES_PER_ITERATION: u64 = 10_000;

fn bench_writes(criterion: &mut Criterion) {
    let mut system = VariableSystem::new(100_000, Arc::new(SystemClock::new()));
    for index in 0..100_000 {
        system.insert(NewVariable::text(
            format!("seed-{index}"),
            "value",
            VarType::LlmAdd,
        ));
    }
    let mut next = 0_u64;
    let mut group = criterion.benchmark_group("vars");
    group.throughput(Throughput::Elements(WRITES_PER_ITERATION));
    group.bench_function("writes_at_capacity_100k", |bencher| {
        bencher.iter(|| {
            for _ in 0..WRITES_PER_ITERATION {
                next += 1;
                let outcome = system.insert(NewVariable::text(
                    format!("v{next}"),
                    "a short value",
                    VarType::ToolCallResult,
                ));
                black_box(outcome);
            }
        });
    });
    group.finish();
}

/// Criterion's mean estimate for one benchmark, in nanoseconds per iteration.
fn mean_nanoseconds(group: &str, function: &str) -> Option<f64> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    let path = target
        .join("criterion")
        .join(group)
        .join(function)
        .join("new/estimates.json");
    let estimates: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    estimates["mean"]["point_estimate"].as_f64()
}

#[expect(
    clippy::too_many_lines,
    reason = "one table of every figure beside its budget; the 80-line limit is for src/"
)]
fn report() {
    println!(
        "\n{:<40} {:>18} {:>18}  verdict",
        "figure", "measured", "budget"
    );
    let per_second = |group: &str, function: &str, units: f64| {
        mean_nanoseconds(group, function).map(|nanoseconds| units / (nanoseconds / 1e9))
    };
    let cases = [
        (
            "refs/plain_8mb",
            per_second("refs", "plain_8mb", text_bytes(&plain_arguments()) as f64),
            300e6,
            "B/s",
        ),
        (
            "refs/referencing_8mb",
            per_second(
                "refs",
                "referencing_8mb",
                text_bytes(&referencing_arguments()) as f64,
            ),
            300e6,
            "B/s",
        ),
        (
            "refs/many_small",
            per_second(
                "refs",
                "many_small",
                text_bytes(&many_small_arguments()) as f64,
            ),
            300e6,
            "B/s",
        ),
        (
            "vars/writes_at_capacity_100k",
            per_second(
                "vars",
                "writes_at_capacity_100k",
                WRITES_PER_ITERATION as f64,
            ),
            1e6,
            "/s",
        ),
    ];
    for (label, function) in [
        ("plan validation", "validate_1000_steps"),
        ("plan execution", "run_1000_steps"),
    ] {
        let per_step = mean_nanoseconds("plans", function).unwrap_or(f64::NAN) / PLAN_STEPS as f64;
        println!(
            "{label} of a {PLAN_STEPS}-step plan: {:.1} µs per step",
            per_step / 1e3
        );
    }
    let nanoseconds = |function: &str| mean_nanoseconds("workspace", function).unwrap_or(f64::NAN);
    let (read_memory, read_sqlite) = (
        nanoseconds("read_1kb_memory"),
        nanoseconds("read_1kb_sqlite"),
    );
    let (write_memory, write_sqlite) = (
        nanoseconds("write_1kb_memory"),
        nanoseconds("write_1kb_sqlite"),
    );
    println!(
        "workspace read of 1 KB: {:.2} µs memory, {:.2} µs SQLite (+{:.2} µs per read)",
        read_memory / 1e3,
        read_sqlite / 1e3,
        (read_sqlite - read_memory) / 1e3
    );
    println!(
        "workspace write of 1 KB: {:.2} µs memory, {:.2} µs SQLite (a durable commit)",
        write_memory / 1e3,
        write_sqlite / 1e3
    );
    report_skills();
    for (figure, measured, budget, unit) in cases {
        match measured {
            Some(measured) => println!(
                "{figure:<40} {:>16.1}M{unit:<1} {:>16.1}M{unit:<1}  {}",
                measured / 1e6,
                budget / 1e6,
                if measured >= budget { "met" } else { "MISSED" }
            ),
            None => println!(
                "{figure:<40} {:>18} {:>16.1}M{unit}  (not run)",
                "-",
                budget / 1e6
            ),
        }
    }
}

fn report_skills() {
    let microseconds =
        |function: &str| mean_nanoseconds("skills", function).map(|nanoseconds| nanoseconds / 1e3);
    for (figure, function, budget) in [
        (
            "skills/search_10000 (mean; budget is p50)",
            "search_10000",
            "≤ 2,000 µs",
        ),
        (
            "skills/load_cached_body",
            "load_cached_body",
            "(stdio round trip ≤ 60 µs)",
        ),
        (
            "skills/catalog_warm_200",
            "catalog_warm_200",
            "(start ≤ 20 ms)",
        ),
    ] {
        match microseconds(function) {
            Some(measured) => println!("{figure:<40} {measured:>15.1} µs  {budget}"),
            None => println!("{figure:<40} {:>18}  {budget} (not run)", "-"),
        }
    }
    println!(
        "{:<40} {:>18}  ≤ 200 ms  cargo bench --bench snapshots",
        "SnapshotProcess, 10,000 messages", "-"
    );
}

/// The store's cost seen from a workspace: a 1 KB read and a 1 KB write, in memory and on SQLite.
fn bench_store(criterion: &mut Criterion) {
    let directory = std::env::temp_dir().join(format!("synapse-bench-{}", std::process::id()));
    let store = SqliteStore::open(&directory.join("synapse.db"), SqliteOptions::default())
        .expect("a store in the temporary folder");
    let workspaces = [
        (
            "memory",
            Workspace::in_memory("bench", 1000, Arc::new(SystemClock::new())),
        ),
        (
            "sqlite",
            Workspace::open("bench", 1000, Arc::new(SystemClock::new()), store).expect("open"),
        ),
    ];
    let mut group = criterion.benchmark_group("workspace");
    for (label, workspace) in &workspaces {
        workspace
            .insert(NewVariable::text("kb", "x".repeat(1024), VarType::LlmAdd))
            .expect("write");
        group.bench_function(format!("read_1kb_{label}"), |bencher| {
            bencher.iter(|| black_box(workspace.read_chunk("kb", 0, None)));
        });
        let mut next = 0_u32;
        group.bench_function(format!("write_1kb_{label}"), |bencher| {
            bencher.iter(|| {
                next = (next + 1) % 500;
                let variable =
                    NewVariable::text(format!("w{next}"), "y".repeat(1024), VarType::LlmAdd);
                black_box(workspace.insert(variable))
            });
        });
    }
    group.finish();
    drop(workspaces);
    std::fs::remove_dir_all(&directory).ok();
}

/// The app as `synapse-mcp` builds it from `arguments`, and a runtime to call its tools on.
fn app_with(arguments: &[&str]) -> (synapse_mcp::app::App, tokio::runtime::Runtime) {
    let cli = <synapse_mcp::config::Cli as clap::Parser>::parse_from(
        std::iter::once("synapse-mcp").chain(arguments.iter().copied()),
    );
    let config = synapse_mcp::app::Settings::load(&cli).expect("config");
    let app = synapse_mcp::app::App::open(&config).expect("app");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    (app, runtime)
}

/// One `tools/call` through the executor, the whole pipeline but the transport.
fn call(
    app: &synapse_mcp::app::App,
    runtime: &tokio::runtime::Runtime,
    tool: &'static str,
    arguments: &Value,
) -> impl Sized + use<> {
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
    runtime.block_on(app.executor().execute(request))
}

/// A 1,000-step plan of cheap steps (`WriteState`), each reading the previous step's result:
/// validation alone (`dryRun`) and a full run through the executor.
fn bench_plans(criterion: &mut Criterion) {
    let (app, runtime) = app_with(&["--store", "memory"]);
    let steps: Vec<Value> = (0..PLAN_STEPS)
        .map(|index| {
            let value = if index == 0 { json!(0) } else { json!(format!("†steps.s{}.path", index - 1)) };
            json!({"_id": format!("s{index}"), "_tool": "WriteState", "path": format!("chain.s{index}"), "value": value})
        })
        .collect();
    let mut group = criterion.benchmark_group("plans");
    group.sample_size(10);
    for (label, dry_run) in [("validate_1000_steps", true), ("run_1000_steps", false)] {
        let arguments = json!({"steps": steps, "dryRun": dry_run, "_outputLimit": 200});
        group.bench_function(label, |bencher| {
            bencher.iter(|| black_box(call(&app, &runtime, "RunPlan", &arguments)));
        });
    }
    group.finish();
}

const PLAN_STEPS: usize = 1_000;

/// Synthetic skills in a temporary root: a search over 10,000 (index built first), a cached
/// body through `instructions` (what `SkillLoad` returns), and the warm catalog load of 200
/// (its index reused), the work behind start-up and `skills/list`. Then the long skill of
/// the tests (21,000 characters) loaded whole as before sections, as its opening and table of
/// sections, and one section of it.
fn bench_skills(criterion: &mut Criterion) {
    let directory = tempfile::tempdir().expect("a temporary folder");
    let mut group = criterion.benchmark_group("skills");
    for count in [200, 10_000] {
        let root = directory.path().join(count.to_string());
        synthetic_skills::generate(&root, count).expect("write the skills");
        let roots = [Root {
            kind: RootKind::Configured,
            path: root,
        }];
        let indexes = Indexes::new(&directory.path().join("data"));
        let library = Library::load(&roots, Some(&indexes));
        library.warm_up();
        if count == 200 {
            group.bench_function("catalog_warm_200", |bencher| {
                bencher.iter(|| black_box(Library::load(&roots, Some(&indexes))));
            });
            continue;
        }
        let mut next = 0;
        group.bench_function("search_10000", |bencher| {
            bencher.iter(|| {
                next = (next + 1) % synthetic_skills::QUERIES.len();
                black_box(library.search(synthetic_skills::QUERIES[next], &[], 5))
            });
        });
        group.bench_function("search_10000_long", |bencher| {
            bencher.iter(|| black_box(library.search(synthetic_skills::LONG_QUERY, &[], 5)));
        });
        let skill = &library.skills()[42];
        group.bench_function("load_cached_body", |bencher| {
            bencher.iter(|| {
                black_box(instructions(skill, None, DEFAULT_BODY_LIMIT).expect("the body"))
            });
        });
    }
    let long = Library::load(
        &[Root {
            kind: RootKind::Configured,
            path: PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/skills-long"
            )),
        }],
        None,
    );
    let skill = long
        .get("incident-response")
        .expect("the long skill of the tests");
    group.bench_function("load_long_whole", |bencher| {
        bencher.iter(|| black_box(skill_content(skill, &skill.body().expect("the body"))));
    });
    group.bench_function("load_long_overview", |bencher| {
        bencher.iter(|| {
            black_box(instructions(skill, None, DEFAULT_BODY_LIMIT).expect("the opening"))
        });
    });
    group.bench_function("load_long_section", |bencher| {
        let section = Some("fail-over-a-database");
        bencher.iter(|| {
            black_box(instructions(skill, section, DEFAULT_BODY_LIMIT).expect("a section"))
        });
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench_references(&mut criterion);
    bench_writes(&mut criterion);
    bench_store(&mut criterion);
    bench_plans(&mut criterion);
    bench_skills(&mut criterion);
    criterion.final_summary();
    report();
}
