//! Measures `ReadVar` and `WriteVar` round trips over stdio against the real binary, with the
//! memory store and with the SQLite store, the way a client sees them:
//! one JSON-RPC line out, one line back, sequentially. The same client (`support/stdio_client.rs`,
//! shared with `load_driver`) then measures a bare stdio echo loop (this example re-run with
//! `--serve-echo`), the floor that pipes and process switches set on this machine. Prints time to
//! the `initialize` answer, the percentiles beside the budgets (p50 ≤ 60 µs, p99 ≤ 250 µs
//! for a 1 KB variable) and the ratio to the floor (the aim: within 1.3×).
//!
//! ```sh
//! cargo build --release && cargo run --release --example stdio_roundtrip -- [ROUND_TRIPS] [SERVER]
//! ```
//! `SERVER` defaults to `target/release/synapse-mcp` beside this example. For other servers and
//! other tools, `load_driver` measures the same way and prints JSON.
#![allow(
    clippy::print_stdout,
    reason = "an example reports its figures on stdout"
)]

#[path = "support/stdio_client.rs"]
#[allow(
    dead_code,
    reason = "each example that shares the client uses a different part of it"
)]
mod stdio_client;

use std::path::{Path, PathBuf};
use std::time::Duration;

use stdio_client::{Server, Summary};
use tokio::process::Command;

const WARM_UP: usize = 1_000;

/// A 1 KB write to one of 500 names, so the workspace stays under its capacity.
fn write_arguments(index: usize) -> String {
    format!(
        r#"{{"name":"w{}","value":"{}"}}"#,
        index % 500,
        "y".repeat(1024)
    )
}

/// Times `round_trips` calls of `tool` with `arguments(index)`, after a warm-up.
async fn measure(
    server: &mut Server,
    round_trips: usize,
    tool: &str,
    arguments: impl Fn(usize) -> String,
) -> anyhow::Result<Summary> {
    let mut samples = Vec::with_capacity(round_trips);
    for index in 0..WARM_UP + round_trips {
        let elapsed = server
            .expect_success(
                "tools/call",
                &stdio_client::tool_call_params(tool, &arguments(index)),
            )
            .await?;
        if index >= WARM_UP {
            samples.push(elapsed);
        }
    }
    Ok(Summary::of(&samples))
}

/// Starts `server` with `store`, writes the 1 KB variable `kb`, and measures reads then writes.
async fn measure_server(
    server: &Path,
    store: &[&str],
    round_trips: usize,
) -> anyhow::Result<(Duration, Summary, Summary)> {
    let mut command = Command::new(server);
    command.args(["--log-level", "error"]).args(store);
    let (mut session, to_initialize) = Server::start(command, false).await?;
    let value = "x".repeat(1024);
    session
        .expect_success(
            "tools/call",
            &stdio_client::tool_call_params(
                "WriteVar",
                &format!(r#"{{"name":"kb","value":"{value}"}}"#),
            ),
        )
        .await?;
    let reads = measure(&mut session, round_trips, "ReadVar", |_| {
        r#"{"name":"kb"}"#.to_owned()
    })
    .await?;
    let writes = measure(&mut session, round_trips, "WriteVar", write_arguments).await?;
    session.stop().await?;
    Ok((to_initialize, reads, writes))
}

async fn run(round_trips: usize, server: PathBuf) -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let data_arg = data.path().display().to_string();
    let (memory_start, memory_reads, memory_writes) =
        measure_server(&server, &["--store", "memory"], round_trips).await?;
    let (durable_start, durable_reads, durable_writes) =
        measure_server(&server, &["--data-dir", &data_arg], round_trips).await?;
    let mut echo = Command::new(std::env::current_exe()?);
    echo.arg("--serve-echo");
    let (mut echo_session, _) = Server::start(echo, false).await?;
    let floor = measure(&mut echo_session, round_trips, "ReadVar", |_| {
        r#"{"name":"kb"}"#.to_owned()
    })
    .await?;
    echo_session.stop().await?;

    println!("server: {}", server.display());
    println!(
        "start → initialize answered: {:.1} ms (memory store), {:.1} ms (SQLite store)",
        memory_start.as_secs_f64() * 1e3,
        durable_start.as_secs_f64() * 1e3
    );
    println!("{round_trips} sequential round trips of 1 KB values, µs (ratio: to the echo floor):");
    println!(
        "  {:<26} {:>8} {:>8} {:>8} {:>8} {:>9}   budget",
        "", "p50", "p90", "p99", "max", "p50 ratio"
    );
    let rows = [
        ("echo floor", &floor, None),
        ("ReadVar, memory store", &memory_reads, Some((60.0, 250.0))),
        ("ReadVar, SQLite store", &durable_reads, Some((60.0, 250.0))),
        ("WriteVar, memory store", &memory_writes, None),
        ("WriteVar, SQLite store", &durable_writes, None),
    ];
    for (label, figures, budget) in rows {
        let verdict = budget.map_or(String::new(), |(p50, p99): (f64, f64)| {
            let met = figures.p50 <= p50 && figures.p99 <= p99;
            format!(
                "p50 ≤ {p50:.0}, p99 ≤ {p99:.0}: {}",
                if met { "met" } else { "MISSED" }
            )
        });
        println!(
            "  {label:<26} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.2}×   {verdict}",
            figures.p50,
            figures.p90,
            figures.p99,
            figures.max,
            figures.p50 / floor.p50
        );
    }
    println!(
        "  durable reads vs memory reads, p50: {:+.0}% (issue 3: within +20%)",
        (durable_reads.p50 / memory_reads.p50 - 1.0) * 100.0
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--serve-echo") {
        return stdio_client::serve_echo();
    }
    let round_trips: usize = args.next().map_or(Ok(20_000), |text| text.parse())?;
    let server = args.next().map_or_else(default_server, PathBuf::from);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run(round_trips, server))
}

fn default_server() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(|dir| dir.join("synapse-mcp")))
        .unwrap_or_else(|| PathBuf::from("target/release/synapse-mcp"))
}
