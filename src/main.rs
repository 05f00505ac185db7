//! The `synapse-mcp` binary: parse the command line, log to stderr, serve.

use clap::Parser;
use synapse_mcp::config::{Cli, Config};

#[tokio::main]
async fn main() -> anyhow::Result<std::process::ExitCode> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(cli.log_filter()))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let config = Config::load(&cli)?;
    Ok(synapse_mcp::run(&cli, &config).await?)
}
