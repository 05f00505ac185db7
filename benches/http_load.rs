//! An HTTP load driver for any MCP server in Streamable HTTP mode (`benches/http_load.sh` runs it
//! against synapse-mcp and its peers): `--clients` clients, each on its own keep-alive
//! connection, open an MCP session each (`initialize`, then `notifications/initialized`, then
//! every request with `Mcp-Session-Id` and `MCP-Protocol-Version`), or, with `--era stateless`,
//! send 2026-07-28 requests that carry their protocol version in `_meta` and need no session.
//! Then each runs a closed loop of `tools/call` requests (the next one sent when the last is
//! answered) for `--warmup` seconds unmeasured and `--duration` seconds measured — or, with
//! `--rate R`, an open loop: R requests a second in all, each client's sent on a fixed schedule
//! whatever the answers do (while earlier ones are in flight, on more connections of the
//! client's session, up to 64 in flight per client), and each latency counted from the
//! request's intended send time, so that a server that falls behind is charged for the queue it
//! builds (no coordinated omission).
//! The driver prints one JSON line: requests/s, latency
//! percentiles, the server processes' CPU time per request (`/proc/PID/stat`, `--pid`, with the
//! children of `--store-pid`, a PostgreSQL postmaster, apart), their peak resident memory
//! (`VmHWM`) and the driver's own CPU time per request.
//!
//! The mix: `--mix workspace` is `--writes` percent `WriteVar` and the rest `ReadVar`, each
//! client on a variable of its own written once before the run; `--mix echo` calls the peers'
//! `echo` tool. Both carry `--payload` bytes each way: the value written or read, the message
//! echoed. Answers may come as `application/json` or as a `text/event-stream`; an answer that is
//! a JSON-RPC error or a tool result with `isError` counts as a failure.
//!
//! The client is hyper's HTTP/1.1 connection API on a single-thread tokio runtime, so that the
//! driver spends little CPU and at most one core. The figures are only meaningful from a
//! release build:
//!
//! ```sh
//! cargo bench --bench http_load -- --label synapse --url http://127.0.0.1:8080/mcp --pid 1234
//! ```
#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports its figures on stdout, as approximate decimals"
)]

#[path = "../examples/support/stdio_client.rs"]
#[allow(
    dead_code,
    reason = "the benchmark uses the messages, answers, percentiles and /proc readings only"
)]
mod stdio_client;

use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use clap::{Parser, ValueEnum};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use stdio_client::{
    INITIALIZE, INITIALIZED, Outcome, Summary, answer, proc_status_kibibytes, process_ticks_time,
    round, tool_call_params,
};

/// The protocol version of the stateless era.
const STATELESS_VERSION: &str = "2026-07-28";

/// How long one request may take before it counts as failed.
const REQUEST_LIMIT: Duration = Duration::from_secs(30);

/// Command line of the driver.
#[derive(Parser, Debug)]
#[command(about = "Closed- or open-loop MCP tool calls over Streamable HTTP, as one JSON line")]
struct Options {
    /// Name shown in the output.
    #[arg(long, default_value = "server")]
    label: String,
    /// The MCP endpoint (`http://127.0.0.1:PORT/mcp`); repeat it to spread the clients over
    /// several instances, in turn.
    #[arg(long, required = true)]
    url: Vec<String>,
    /// A bearer token sent with every request.
    #[arg(long)]
    token: Option<String>,
    /// Clients at once, each with one request in flight (in the open loop, as many as its
    /// schedule needs, up to 64, each on a connection of its own).
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Open loop: requests per second offered in all, spread evenly over the clients, sent on
    /// schedule and timed from when each was due. Without it, a closed loop.
    #[arg(long)]
    rate: Option<f64>,
    /// Seconds of unmeasured load first.
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 15.0)]
    duration: f64,
    /// The calls: synapse-mcp's `ReadVar`/`WriteVar`, or a peer's `echo`.
    #[arg(long, value_enum, default_value_t = Mix::Workspace)]
    mix: Mix,
    /// Percent of `WriteVar` calls in the workspace mix.
    #[arg(long, default_value_t = 20)]
    writes: u32,
    /// Bytes of the value or message each call carries.
    #[arg(long, default_value_t = 1024)]
    payload: usize,
    /// `initialize`-era sessions, or 2026-07-28 stateless requests.
    #[arg(long, value_enum, default_value_t = Era::Initialize)]
    era: Era,
    /// A server process whose CPU time and peak memory are read (repeatable).
    #[arg(long)]
    pid: Vec<u32>,
    /// A PostgreSQL postmaster: its own and its children's CPU time is read too.
    #[arg(long)]
    store_pid: Option<u32>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mix {
    Workspace,
    Echo,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Era {
    Initialize,
    Stateless,
}

/// When the clients measure: from `measure_from` (after the warm-up) until `stop_at`, when they
/// stop.
#[derive(Clone, Copy)]
struct Phases {
    measure_from: Instant,
    stop_at: Instant,
}

/// The kinds of call, measured apart.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    Read,
    Write,
    Echo,
}

