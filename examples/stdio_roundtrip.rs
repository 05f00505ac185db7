//! Measures `ReadVar` and `WriteVar` round trips over stdio against the real binary, with the
//! memory store and with the SQLite store, the way a client sees them:
//! one JSON-RPC line out, one line back, sequentially. The same driver then measures a bare
//! stdio echo loop (this example re-run with `--serve-echo`), the floor that pipes and process
//! switches set on this machine. Prints time to the `initialize` answer, the percentiles beside
//! DESIGN.md's budgets (p50 ≤ 60 µs, p99 ≤ 250 µs for a 1 KB variable) and the ratio to the floor
//! (DESIGN.md: within 1.3×).
//!
//! ```sh
//! cargo build --release && cargo run --release --example stdio_roundtrip -- [ROUND_TRIPS] [SERVER]
//! ```
//! `SERVER` defaults to `target/release/synapse-mcp` beside this example.
#![allow(
    clippy::print_stdout,
    reason = "an example reports its figures on stdout"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const READ: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ReadVar","arguments":{"name":"kb"}}}"#;

/// One server process driven over its pipes.
struct Driver {
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    line: String,
}

impl Driver {
    fn send(&mut self, message: &str) -> anyhow::Result<()> {
        self.input.write_all(message.as_bytes())?;
        self.input.write_all(b"\n")?;
        self.input.flush()?;
        Ok(())
    }

    /// Sends a request and waits for its answer; returns the round-trip time.
    fn request(&mut self, message: &str) -> anyhow::Result<Duration> {
        let sent = Instant::now();
        self.send(message)?;
        // Notifications (resources/list_changed after a write) carry no id: skip them.
        loop {
            self.line.clear();
            anyhow::ensure!(
                self.output.read_line(&mut self.line)? > 0,
                "the server closed stdout"
            );
            if self.line.contains("\"id\"") {
                break;
            }
        }
        anyhow::ensure!(
            self.line.contains("\"result\""),
            "unexpected answer: {}",
            self.line
        );
        Ok(sent.elapsed())
    }
}

struct Figures {
    to_initialize: Duration,
    /// Sorted round-trip times.
    samples: Vec<Duration>,
}

impl Figures {
    fn percentile(&self, fraction: f64) -> f64 {
        let last = self.samples.len().saturating_sub(1);
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "an index into a short list"
        )]
        let index = (last as f64 * fraction) as usize;
        self.samples
            .get(index)
            .map_or(f64::NAN, |sample| sample.as_secs_f64() * 1e6)
    }
}

/// Starts `command`, completes the handshake and writes the 1 KB variable `kb`.
fn start(mut command: Command) -> anyhow::Result<(Child, Driver, Duration)> {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut driver = Driver {
        input: child
            .stdin
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdin"))?,
        output: BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| anyhow::anyhow!("no stdout"))?,
        ),
        line: String::new(),
    };
    driver.request(INITIALIZE)?;
    let to_initialize = started.elapsed();
    driver.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
    let value = "x".repeat(1024);
    driver.request(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"WriteVar","arguments":{{"name":"kb","value":"{value}"}}}}}}"#
    ))?;
    Ok((child, driver, to_initialize))
}

/// Times `round_trips` requests made by `request(index)`, after a warm-up.
fn measure(
    driver: &mut Driver,
    to_initialize: Duration,
    round_trips: usize,
    request: impl Fn(usize) -> String,
) -> anyhow::Result<Figures> {
    for index in 0..1_000 {
        driver.request(&request(index))?;
    }
    let mut samples = (0..round_trips)
        .map(|index| driver.request(&request(index)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    samples.sort();
    Ok(Figures {
        to_initialize,
        samples,
    })
}

fn read_request(_index: usize) -> String {
    READ.to_owned()
}

/// A 1 KB write to one of 500 names, so the workspace stays under its capacity.
fn write_request(index: usize) -> String {
    let value = "y".repeat(1024);
    format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"WriteVar","arguments":{{"name":"w{}","value":"{value}"}}}}}}"#,
        index % 500
    )
}

/// Measures reads then writes against one server command.
fn measure_server(command: Command, round_trips: usize) -> anyhow::Result<(Figures, Figures)> {
    let (mut child, mut driver, to_initialize) = start(command)?;
    let reads = measure(&mut driver, to_initialize, round_trips, read_request)?;
    let writes = measure(&mut driver, to_initialize, round_trips, write_request)?;
    child.kill()?;
    child.wait()?;
    Ok((reads, writes))
}

/// The floor: answer every request line with an empty result, nothing else.
fn serve_echo() -> anyhow::Result<()> {
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut line = String::new();
    while input.read_line(&mut line)? > 0 {
        if line.contains("\"id\"") {
            output.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n")?;
            output.flush()?;
        }
        line.clear();
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--serve-echo") {
        return serve_echo();
    }
    let round_trips: usize = args.next().map_or(Ok(20_000), |text| text.parse())?;
    let server = args.next().map_or_else(default_server, PathBuf::from);
    let data = std::env::temp_dir().join(format!("synapse-roundtrip-{}", std::process::id()));
    let server_command = |store: &[&str]| {
        let mut command = Command::new(&server);
        command.args(["--log-level", "error"]).args(store);
        command
    };
    let (memory_reads, memory_writes) =
        measure_server(server_command(&["--store", "memory"]), round_trips)?;
    let data_arg = data.display().to_string();
    let (durable_reads, durable_writes) =
        measure_server(server_command(&["--data-dir", &data_arg]), round_trips)?;
    std::fs::remove_dir_all(&data).ok();
    let mut echo = Command::new(std::env::current_exe()?);
    echo.arg("--serve-echo");
    let (mut echo_child, mut echo_driver, echo_start) = start(echo)?;
    let floor = measure(&mut echo_driver, echo_start, round_trips, read_request)?;
    echo_child.kill()?;

    println!("server: {}", server.display());
    println!(
        "start → initialize answered: {:.1} ms (memory store), {:.1} ms (SQLite store)",
        memory_reads.to_initialize.as_secs_f64() * 1e3,
        durable_reads.to_initialize.as_secs_f64() * 1e3
    );
    println!("{round_trips} sequential round trips of 1 KB values, µs (ratio: to the echo floor):");
    println!(
        "  {:<26} {:>8} {:>8} {:>8} {:>9}   budget",
        "", "p50", "p90", "p99", "p50 ratio"
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
            let met = figures.percentile(0.5) <= p50 && figures.percentile(0.99) <= p99;
            format!(
                "p50 ≤ {p50:.0}, p99 ≤ {p99:.0}: {}",
                if met { "met" } else { "MISSED" }
            )
        });
        println!(
            "  {label:<26} {:>8.1} {:>8.1} {:>8.1} {:>8.2}×   {verdict}",
            figures.percentile(0.5),
            figures.percentile(0.9),
            figures.percentile(0.99),
            figures.percentile(0.5) / floor.percentile(0.5)
        );
    }
    println!(
        "  durable reads vs memory reads, p50: {:+.0}% (issue 3: within +20%)",
        (durable_reads.percentile(0.5) / memory_reads.percentile(0.5) - 1.0) * 100.0
    );
    Ok(())
}

fn default_server() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(|dir| dir.join("synapse-mcp")))
        .unwrap_or_else(|| PathBuf::from("target/release/synapse-mcp"))
}
