//! `--metrics ADDR`: installing the Prometheus recorder, and `GET /metrics` — the store's and
//! the process's figures of the moment of the scrape, then everything counted.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use super::{
    BUCKETS, BUILD_INFO, ENABLED, IN_FLIGHT, REQUEST_SECONDS, REQUESTS, SESSIONS,
    STORE_CONNECTIONS, STORE_CONNECTIONS_MAX, STORE_UP, TOOL_CALLS, TOOL_SECONDS, UPKEEP,
};
use crate::app::App;
use crate::server::Error;

/// Installs the Prometheus recorder and serves `/metrics` on `address` until the process ends.
/// Returns the address bound (port 0 picks a free one).
pub async fn start(address: SocketAddr, app: Arc<App>) -> Result<SocketAddr, Error> {
    let handle = PrometheusBuilder::new()
        .set_buckets(&BUCKETS)
        .and_then(PrometheusBuilder::install_recorder)
        .map_err(|error| Error::Start(format!("cannot keep metrics: {error}")))?;
    describe();
    ENABLED.store(true, Ordering::Relaxed);
    metrics::gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| Error::Start(format!("cannot serve metrics on {address}: {error}")))?;
    let bound = listener
        .local_addr()
        .map_err(|error| Error::Start(error.to_string()))?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(UPKEEP);
        loop {
            ticks.tick().await;
            upkeep.run_upkeep();
        }
    });
    let router = Router::new()
        .route("/metrics", get(scrape))
        .with_state(Arc::new(Scrape { handle, app }));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::warn!(%error, "the metrics listener stopped");
        }
    });
    tracing::info!("metrics at http://{bound}/metrics");
    Ok(bound)
}

/// What a scrape reads.
struct Scrape {
    handle: PrometheusHandle,
    app: Arc<App>,
}

/// `GET /metrics`: the store's and the process's figures of this moment, then everything
/// counted, in Prometheus' text format.
async fn scrape(State(scrape): State<Arc<Scrape>>) -> impl IntoResponse {
    let app = Arc::clone(&scrape.app);
    // The store's checks may wait on a connection: off the request threads.
    let store =
        tokio::task::spawn_blocking(move || (app.store_is_reachable(), app.store_connections()))
            .await
            .unwrap_or((false, None));
    let (reachable, connections) = store;
    metrics::gauge!(STORE_UP).set(if reachable { 1.0 } else { 0.0 });
    if let Some(connections) = connections {
        metrics::gauge!(STORE_CONNECTIONS, "state" => "in_use").set(count(connections.in_use));
        metrics::gauge!(STORE_CONNECTIONS, "state" => "idle").set(count(connections.idle));
        metrics::gauge!(STORE_CONNECTIONS_MAX).set(count(connections.max));
    }
    let mut text = scrape.handle.render();
    process(&mut text);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
}

#[expect(
    clippy::cast_precision_loss,
    reason = "connection counts are far below 2^52"
)]
fn count(value: usize) -> f64 {
    value as f64
}

fn describe() {
    metrics::describe_counter!(
        REQUESTS,
        "MCP requests handled, by method and outcome (ok, or error: a JSON-RPC error)"
    );
    metrics::describe_histogram!(
        REQUEST_SECONDS,
        metrics::Unit::Seconds,
        "Time to handle an MCP request, by method"
    );
    metrics::describe_gauge!(IN_FLIGHT, "MCP requests being handled now");
    metrics::describe_counter!(
        TOOL_CALLS,
        "Tool calls, by tool and outcome: ok, tool_error (isError), protocol_error (a JSON-RPC \
         error), input_required (the call asks the user first)"
    );
    metrics::describe_histogram!(
        TOOL_SECONDS,
        metrics::Unit::Seconds,
        "Time to answer a tool call, by tool"
    );
    metrics::describe_gauge!(
        SESSIONS,
        "Initialized MCP sessions open now (stdio, or HTTP initialize-era sessions)"
    );
    metrics::describe_gauge!(
        STORE_CONNECTIONS,
        "The store's database connections, in_use or idle, at the scrape"
    );
    metrics::describe_gauge!(
        STORE_CONNECTIONS_MAX,
        "The most database connections the store opens"
    );
    metrics::describe_gauge!(
        STORE_UP,
        "1 when the store answered at the scrape (as /readyz), else 0"
    );
    metrics::describe_gauge!(BUILD_INFO, "Always 1; the version is a label");
}

/// The process's resident memory, CPU time, threads and open files, read from `/proc` at the
/// scrape (Linux; elsewhere nothing is added).
fn process(text: &mut String) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|number| number.parse::<u64>().ok())
    };
    // `/proc/self/schedstat` starts with the nanoseconds this process's threads ran.
    let cpu = std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u64>().ok());
    let open_files = std::fs::read_dir("/proc/self/fd").ok().map(Iterator::count);
    let mut add = |name: &str, kind: &str, help: &str, value: String| {
        // Writing to a String does not fail.
        writeln!(
            text,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        )
        .ok();
    };
    if let Some(kilobytes) = field("VmRSS:") {
        add(
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes",
            (kilobytes * 1024).to_string(),
        );
    }
    if let Some(nanoseconds) = cpu {
        add(
            "process_cpu_seconds_total",
            "counter",
            "CPU time spent, in seconds",
            Duration::from_nanos(nanoseconds).as_secs_f64().to_string(),
        );
    }
    if let Some(threads) = field("Threads:") {
        add(
            "process_threads",
            "gauge",
            "Threads of the process",
            threads.to_string(),
        );
    }
    if let Some(open_files) = open_files {
        add(
            "process_open_fds",
            "gauge",
            "Open file descriptors",
            open_files.to_string(),
        );
    }
}
