//! A stdio load driver for any MCP server: starts the command given after `--` (`--starts` times),
//! measures spawn → `initialize` answered, then times `--calls` sequential and `--calls`
//! pipelined (`--in-flight` unanswered at once) `tools/call` round trips of one tool, and reads the
//! server's CPU time and peak resident memory (`VmHWM`) from `/proc` after the run. Prints one
//! JSON object. The client is plain tokio + `serde_json` over the pipes (no MCP SDK), the same for
//! every server, so figures of different servers compare.
//!
//! ```sh
//! cargo run --release --example load_driver -- --label synapse --tool ReadVar \
//!     --setup WriteVar '{"name":"kb","value":"…"}' --arguments '{"name":"kb"}' \
//!     -- target/release/synapse-mcp --store memory
//! cargo run --release --example load_driver -- --floor   # the bare echo loop, same client
//! ```
//! `{index}` in `--arguments` becomes the call's number (to spread writes over names, say);
//! `--arguments @FILE` reads them from a file (a whole chat for `SnapshotProcess`, say).
//! The figures are only meaningful from a release build.
#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "an example reports its figures on stdout, as approximate decimals"
)]

#[path = "support/stdio_client.rs"]
#[allow(
    dead_code,
    reason = "each example that shares the client uses a different part of it"
)]
mod stdio_client;

use std::time::Duration;

use anyhow::{Context as _, ensure};
use clap::Parser;
use serde_json::{Value, json};
use stdio_client::{Outcome, Server, Summary, round, tool_call_params};

/// Command line of the driver.
#[derive(Parser)]
#[command(about = "Round trips of one MCP tool over stdio, as JSON")]
struct Options {
    /// Name shown in the output.
    #[arg(long, default_value = "server")]
    label: String,
    /// The method measured: `tools/call` of `--tool`, or another with empty params (`ping`:
    /// what the server's request handling costs with no tool behind it).
    #[arg(long, default_value = "tools/call")]
    method: String,
    /// The tool to call.
    #[arg(long, default_value = "echo")]
    tool: String,
    /// The tool's arguments, JSON, or `@FILE` to read them from a file; `{index}` becomes the
    /// call's number.
    #[arg(long, default_value = r#"{"message":"hello"}"#)]
    arguments: String,
    /// A call made once before measuring: TOOL JSON (repeatable).
    #[arg(long, num_args = 2, value_names = ["TOOL", "JSON"])]
    setup: Vec<String>,
    /// Sequential round trips measured (and as many pipelined).
    #[arg(long, default_value_t = 2_000)]
    calls: usize,
    /// Unmeasured round trips first, so the server's caches and JIT are warm.
    #[arg(long, default_value_t = 200)]
    warmup: usize,
    /// Requests in flight at once in the pipelined phase; 0 skips it.
    #[arg(long, default_value_t = 8)]
    in_flight: usize,
    /// Processes started to time `initialize`; the last one serves the calls.
    #[arg(long, default_value_t = 3)]
    starts: usize,
    /// Show the server's stderr.
    #[arg(long)]
    stderr: bool,
    /// Measure this driver's own echo loop (the floor) instead of a command.
    #[arg(long)]
    floor: bool,
    /// Run as the echo loop (used by `--floor`).
    #[arg(long, hide = true)]
    serve_echo: bool,
    /// The server command and its arguments.
    #[arg(last = true)]
    command: Vec<String>,
}

impl Options {
    fn command(&self) -> anyhow::Result<Vec<String>> {
        if self.floor {
            let driver = std::env::current_exe()?;
            return Ok(vec![
                driver.display().to_string(),
                "--serve-echo".to_owned(),
            ]);
        }
        ensure!(
            !self.command.is_empty(),
            "give the server command after `--`"
        );
        Ok(self.command.clone())
    }

    fn arguments_for(&self, index: usize) -> String {
        self.arguments.replace("{index}", &index.to_string())
    }

    /// The params of the `index`th request measured.
    fn params_for(&self, index: usize) -> String {
        if self.method == "tools/call" {
            tool_call_params(&self.tool, &self.arguments_for(index))
        } else {
            "{}".to_owned()
        }
    }
}

