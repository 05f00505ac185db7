//! The one MCP client the measuring examples share (`load_driver`, `stdio_roundtrip`,
//! `skills_bench`): newline-delimited JSON-RPC written by hand over a child's pipes with tokio and
//! `serde_json`, no MCP SDK, so that what is timed is the server and the pipes, not a client library.
//! Also the bare echo loop (`serve_echo`), the floor that pipes and process switches set on a
//! machine, the percentile summary, and the server's memory and CPU time read from `/proc`.
//!
//! Included by each example with `#[path = "support/stdio_client.rs"] mod stdio_client;`, and by
//! the HTTP load benchmark (`benches/http_load.rs`) for its messages, answers, percentiles and
//! `/proc` readings.

use std::cell::RefCell;
use std::io::{BufRead as _, Write as _};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The handshake every server gets: an `initialize`-era client with no capabilities.
pub(crate) const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"synapse-load-driver","version":"1"}}}"#,
    "\n"
);
pub(crate) const INITIALIZED: &str =
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// What the client reads of each line: enough to match an answer to its request and to tell a
/// failure from a success, without building the whole result as a `Value`.
#[derive(Deserialize)]
struct Incoming {
    id: Option<Value>,
    method: Option<String>,
    result: Option<IncomingResult>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct IncomingResult {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

/// How one answer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    /// A tool result with `isError: true`, or a JSON-RPC error: the line, cut to 300 bytes.
    Failure(String),
}

/// A server process driven over its stdin and stdout.
pub(crate) struct Server {
    child: Child,
    input: ChildStdin,
    reader: Reader,
    next_id: u64,
}

impl Server {
    /// Spawns `command` (stdout piped, stderr discarded unless `keep_stderr`), sends `initialize`
    /// and `notifications/initialized`; returns the server and the time from spawn to the answer.
    pub(crate) async fn start(
        mut command: Command,
        keep_stderr: bool,
    ) -> anyhow::Result<(Self, Duration)> {
        let started = Instant::now();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if keep_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {:?}", command.as_std()))?;
        let input = child.stdin.take().context("no stdin")?;
        let reader = Reader {
            output: BufReader::new(child.stdout.take().context("no stdout")?),
            line: String::new(),
        };
        let mut server = Self {
            child,
            input,
            reader,
            next_id: 1,
        };
        server.send(INITIALIZE).await?;
        let outcome = server.answer_to(0).await?;
        let to_initialize = started.elapsed();
        ensure!(
            outcome == Outcome::Success,
            "initialize failed: {outcome:?}"
        );
        server.send(INITIALIZED).await?;
        Ok((server, to_initialize))
    }

    /// The operating system's id of the server process.
    pub(crate) fn process_id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Writes one line, which ends with its newline, in one write.
    async fn send(&mut self, line: &str) -> anyhow::Result<()> {
        self.input.write_all(line.as_bytes()).await?;
        self.input.flush().await?;
        Ok(())
    }

    async fn answer_to(&mut self, id: u64) -> anyhow::Result<Outcome> {
        loop {
            let (answered, outcome) = self.reader.next_answer().await?;
            if answered == id {
                return Ok(outcome);
            }
        }
    }

