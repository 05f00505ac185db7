//! The store's round trips, SQLite file against PostgreSQL (a server the benchmark starts on
//! loopback, as the tests do, with `fsync` off: a commit's figure is the client's and the
//! server's work, not the disk's): a point read (`sequence`, made before serving every read),
//! one variable read back, and a commit of one variable (a transaction of a few statements).
//! Run with `cargo bench --bench store`; it prints mean, p50 and p99 per operation.
#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a benchmark that cannot set up should stop at once"
)]

#[path = "../src/store/postgres/testing.rs"]
mod postgres_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use synapse_mcp::store::{
    Batch, DurableStore, PostgresOptions, PostgresStore, SqliteOptions, SqliteStore,
};
use synapse_mcp::vars::{Record, Timestamp, ValueKind, VarType};

const ROUNDS: usize = 2_000;

fn record(name: &str) -> Record {
    Record {
        name: Arc::from(name),
        value: Arc::from("a short value"),
        kind: ValueKind::Text,
        var_type: VarType::LlmAdd,
        desc: None,
        tags: Vec::new(),
        keep: false,
        created: Timestamp(1),
        updated: Timestamp(1),
        last_visited: Timestamp(1),
        reference_count: 0,
    }
}

fn report(store: &str, operation: &str, mut times: Vec<Duration>) {
    times.sort_unstable();
    let mean = times.iter().sum::<Duration>() / u32::try_from(times.len()).unwrap_or(1);
    // The value below which `percent` of the times fall.
    let at = |percent: usize| times[(times.len() - 1) * percent / 100];
    println!(
        "{store:<10} {operation:<16} mean {:>8.1} µs   p50 {:>8.1} µs   p99 {:>8.1} µs",
        mean.as_secs_f64() * 1e6,
        at(50).as_secs_f64() * 1e6,
        at(99).as_secs_f64() * 1e6,
    );
}

fn time(mut operation: impl FnMut(usize)) -> Vec<Duration> {
    (0..ROUNDS)
        .map(|round| {
            let start = Instant::now();
            operation(round);
            start.elapsed()
        })
        .collect()
}

fn measure(name: &str, store: &dyn DurableStore) {
    store.load("bench").unwrap();
    for index in 0..100 {
        let batch = Batch {
            written: vec![record(&format!("v{index}"))],
            removed: Vec::new(),
        };
        store.commit("bench", &batch).unwrap();
    }
    report(
        name,
        "sequence",
        time(|_| {
            store.sequence("bench").unwrap();
        }),
    );
    report(
        name,
        "variable",
        time(|round| {
            store
                .variable("bench", &format!("v{}", round % 100))
                .unwrap()
                .unwrap();
        }),
    );
    report(
        name,
        "commit",
        time(|round| {
            let batch = Batch {
                written: vec![record(&format!("w{}", round % 100))],
                removed: Vec::new(),
            };
            store.commit("bench", &batch).unwrap();
        }),
    );
}

fn main() {
    let folder = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(&folder.path().join("synapse.db"), SqliteOptions::default())
        .expect("an SQLite store");
    measure("sqlite", sqlite.as_ref());
    let Some(url) = postgres_server::database() else {
        return;
    };
    let postgres = PostgresStore::open(&url, PostgresOptions::default()).expect("a database");
    measure("postgres", postgres.as_ref());
    // The same from inside a tokio task, as the server calls it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async { measure("postgres*", postgres.as_ref()) });
}