/// What one client brings back.
#[derive(Default)]
struct Tally {
    /// Latencies of the calls sent in the measured window, by kind.
    reads: Vec<Duration>,
    writes: Vec<Duration>,
    echoes: Vec<Duration>,
    /// Calls answered within the measured window.
    answered_in_window: usize,
    failures: usize,
    first_failure: Option<String>,
}

impl Tally {
    fn fail(&mut self, reason: String) {
        self.failures += 1;
        self.first_failure.get_or_insert(reason);
    }

    fn add(&mut self, other: Tally) {
        self.reads.extend(other.reads);
        self.writes.extend(other.writes);
        self.echoes.extend(other.echoes);
        self.answered_in_window += other.answered_in_window;
        self.failures += other.failures;
        if self.first_failure.is_none() {
            self.first_failure = other.first_failure;
        }
    }
}

/// One client's connection to one endpoint, and its session.
struct Connection {
    authority: String,
    path: String,
    token: Option<String>,
    sender: SendRequest<Full<Bytes>>,
    session: Option<String>,
    /// The version sent in `MCP-Protocol-Version`: the negotiated one, or the stateless era's.
    version: Option<String>,
    next_id: u64,
}

impl Connection {
    async fn open(url: &str, token: Option<String>) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .with_context(|| format!("`{url}`: only http:// URLs (loopback) are driven"))?;
        let (authority, path) = rest
            .split_once('/')
            .map_or((rest, "/"), |(authority, path)| (authority, path));
        Ok(Self {
            authority: authority.to_owned(),
            path: format!("/{}", path.trim_start_matches('/')),
            token,
            sender: connect(authority).await?,
            session: None,
            version: None,
            next_id: 1,
        })
    }

    /// Opens the session: `initialize`, then `notifications/initialized`.
    async fn initialize(&mut self) -> anyhow::Result<()> {
        let (status, headers, body) = self.post(INITIALIZE.trim_end(), None).await?;
        ensure!(
            status.is_success(),
            "initialize answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        self.session = headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let result = messages(&headers, &body)?
            .into_iter()
            .find_map(|message| {
                let value: Value = serde_json::from_str(&message).ok()?;
                value.get("result").cloned()
            })
            .context("no answer to initialize")?;
        self.version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let (status, _, body) = self.post(INITIALIZED.trim_end(), None).await?;
        ensure!(
            status.is_success(),
            "notifications/initialized answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        Ok(())
    }

    /// One `tools/call`, answered: its outcome.
    async fn call(
        &mut self,
        tool: &str,
        arguments: &str,
        stateless: bool,
    ) -> anyhow::Result<Outcome> {
        let id = self.next_id;
        self.next_id += 1;
        let plain = tool_call_params(tool, arguments);
        let params = if stateless {
            // The request carries what the handshake would have said.
            format!(
                r#"{},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{STATELESS_VERSION}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"synapse-http-load","version":"1"}}}}}}"#,
                plain.strip_suffix('}').unwrap_or(&plain)
            )
        } else {
            plain
        };
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#);
        let (status, headers, answer_body) = self
            .post(&body, stateless.then_some(("tools/call", tool)))
            .await?;
        if !status.is_success() {
            return Ok(Outcome::Failure(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&answer_body)
            )));
        }
        for message in messages(&headers, &answer_body)? {
            if let Some((answered, outcome)) = answer(&message)?
                && answered == id
            {
                return Ok(outcome);
            }
        }
        Ok(Outcome::Failure(format!(
            "no answer to request {id} in: {}",
            String::from_utf8_lossy(&answer_body)
        )))
    }

    /// POSTs `body`; `standard` gives the `Mcp-Method` and `Mcp-Name` headers of a stateless
    /// request. A connection the server closed (an idle timeout) is opened again first.
    async fn post(
        &mut self,
        body: &str,
        standard: Option<(&str, &str)>,
    ) -> anyhow::Result<(StatusCode, hyper::HeaderMap, Bytes)> {
        if self.sender.ready().await.is_err() {
            self.sender = connect(&self.authority).await?;
        }
        let mut request = Request::post(&self.path)
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let Some((method, name)) = standard {
            request = request
                .header("mcp-protocol-version", STATELESS_VERSION)
                .header("mcp-method", method)
                .header("mcp-name", name);
        } else if let Some(version) = &self.version {
            request = request.header("mcp-protocol-version", version);
        }
        let request = request.body(Full::new(Bytes::from(body.to_owned())))?;
        let exchange = async {
            let response = self.sender.send_request(request).await?;
            let (parts, body) = response.into_parts();
            let bytes = body.collect().await?.to_bytes();
            anyhow::Ok((parts.status, parts.headers, bytes))
        };
        tokio::time::timeout(REQUEST_LIMIT, exchange)
            .await
            .with_context(|| format!("no answer within {} s", REQUEST_LIMIT.as_secs()))?
    }
}

