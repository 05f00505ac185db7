//! The examples cannot rot: `examples/client_session.rs` and `examples/floor_walkthrough.rs` run
//! against the real binary and must finish their walks (`cargo test` builds the examples beside
//! the test binary), the Claude Desktop config is valid JSON that names the server, and the
//! upstream config checks.

use serde_json::Value;

use crate::common::{binary, copy_tree, example, manifest};

/// Runs an example against the server binary, and checks that it succeeds and prints each step.
fn run_example(name: &str, arguments: &[&str], steps: &[&str]) {
    let output = std::process::Command::new(example(name))
        .args(["--server", binary()])
        .args(arguments)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "the example failed: {shown}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for step in steps {
        assert!(shown.contains(step), "missing `{step}` in:\n{shown}");
    }
}

#[test]
fn the_client_session_example_walks_the_main_job() {
    let directory = tempfile::tempdir().unwrap();
    let skills = directory.path().join("skills");
    copy_tree(&manifest("tests/fixtures/skills"), &skills);
    run_example(
        "client_session",
        &["--skills", skills.to_str().unwrap()],
        &[
            "connected to synapse-mcp",
            "1. WriteVar report: 2400 characters stored",
            "2. WriteState with $VAR_REF{{report:0:60}} stored: ",
            "Quarterly report. Revenue grew 12% while costs stayed flat.",
            "3. SkillSearch best match: ",
            "4. RunPlan ok=true order=[[\"title\",\"body\"],[\"receipt\"]]",
            "5. SnapshotProcess: 3 snapshots, errors []",
            "state article.title = ",
            "session complete",
        ],
    );
}

#[test]
fn the_floor_walkthrough_lists_jumps_and_reprocesses() {
    run_example(
        "floor_walkthrough",
        &[],
        &[
            "1. SnapshotProcess: 3 floors bound",
            "   floor 0 swipe 0: \"角色.名字 = \\\"林\\\"; 背包.1 = \\\"短剑\\\"\"",
            "   floor 2 swipe 1: ",
            "3. floor 2 (swipe 1): 金币 30",
            "(the server asks before deleting snapshots: approved from now on)",
            "4. SnapshotReprocess from floor 2: 2 new floors, 2 cleared, 2 old snapshots deleted",
            "5. SnapshotDiff, the newest floor before → after: [",
            "walkthrough complete",
        ],
    );
}

#[test]
fn the_claude_desktop_config_names_the_server() {
    let text = std::fs::read_to_string(manifest("examples/claude_desktop_config.json")).unwrap();
    let config: Value = serde_json::from_str(&text).unwrap();
    let server = &config["mcpServers"]["synapse"];
    assert!(server["command"].as_str().unwrap().ends_with("synapse-mcp"));
    assert!(server["args"].is_array());
}

#[test]
fn the_upstream_example_config_checks() {
    let cli = <synapse_mcp::config::Cli as clap::Parser>::parse_from([
        "synapse-mcp",
        "--config",
        manifest("examples/upstream.toml").to_str().unwrap(),
    ]);
    let config = synapse_mcp::app::Settings::load(&cli).unwrap();
    let names: Vec<&str> = config
        .upstreams
        .iter()
        .map(|upstream| upstream.name.as_str())
        .collect();
    assert_eq!(names, ["everything", "files"]);
    assert_eq!(config.upstreams[0].command, "npx");
    assert_eq!(config.disabled_tools, ["everything__get-env"]);
}
