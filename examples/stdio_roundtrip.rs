//! Measures `ReadVar` round trips over stdio against the real binary, the way a client sees them:
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
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
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

fn measure(mut command: Command, round_trips: usize) -> anyhow::Result<Figures> {
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
    for _ in 0..1_000 {
        driver.request(READ)?;
    }
    let mut samples = (0..round_trips)
        .map(|_| driver.request(READ))
        .collect::<anyhow::Result<Vec<_>>>()?;
    samples.sort();
    child.kill()?;
    child.wait()?;
    Ok(Figures {
        to_initialize,
        samples,
    })
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
    let mut command = Command::new(&server);
    command.args(["--log-level", "error"]);
    let synapse = measure(command, round_trips)
        .map_err(|error| anyhow::anyhow!("{}: {error}", server.display()))?;
    let mut echo = Command::new(std::env::current_exe()?);
    echo.arg("--serve-echo");
    let floor = measure(echo, round_trips)?;

    println!("server: {}", server.display());
    println!(
        "start → initialize answered: {:.1} ms",
        synapse.to_initialize.as_secs_f64() * 1e3
    );
    println!("ReadVar of a 1 KB variable, {round_trips} sequential round trips (µs):");
    println!("        synapse-mcp   echo floor   ratio   budget");
    for (label, fraction, budget) in [
        ("p50", 0.5, Some(60.0)),
        ("p90", 0.9, None),
        ("p99", 0.99, Some(250.0)),
        ("max", 1.0, None),
    ] {
        let measured = synapse.percentile(fraction);
        let base = floor.percentile(fraction);
        let verdict = budget.map_or(String::new(), |budget: f64| {
            format!(
                "≤ {budget:.0} µs {}",
                if measured <= budget { "met" } else { "MISSED" }
            )
        });
        println!(
            "  {label}  {measured:>11.1} {base:>12.1} {:>7.2}×   {verdict}",
            measured / base
        );
    }
    Ok(())
}

fn default_server() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(|dir| dir.join("synapse-mcp")))
        .unwrap_or_else(|| PathBuf::from("target/release/synapse-mcp"))
}