/// What a client's connections share: the endpoint, the token and the session.
struct Shared {
    authority: String,
    path: String,
    token: Option<String>,
    session: Option<String>,
    version: Option<String>,
}

impl Connection {
    fn shared(&self) -> Shared {
        Shared {
            authority: self.authority.clone(),
            path: self.path.clone(),
            token: self.token.clone(),
            session: self.session.clone(),
            version: self.version.clone(),
        }
    }
}

impl Shared {
    /// Another connection in the session, the `ordinal`-th, its request ids apart from the
    /// others' (from `ordinal` · 10⁹).
    async fn connect(&self, ordinal: u64) -> anyhow::Result<Connection> {
        Ok(Connection {
            authority: self.authority.clone(),
            path: self.path.clone(),
            token: self.token.clone(),
            sender: connect(&self.authority).await?,
            session: self.session.clone(),
            version: self.version.clone(),
            next_id: ordinal * 1_000_000_000 + 1,
        })
    }
}

/// A new HTTP/1.1 connection to `authority`, its I/O driven by a task of its own.
async fn connect(authority: &str) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .with_context(|| format!("cannot connect to {authority}"))?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::task::spawn_local(async move {
        // A connection that ends with an error shows up as the next request's error.
        connection.await.ok();
    });
    Ok(sender)
}

/// The JSON-RPC messages of an answer: the body itself, or each event's data of an SSE stream.
fn messages(headers: &hyper::HeaderMap, body: &[u8]) -> anyhow::Result<Vec<String>> {
    let text = std::str::from_utf8(body).context("an answer that is not UTF-8")?;
    let is_stream = headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    if !is_stream {
        return Ok(if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![text.to_owned()]
        });
    }
    let mut events = Vec::new();
    let mut data = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.trim().is_empty() {
                events.push(std::mem::take(&mut data));
            }
            data.clear();
        } else if let Some(value) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    Ok(events)
}

/// The payload a call carries: `payload` bytes that start with the call's number, so that every
/// write changes the value.
fn payload(number: u64, length: usize) -> String {
    let mut text = format!("{number:012} ");
    text.extend(std::iter::repeat_n('x', length.saturating_sub(text.len())));
    text
}

