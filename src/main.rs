//! The `synapse-mcp` binary: parse the command line, log to stderr, serve.

use std::process::ExitCode;

use synapse_mcp::app::Settings;
use synapse_mcp::config::{Cli, Command};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The runtime: one thread, unless the process serves Streamable HTTP.
///
/// One thread serves a stdio session. A stdio session is one client whose requests are small,
/// so the work-stealing runtime's cross-thread wake-ups cost more than they bring: measured with
/// `examples/load_driver.rs` (1 KB `ReadVar`, four runs each), the multi-threaded runtime took
/// 19–24 µs per sequential round trip (p99 56–68 µs) and 21–27 µs of server CPU per call, one
/// thread 16–17 µs (p99 24–39 µs) and 13–15 µs, and pipelined throughput rose from 63,000–80,000
/// to 94,000–103,000 calls/s; the soak test's mixed load ran 78 % more requests per second. Work
/// that may take long runs on tokio's blocking pool instead (`tools::Runs::OnBlockingPool`: chat
/// processing, skill saves), and the skills scan, the search index and QuickJS have threads of
/// their own.
///
/// `serve --http` serves many clients at once, and with a PostgreSQL store each write waits on a
/// database round trip: it runs on the multi-threaded runtime (a worker per core), where a call
/// waiting on the database hands its worker to the other requests (`docs/instances.md`).
fn runtime(multi_threaded: bool) -> Result<tokio::runtime::Runtime, ExitCode> {
    let built = if multi_threaded {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    built.map_err(|error| {
        synapse_mcp::report(&NoRuntime(error));
        ExitCode::FAILURE
    })
}

/// The runtime could not start (the system refused a thread).
#[derive(Debug, thiserror::Error)]
#[error("cannot start the runtime: {0}")]
struct NoRuntime(std::io::Error);

fn main() -> ExitCode {
    // `synapse-mcp __reap PROGRAM ARGS…`: the server re-executes itself to run one script.
    #[cfg(target_os = "linux")]
    if let Some((program, arguments)) = synapse_mcp::runner::reaper::asked() {
        return match runtime(false) {
            Ok(runtime) => runtime.block_on(synapse_mcp::runner::reaper::serve(program, arguments)),
            Err(code) => code,
        };
    }
    let cli = Cli::parse_scoped(std::env::args_os());
    // Read first, so that the file's `log_format` applies and the runtime suits the transport;
    // it logs nothing itself.
    let config = match Settings::load(&cli) {
        Ok(config) => config,
        Err(error) => {
            synapse_mcp::report(&synapse_mcp::Error::from(error));
            return ExitCode::FAILURE;
        }
    };
    let serves_http =
        config.http.is_some() && matches!(cli.command, None | Some(Command::Serve(_)));
    let runtime = match runtime(serves_http) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    runtime
        .block_on(start(&cli, &config))
        .unwrap_or_else(|error| {
            synapse_mcp::report(&error);
            ExitCode::FAILURE
        })
}

async fn start(cli: &Cli, config: &Settings) -> Result<ExitCode, synapse_mcp::Error> {
    // Logs go to stderr, and to clients that set a level (`logging/setLevel`).
    tracing_subscriber::registry()
        .with(synapse_mcp::server::stderr_layer(
            config.log_format,
            &cli.log_filter(config.http.is_some()),
        ))
        .with(synapse_mcp::server::logging_layer())
        .init();
    synapse_mcp::run(cli, config).await
}