    /// A fresh request id and the line (with its newline) that carries `method` with `params`
    /// (JSON text).
    fn line_for(&mut self, method: &str, params: &str) -> (u64, String) {
        let id = self.next_id;
        self.next_id += 1;
        (
            id,
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{params}}}\n"
            ),
        )
    }

    /// Sends one request and waits for its answer; returns the outcome and the round-trip time.
    pub(crate) async fn request(
        &mut self,
        method: &str,
        params: &str,
    ) -> anyhow::Result<(Outcome, Duration)> {
        let (id, line) = self.line_for(method, params);
        let sent = Instant::now();
        self.send(&line).await?;
        let outcome = self.answer_to(id).await?;
        Ok((outcome, sent.elapsed()))
    }

    /// Like `request`, but a failed answer is an error.
    pub(crate) async fn expect_success(
        &mut self,
        method: &str,
        params: &str,
    ) -> anyhow::Result<Duration> {
        match self.request(method, params).await? {
            (Outcome::Success, elapsed) => Ok(elapsed),
            (Outcome::Failure(line), _) => bail!("{method} failed: {line}"),
        }
    }

    /// `tools/call` of `tool`; `arguments` is JSON text.
    pub(crate) async fn call_tool(
        &mut self,
        tool: &str,
        arguments: &str,
    ) -> anyhow::Result<(Outcome, Duration)> {
        self.request("tools/call", &tool_call_params(tool, arguments))
            .await
    }

    /// Sends every request in `params_list` (`tools/call` params as JSON text) keeping at most
    /// `in_flight` unanswered; returns each round-trip time (send to answer) and each failure.
    pub(crate) async fn pipelined(
        &mut self,
        method: &str,
        params_list: &[String],
        in_flight: usize,
    ) -> anyhow::Result<(Vec<Duration>, Vec<String>)> {
        let first_id = self.next_id;
        let lines: Vec<String> = params_list
            .iter()
            .map(|params| self.line_for(method, params).1)
            .collect();
        let sent_at = RefCell::new(vec![None::<Instant>; lines.len()]);
        let permits = tokio::sync::Semaphore::new(in_flight.max(1));
        let Self { input, reader, .. } = self;
        let writing = async {
            for (index, line) in lines.iter().enumerate() {
                permits.acquire().await?.forget();
                sent_at.borrow_mut()[index] = Some(Instant::now());
                input.write_all(line.as_bytes()).await?;
                input.flush().await?;
            }
            anyhow::Ok(())
        };
        let reading = async {
            let mut samples = Vec::with_capacity(lines.len());
            let mut failures = Vec::new();
            while samples.len() < lines.len() {
                let (id, outcome) = reader.next_answer().await?;
                let Some(index) = id
                    .checked_sub(first_id)
                    .and_then(|index| usize::try_from(index).ok())
                else {
                    continue;
                };
                let sent = sent_at
                    .borrow()
                    .get(index)
                    .copied()
                    .flatten()
                    .with_context(|| format!("an answer to request {id}, never sent"))?;
                samples.push(sent.elapsed());
                if let Outcome::Failure(line) = outcome {
                    failures.push(line);
                }
                permits.add_permits(1);
            }
            anyhow::Ok((samples, failures))
        };
        let ((), answers) = tokio::try_join!(writing, reading)?;
        Ok(answers)
    }

    /// Peak resident memory so far (`VmHWM` in `/proc/PID/status`), in KiB; Linux only.
    pub(crate) fn peak_resident_kibibytes(&self) -> Option<u64> {
        proc_status_kibibytes(self.process_id()?, "VmHWM:")
    }

    /// Current resident memory (`VmRSS`), in KiB; Linux only.
    pub(crate) fn resident_kibibytes(&self) -> Option<u64> {
        proc_status_kibibytes(self.process_id()?, "VmRSS:")
    }

    /// CPU time the server's live threads have used so far, in nanoseconds from the scheduler
    /// (`/proc/PID/task/*/schedstat`); falls back to the 10 ms ticks of `/proc/PID/stat`. Linux only.
    pub(crate) fn cpu_time(&self) -> Option<Duration> {
        process_cpu_time(self.process_id()?)
    }

    /// Closes stdin (a clean end of session) and ends the process if it has not exited.
    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        drop(self.input);
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            self.child.kill().await?;
        }
        Ok(())
    }
}

/// The read half, apart so that the pipelined loop can write and read at once.
struct Reader {
    output: BufReader<ChildStdout>,
    line: String,
}

impl Reader {
    /// Reads the next line that answers a request; skips notifications and server requests.
    async fn next_answer(&mut self) -> anyhow::Result<(u64, Outcome)> {
        loop {
            self.line.clear();
            ensure!(
                self.output.read_line(&mut self.line).await? > 0,
                "the server closed stdout"
            );
            if let Some(answer) = answer(&self.line)? {
                return Ok(answer);
            }
        }
    }
}