/// One client: opens its connection and session, writes its variable, says it is ready, waits
/// for the phases, then calls until they end.
async fn client(
    index: usize,
    options: Rc<Options>,
    ready: tokio::sync::mpsc::UnboundedSender<anyhow::Result<()>>,
    mut phases: tokio::sync::watch::Receiver<Option<Phases>>,
) -> Tally {
    match prepare(index, &options).await {
        Ok(connection) => {
            ready.send(Ok(())).ok();
            drop(ready);
            let phases = match phases.wait_for(Option::is_some).await {
                Ok(phases) => *phases,
                // The driver gave up on the run (another client failed to get ready).
                Err(_) => None,
            };
            let Some(phases) = phases else {
                return Tally::default();
            };
            match options.rate {
                None => run(index, &options, connection, phases).await,
                Some(rate) => run_open(index, &options, rate, connection, phases).await,
            }
        }
        Err(error) => {
            ready.send(Err(error)).ok();
            Tally::default()
        }
    }
}

/// A client's connection with its session open and its variable written.
async fn prepare(index: usize, options: &Options) -> anyhow::Result<Connection> {
    let url = &options.url[index % options.url.len()];
    let mut connection = Connection::open(url, options.token.clone()).await?;
    if options.era == Era::Initialize {
        connection.initialize().await?;
    }
    if options.mix == Mix::Workspace
        && let Outcome::Failure(reason) = connection
            .call(
                "WriteVar",
                &write_arguments(index, 0, options.payload),
                options.era == Era::Stateless,
            )
            .await?
    {
        bail!("client {index} cannot write its variable: {reason}");
    }
    Ok(connection)
}

/// Each client's variable.
fn variable(index: usize) -> String {
    format!("load/client-{index}")
}

fn write_arguments(index: usize, number: u64, length: usize) -> String {
    json!({"name": variable(index), "value": payload(number, length)}).to_string()
}

/// The most requests an open-loop client has in flight at once, each on a connection of its own
/// (sharing the client's session): past it, a due call waits for an answer, and its latency,
/// counted from when it was due, shows the wait.
const MOST_IN_FLIGHT: usize = 64;

/// The kind of the `number`-th call: spreads the writes evenly (call n writes when n·writes
/// crosses a multiple of 100).
fn kind_of(options: &Options, number: u64) -> Call {
    let writes = u64::from(options.writes.min(100));
    match options.mix {
        Mix::Echo => Call::Echo,
        Mix::Workspace if (number * writes) % 100 < writes => Call::Write,
        Mix::Workspace => Call::Read,
    }
}

/// Sends client `index`'s `number`-th call, of kind `call`, and waits for its answer.
async fn send(
    connection: &mut Connection,
    options: &Options,
    index: usize,
    number: u64,
    call: Call,
) -> anyhow::Result<Outcome> {
    let stateless = options.era == Era::Stateless;
    match call {
        Call::Read => {
            let arguments = json!({"name": variable(index)}).to_string();
            connection.call("ReadVar", &arguments, stateless).await
        }
        Call::Write => {
            let arguments = write_arguments(index, number, options.payload);
            connection.call("WriteVar", &arguments, stateless).await
        }
        Call::Echo => {
            let arguments = json!({"message": payload(number, options.payload)}).to_string();
            connection.call("echo", &arguments, stateless).await
        }
    }
}

impl Tally {
    /// Counts one answered call, sent (or due) at `sent`.
    fn record(
        &mut self,
        call: Call,
        sent: Instant,
        phases: Phases,
        result: &anyhow::Result<Outcome>,
    ) {
        let answered = Instant::now();
        if sent >= phases.measure_from {
            let latencies = match call {
                Call::Read => &mut self.reads,
                Call::Write => &mut self.writes,
                Call::Echo => &mut self.echoes,
            };
            latencies.push(answered - sent);
        }
        if answered >= phases.measure_from && answered < phases.stop_at {
            self.answered_in_window += 1;
        }
        match result {
            Ok(Outcome::Success) => {}
            Ok(Outcome::Failure(reason)) => self.fail(reason.clone()),
            Err(error) => self.fail(format!("{error:#}")),
        }
    }
}

/// The closed loop: the next call is sent when the last is answered.
async fn run(index: usize, options: &Options, mut connection: Connection, phases: Phases) -> Tally {
    let mut tally = Tally::default();
    let mut number: u64 = index as u64;
    loop {
        let sent = Instant::now();
        if sent >= phases.stop_at {
            break;
        }
        number += 1;
        let call = kind_of(options, number);
        let result = send(&mut connection, options, index, number, call).await;
        tally.record(call, sent, phases, &result);
        if result.is_err() {
            // The connection is gone: open a new one, keeping the session.
            tokio::time::sleep(Duration::from_millis(10)).await;
            if let Ok(sender) = connect(&connection.authority).await {
                connection.sender = sender;
            }
        }
    }
    tally
}