fn milliseconds(duration: Duration) -> f64 {
    round(duration.as_secs_f64() * 1e3)
}

async fn start(options: &Options, command: &[String]) -> anyhow::Result<(Server, Duration)> {
    let (program, arguments) = command.split_first().context("an empty command")?;
    let mut process = tokio::process::Command::new(program);
    process.args(arguments);
    Server::start(process, options.stderr).await
}

#[expect(
    clippy::too_many_lines,
    reason = "one run read top to bottom; the 80-line limit is for src/"
)]
async fn drive(options: &Options) -> anyhow::Result<Value> {
    let command = options.command()?;
    let mut starts = Vec::new();
    let mut server = None;
    for _ in 0..options.starts.max(1) {
        if let Some(previous) = server.take() {
            Server::stop(previous).await?;
        }
        let (started, to_initialize) = start(options, &command).await?;
        starts.push(to_initialize);
        server = Some(started);
    }
    let mut server = server.context("no server started")?;
    for setup in options.setup.chunks(2) {
        if let [tool, arguments] = setup {
            server
                .expect_success("tools/call", &tool_call_params(tool, arguments))
                .await?;
        }
    }
    let mut failures = Vec::new();
    for index in 0..options.warmup {
        if let (Outcome::Failure(line), _) = server
            .request(&options.method, &options.params_for(index))
            .await?
        {
            failures.push(line);
        }
    }
    let cpu_before = server.cpu_time();
    let mut sequential = Vec::with_capacity(options.calls);
    for index in 0..options.calls {
        let (outcome, elapsed) = server
            .request(&options.method, &options.params_for(index))
            .await?;
        sequential.push(elapsed);
        if let Outcome::Failure(line) = outcome {
            failures.push(line);
        }
    }
    let cpu_per_call = cpu_before.zip(server.cpu_time()).map(|(before, after)| {
        let calls = options.calls.max(1) as f64;
        round(after.saturating_sub(before).as_secs_f64() * 1e6 / calls)
    });
    let pipelined = if options.in_flight == 0 {
        Value::Null
    } else {
        let params: Vec<String> = (0..options.calls)
            .map(|index| options.params_for(index))
            .collect();
        let started = std::time::Instant::now();
        let (samples, pipelined_failures) = server
            .pipelined(&options.method, &params, options.in_flight)
            .await?;
        let elapsed = started.elapsed().as_secs_f64();
        failures.extend(pipelined_failures);
        let mut figures = Summary::of(&samples).to_json();
        figures["in_flight"] = json!(options.in_flight);
        let per_second = samples.len() as f64 / elapsed;
        figures["calls_per_second"] = json!(per_second.round());
        figures
    };
    // VmHWM is the process's peak so far; read it after the load, before the process ends.
    let peak_resident = server.peak_resident_kibibytes();
    server.stop().await?;
    starts.sort();
    Ok(json!({
        "label": options.label,
        "command": command,
        "method": options.method,
        "tool": options.tool,
        "initialize_ms": {
            "starts": starts.len(),
            "min": starts.first().copied().map(milliseconds),
            "p50": starts.get(starts.len() / 2).copied().map(milliseconds),
            "max": starts.last().copied().map(milliseconds),
        },
        "sequential": Summary::of(&sequential).to_json(),
        "pipelined": pipelined,
        "server_cpu_per_call_us": cpu_per_call,
        "peak_rss_mib": peak_resident.map(|kibibytes| round(kibibytes as f64 / 1024.0)),
        "failures": failures.len(),
        "first_failure": failures.first(),
    }))
}

fn main() -> anyhow::Result<()> {
    let mut options = Options::parse();
    if let Some(path) = options.arguments.strip_prefix('@') {
        options.arguments = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the arguments from {path}"))?;
    }
    if options.serve_echo {
        return stdio_client::serve_echo();
    }
    // One thread: the client's own scheduling stays out of the figures as far as it can.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(drive(&options))?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
