//! The `deploy/` files hold together without a container engine or systemd running them: every
//! command line they give parses as ours (no flag that does not exist), the config file loads,
//! the compose file is YAML with the health checks, volume and ordering it promises, the
//! Dockerfile builds in two stages and runs as a user with a health check on `/healthz`, and
//! `systemd-analyze verify` accepts the unit where systemd is installed.

use serde_json::Value;

use crate::common::{binary, manifest};

fn deploy_file(name: &str) -> String {
    std::fs::read_to_string(manifest(&format!("deploy/{name}"))).unwrap()
}

/// Fails unless `arguments` (after the program name) parse as synapse-mcp's command line, each
/// option where it belongs (no deprecation notice).
fn assert_parses(origin: &str, arguments: &[String]) -> synapse_mcp::config::Cli {
    let line = std::iter::once("synapse-mcp".into()).chain(arguments.iter().map(Into::into));
    let cli = synapse_mcp::config::Cli::try_parse_scoped(line)
        .unwrap_or_else(|error| panic!("{origin}: {arguments:?} does not parse: {error}"));
    assert_eq!(cli.notices, Vec::<String>::new(), "{origin}: {arguments:?}");
    cli
}

#[test]
fn the_systemd_unit_runs_a_command_that_parses_and_verifies() {
    let unit = deploy_file("synapse-mcp.service");
    let start = unit
        .lines()
        .find_map(|line| line.strip_prefix("ExecStart="))
        .unwrap();
    let mut words = start.split_whitespace().map(str::to_owned);
    assert_eq!(words.next().unwrap(), "/usr/local/bin/synapse-mcp");
    let arguments: Vec<String> = words.collect();
    let cli = assert_parses("ExecStart", &arguments);
    assert_eq!(
        cli.options().config.as_deref(),
        Some(std::path::Path::new("/etc/synapse-mcp/config.toml"))
    );
    for hardening in [
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "StateDirectory=synapse-mcp",
        "User=synapse-mcp",
        "CapabilityBoundingSet=\n",
    ] {
        assert!(unit.contains(hardening), "the unit lacks `{hardening}`");
    }
    let verify = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output();
    if verify.is_err() {
        #[allow(clippy::print_stderr, reason = "the note that a check was skipped")]
        {
            eprintln!("note: systemd-analyze is not installed; the unit was not verified");
        }
        return;
    }
    // `verify` checks that ExecStart's program exists: point it at the binary under test.
    let folder = tempfile::tempdir().unwrap();
    let copy = folder.path().join("synapse-mcp.service");
    std::fs::write(&copy, unit.replace("/usr/local/bin/synapse-mcp", binary())).unwrap();
    let verified = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        verified.status.success() && verified.stderr.is_empty(),
        "systemd-analyze verify: {}",
        String::from_utf8_lossy(&verified.stderr)
    );
}

#[test]
fn the_config_file_for_the_unit_loads() {
    let cli = <synapse_mcp::config::Cli as clap::Parser>::parse_from([
        "synapse-mcp",
        "--config",
        manifest("deploy/config.toml").to_str().unwrap(),
    ]);
    let config = synapse_mcp::app::Settings::load(&cli).unwrap();
    let http = config.http.expect("the file serves HTTP");
    assert_eq!(http.listen.to_string(), "0.0.0.0:8080");
    assert_eq!(
        http.tokens.as_deref(),
        Some(std::path::Path::new("/var/lib/synapse-mcp/tokens.toml"))
    );
    assert_eq!(
        config.metrics.map(|address| address.to_string()).as_deref(),
        Some("127.0.0.1:9464")
    );
    assert!(matches!(
        config.store,
        synapse_mcp::store::Location::Postgres(_)
    ));
}

#[test]
fn the_dockerfile_builds_in_two_stages_and_runs_as_a_user_with_a_health_check() {
    let dockerfile = deploy_file("Dockerfile");
    let stages = dockerfile
        .lines()
        .filter(|line| line.starts_with("FROM "))
        .count();
    assert_eq!(stages, 2, "a build stage and a runtime stage");
    assert!(dockerfile.contains("cargo build --release --locked --bin synapse-mcp"));
    assert!(dockerfile.contains("\nUSER 10001:10001\n"));
    assert!(dockerfile.contains("http://127.0.0.1:8080/healthz"));
    let command = dockerfile
        .lines()
        .find_map(|line| line.strip_prefix("CMD "))
        .unwrap();
    let arguments: Vec<String> = serde_json::from_str(command).unwrap();
    let cli = assert_parses("CMD", &arguments);
    assert!(matches!(
        cli.command,
        Some(synapse_mcp::config::Command::Serve(_))
    ));
}

#[test]
fn the_compose_file_waits_for_a_healthy_postgres_and_keeps_its_data() {
    let text = deploy_file("compose.yaml");
    let compose: Value = serde_saphyr::from_str(&text).unwrap();
    let services = &compose["services"];
    for service in ["postgres", "synapse"] {
        assert!(
            services[service]["healthcheck"]["test"].is_array(),
            "{service} has a health check"
        );
    }
    assert_eq!(
        services["synapse"]["depends_on"]["postgres"]["condition"],
        "service_healthy"
    );
    assert_eq!(
        services["postgres"]["volumes"][0],
        "postgres-data:/var/lib/postgresql/data"
    );
    assert!(compose["volumes"].get("postgres-data").is_some());
    assert_eq!(
        services["synapse"]["build"]["dockerfile"],
        "deploy/Dockerfile"
    );
    // The command as compose runs it, the password put in as compose would.
    let arguments: Vec<String> = services["synapse"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|argument| {
            let argument = argument.as_str().unwrap();
            match argument.split_once("${") {
                Some((before, rest)) => {
                    format!("{before}secret{}", rest.split_once('}').unwrap().1)
                }
                None => argument.to_owned(),
            }
        })
        .collect();
    let cli = assert_parses("compose command", &arguments);
    assert_eq!(
        cli.options().store.as_deref(),
        Some("postgres://synapse:secret@postgres:5432/synapse")
    );
    let config = synapse_mcp::app::Settings::load(&cli).unwrap();
    assert!(config.http.is_some() && config.metrics.is_some());
}