/// The open loop: the client's share of `--rate`, each call sent when it is due whatever the
/// answers to the earlier ones do (on another connection of the client's session while they are
/// in flight, up to [`MOST_IN_FLIGHT`]), its latency counted from when it was due. The first
/// call is offset by the client's index, so that the clients' calls interleave instead of
/// arriving together.
async fn run_open(
    index: usize,
    options: &Options,
    rate: f64,
    connection: Connection,
    phases: Phases,
) -> Tally {
    let interval = Duration::from_secs_f64(options.clients as f64 / rate);
    let mut due = Instant::now() + interval.mul_f64(index as f64 / options.clients as f64);
    let mut tally = Tally::default();
    let mut number: u64 = index as u64;
    let mut opened: u64 = 0;
    let shared = connection.shared();
    let mut idle = vec![connection];
    let mut in_flight = futures::stream::FuturesUnordered::new();
    while due < phases.stop_at {
        let room = !idle.is_empty() || in_flight.len() < MOST_IN_FLIGHT;
        let answered = tokio::select! {
            biased;
            Some(answered) = futures::StreamExt::next(&mut in_flight) => Some(answered),
            () = tokio::time::sleep_until(due.into()), if room => None,
        };
        if let Some((connection, call, sent, result)) = answered {
            tally.record(call, sent, phases, &result);
            // A connection that failed is dropped; the next call due opens another.
            if result.is_ok() {
                idle.push(connection);
            }
            continue;
        }
        let connection = if let Some(connection) = idle.pop() {
            Ok(connection)
        } else {
            opened += 1;
            shared.connect(opened).await
        };
        let sent = due;
        due += interval;
        number += 1;
        let call = kind_of(options, number);
        match connection {
            Ok(mut connection) => {
                in_flight.push(async move {
                    let result = send(&mut connection, options, index, number, call).await;
                    (connection, call, sent, result)
                });
            }
            Err(error) => tally.record(call, sent, phases, &Err(error)),
        }
    }
    // The calls sent before the end are answered and counted.
    while let Some((_, call, sent, result)) = futures::StreamExt::next(&mut in_flight).await {
        tally.record(call, sent, phases, &result);
    }
    tally
}

/// CPU time of the processes that serve: the servers', and the PostgreSQL server's with its
/// children (its backends, writers, checkpointer).
#[derive(Clone, Copy)]
struct CpuReading {
    servers: Duration,
    store: Option<Duration>,
    driver: Duration,
}

fn read_cpu(options: &Options) -> anyhow::Result<CpuReading> {
    let servers = options
        .pid
        .iter()
        .map(|&process_id| {
            process_ticks_time(process_id)
                .with_context(|| format!("cannot read the CPU time of process {process_id}"))
        })
        .sum::<anyhow::Result<Duration>>()?;
    let store = options.store_pid.map(|postmaster| {
        family(postmaster)
            .into_iter()
            .filter_map(process_ticks_time)
            .sum()
    });
    let driver = process_ticks_time(std::process::id()).context("cannot read our CPU time")?;
    Ok(CpuReading {
        servers,
        store,
        driver,
    })
}

/// `parent` and the processes whose parent it is.
fn family(parent: u32) -> Vec<u32> {
    let mut processes = vec![parent];
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return processes;
    };
    for entry in entries.filter_map(Result::ok) {
        let Some(process_id) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the command name's `)`: the state, then the parent's id.
        let parent_of = stat
            .rsplit_once(')')
            .and_then(|(_, fields)| fields.split_whitespace().nth(1))
            .and_then(|field| field.parse::<u32>().ok());
        if parent_of == Some(parent) {
            processes.push(process_id);
        }
    }
    processes
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn per_request_us(time: Duration, requests: usize) -> f64 {
    round(time.as_secs_f64() * 1e6 / requests.max(1) as f64)
}