/// The request id a JSON-RPC message answers and how, or `None` for a notification or a
/// server's request.
pub(crate) fn answer(message: &str) -> anyhow::Result<Option<(u64, Outcome)>> {
    let incoming: Incoming = serde_json::from_str(message)
        .with_context(|| format!("not a JSON-RPC message: {}", cut(message)))?;
    let Some(id) = incoming.id.filter(|_| incoming.method.is_none()) else {
        return Ok(None);
    };
    let id = id.as_u64().context("an answer with an id never sent")?;
    let failed = incoming.error.is_some()
        || incoming
            .result
            .as_ref()
            .is_none_or(|result| result.is_error);
    let outcome = if failed {
        Outcome::Failure(cut(message))
    } else {
        Outcome::Success
    };
    Ok(Some((id, outcome)))
}

/// `tools/call` params for `tool` with `arguments` (JSON text).
pub(crate) fn tool_call_params(tool: &str, arguments: &str) -> String {
    format!(
        r#"{{"name":{},"arguments":{arguments}}}"#,
        Value::from(tool)
    )
}

fn cut(line: &str) -> String {
    let line = line.trim_end();
    let mut end = line.len().min(300);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}

pub(crate) fn proc_status_kibibytes(process_id: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{process_id}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time a process's live threads have used so far, in nanoseconds from the scheduler
/// (`/proc/PID/task/*/schedstat`); falls back to the 10 ms ticks of `/proc/PID/stat`. Linux only.
pub(crate) fn process_cpu_time(process_id: u32) -> Option<Duration> {
    let from_scheduler = std::fs::read_dir(format!("/proc/{process_id}/task"))
        .ok()
        .and_then(|tasks| {
            tasks
                .map(|task| {
                    let path = task.ok()?.path().join("schedstat");
                    let text = std::fs::read_to_string(path).ok()?;
                    text.split_whitespace().next()?.parse::<u64>().ok()
                })
                .sum::<Option<u64>>()
        });
    if let Some(nanoseconds) = from_scheduler {
        return Some(Duration::from_nanos(nanoseconds));
    }
    process_ticks_time(process_id)
}

/// CPU time a process has used so far, its ended threads' included, from the 10 ms ticks of
/// `/proc/PID/stat`. Linux only.
pub(crate) fn process_ticks_time(process_id: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{process_id}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after its `)` are plain.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // Linux reports in USER_HZ, 100 per second on every architecture it supports.
    Some(Duration::from_millis(ticks * 10))
}

/// Percentiles of a set of round trips, in microseconds (nearest rank).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    pub(crate) count: usize,
    pub(crate) p50: f64,
    pub(crate) p90: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
    pub(crate) mean: f64,
}

impl Summary {
    pub(crate) fn of(samples: &[Duration]) -> Self {
        let mut sorted: Vec<f64> = samples
            .iter()
            .map(|sample| sample.as_secs_f64() * 1e6)
            .collect();
        sorted.sort_by(f64::total_cmp);
        let rank = |fraction: f64| {
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss,
                reason = "a rank within a list far shorter than 2^52"
            )]
            let index = ((sorted.len() as f64 * fraction).ceil() as usize).saturating_sub(1);
            sorted.get(index).copied().unwrap_or(f64::NAN)
        };
        #[expect(clippy::cast_precision_loss, reason = "a sample count far below 2^52")]
        let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
        Self {
            count: sorted.len(),
            p50: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
            max: sorted.last().copied().unwrap_or(f64::NAN),
            mean,
        }
    }

    pub(crate) fn to_json(self) -> Value {
        serde_json::json!({
            "count": self.count,
            "p50_us": round(self.p50),
            "p90_us": round(self.p90),
            "p99_us": round(self.p99),
            "max_us": round(self.max),
            "mean_us": round(self.mean),
        })
    }
}

/// One decimal place, as the figures are printed.
pub(crate) fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

/// The floor: answer every request line with an empty result and its own id, nothing else. It
/// parses each line as any JSON-RPC server must, and writes with blocking I/O.
pub(crate) fn serve_echo() -> anyhow::Result<()> {
    #[derive(Deserialize)]
    struct Request {
        id: Option<Value>,
    }
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut line = String::new();
    while input.read_line(&mut line)? > 0 {
        if let Ok(Request { id: Some(id) }) = serde_json::from_str::<Request>(&line) {
            writeln!(output, r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)?;
            output.flush()?;
        }
        line.clear();
    }
    Ok(())
}