#[expect(
    clippy::too_many_lines,
    reason = "one run read top to bottom; the 80-line limit is for src/"
)]
async fn drive(options: Options) -> anyhow::Result<Value> {
    ensure!(options.clients > 0, "--clients must be at least 1");
    ensure!(
        options.rate.is_none_or(|rate| rate > 0.0),
        "--rate must be more than 0 requests a second"
    );
    ensure!(
        options.warmup >= 0.0 && options.duration > 0.0,
        "--warmup must be 0 or more seconds and --duration more than 0"
    );
    let options = Rc::new(options);
    let load_before = load_average();
    let (ready, mut readiness) = tokio::sync::mpsc::unbounded_channel();
    let (phases, watching) = tokio::sync::watch::channel(None);
    let mut clients = Vec::with_capacity(options.clients);
    for index in 0..options.clients {
        clients.push(tokio::task::spawn_local(client(
            index,
            Rc::clone(&options),
            ready.clone(),
            watching.clone(),
        )));
    }
    drop(ready);
    let set_up = Instant::now();
    for _ in 0..options.clients {
        readiness
            .recv()
            .await
            .context("a client ended before it was ready")??;
    }
    let set_up = set_up.elapsed();
    let now = Instant::now();
    let measure_from = now + Duration::from_secs_f64(options.warmup);
    let stop_at = measure_from + Duration::from_secs_f64(options.duration);
    phases.send_replace(Some(Phases {
        measure_from,
        stop_at,
    }));
    tokio::time::sleep_until(measure_from.into()).await;
    let before = read_cpu(&options)?;
    tokio::time::sleep_until(stop_at.into()).await;
    let after = read_cpu(&options)?;
    let load_after = load_average();
    let mut total = Tally::default();
    for task in clients {
        total.add(task.await?);
    }
    // VmHWM is a process's peak so far: read after the load, while the servers still run.
    let peak_resident_kibibytes: u64 = options
        .pid
        .iter()
        .filter_map(|&process_id| proc_status_kibibytes(process_id, "VmHWM:"))
        .sum();
    let requests = total.answered_in_window;
    let seconds = options.duration;
    let server_time = after.servers.saturating_sub(before.servers);
    let store_time = after
        .store
        .zip(before.store)
        .map(|(after, before)| after.saturating_sub(before));
    let driver_time = after.driver.saturating_sub(before.driver);
    let mut all: Vec<Duration> = Vec::new();
    all.extend(&total.reads);
    all.extend(&total.writes);
    all.extend(&total.echoes);
    let kinds =
        |samples: &[Duration]| (!samples.is_empty()).then(|| Summary::of(samples).to_json());
    Ok(json!({
        "label": options.label,
        "era": format!("{:?}", options.era).to_lowercase(),
        "mix": format!("{:?}", options.mix).to_lowercase(),
        "clients": options.clients,
        "loop": if options.rate.is_some() { "open" } else { "closed" },
        "offered_per_second": options.rate,
        "instances": options.url.len(),
        "payload_bytes": options.payload,
        "writes_percent": (options.mix == Mix::Workspace).then_some(options.writes),
        "set_up_ms": round(set_up.as_secs_f64() * 1e3),
        "warmup_s": options.warmup,
        "measured_s": seconds,
        "requests": requests,
        "requests_per_second": (requests as f64 / seconds).round(),
        "latency": Summary::of(&all).to_json(),
        "reads": kinds(&total.reads),
        "writes": kinds(&total.writes),
        "echoes": kinds(&total.echoes),
        "server_cpu_s": round(server_time.as_secs_f64() * 100.0) / 100.0,
        "server_cpu_us_per_request": per_request_us(server_time, requests),
        "requests_per_server_cpu_second": (requests as f64 / server_time.as_secs_f64().max(1e-9)).round(),
        "store_cpu_us_per_request": store_time.map(|time| per_request_us(time, requests)),
        "requests_per_server_and_store_cpu_second": store_time.map(|time| (requests as f64 / (server_time + time).as_secs_f64().max(1e-9)).round()),
        "driver_cpu_us_per_request": per_request_us(driver_time, requests),
        "peak_rss_mib": round(peak_resident_kibibytes as f64 / 1024.0),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "failures": total.failures,
        "first_failure": total.first_failure,
    }))
}

fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let figures = local.block_on(&runtime, drive(options))?;
    println!("{figures}");
    Ok(())
}
