//! The command line as a user types it: each subcommand's help lists the options it uses;
//! options placed as earlier versions took them still work, with a notice naming the new form;
//! bad values are refused naming the fix; a failed command prints its error once; `workspace
//! delete` asks first (or takes `--yes`); a new store says so in one line; names in the config
//! file that match nothing are refused, or warned of.

use std::io::{BufRead as _, Write as _};
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{
    Transcript, assert_golden_text, binary, call, example, quiet_home, redact, run_command,
    spawn_binary,
};

/// The lines of stderr that logging wrote at `level` (`WARN`), redacted.
fn logged(stderr: &str, level: &str) -> String {
    let marker = format!(" {level} ");
    let mut kept = String::new();
    for line in redact(stderr).lines().filter(|line| line.contains(&marker)) {
        kept.push_str(line);
        kept.push('\n');
    }
    kept
}

#[test]
fn each_subcommand_lists_only_the_options_it_uses() {
    let mut helps = Transcript::default();
    for command in [
        &["token", "list", "--help"][..],
        &["token", "add", "--help"],
        &["workspace", "delete", "--help"],
        &["workspace", "put", "--help"],
        &["doctor", "--help"],
        &["skills", "update", "--help"],
        &["tools", "check", "--help"],
    ] {
        let (out, stderr, ok) = run_command(command);
        assert!(ok, "{stderr}");
        helps.add(&command.join(" "), &out);
    }
    helps.assert_golden("command_line/help.txt");
    // Serving, with or without `serve`, takes every one of them.
    for command in [&["--help"][..], &["serve", "--help"]] {
        let (out, _, _) = run_command(command);
        for option in [
            "--skills",
            "--tools",
            "--trust-project",
            "--data-dir",
            "--workspace ",
            "--store",
            "--workspace-max-bytes",
            "--skill-body-limit",
            "--config",
            "--log-level",
        ] {
            assert!(out.contains(option), "{command:?} lacks {option}:\n{out}");
        }
    }
}

#[test]
fn options_placed_as_before_still_work_with_a_notice_naming_the_new_form() {
    let folder = tempfile::tempdir().unwrap();
    let data = folder.path().display().to_string();
    let tokens = folder.path().join("tokens.toml");
    std::fs::write(&tokens, "").unwrap();
    let tokens = tokens.display().to_string();
    let mut said = Transcript::default();

    let (out, stderr, ok) =
        run_command(&["--data-dir", &data, "--skills", &data, "workspace", "list"]);
    assert!(ok, "{stderr}");
    said.add(
        "--data-dir and --skills before `workspace list`: stdout",
        &redact(&out),
    );
    said.add("stderr", &logged(&stderr, "WARN"));

    let (out, stderr, ok) =
        run_command(&["token", "list", "--tokens", &tokens, "--workspace", "w"]);
    assert!(ok, "{stderr}");
    assert_eq!(out, "");
    said.add(
        "--workspace after `token list`: stderr",
        &logged(&stderr, "WARN"),
    );

    let (_, stderr, ok) = run_command(&["workspace", "list", "--data-dir", &data]);
    assert!(ok, "{stderr}");
    said.add("the new form: stderr", &logged(&stderr, "WARN"));
    said.assert_golden("command_line/old-placements.txt");
}

#[test]
fn bad_values_are_refused_naming_the_value_and_the_fix_and_errors_print_once() {
    let mut refusals = Transcript::default();
    for (heading, arguments) in [
        ("--log-level loud", &["--log-level", "loud"][..]),
        (
            "--log-level with a bad directive",
            &["--log-level", "synapse_mcp=loud"],
        ),
        ("--workspace \"\"", &["--workspace", ""]),
        (
            "token add --workspace \"\"",
            &[
                "token",
                "add",
                "--tokens",
                "t",
                "--principal",
                "p",
                "--workspace",
                "",
            ],
        ),
    ] {
        let (out, stderr, ok) = run_command(arguments);
        assert!(!ok && out.is_empty(), "{arguments:?} was accepted");
        refusals.add(heading, &stderr);
    }
    refusals.assert_golden("command_line/bad-values.txt");

    // The OS error once, and no backtrace even where one is asked for.
    let output = Command::new(binary())
        .env("HOME", quiet_home())
        .env("RUST_BACKTRACE", "1")
        .args(["--config", "/missing/config.toml"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "Error: cannot read config file /missing/config.toml: No such file or directory (os error 2)\n"
    );
}

#[test]
fn a_new_store_says_so_in_one_line() {
    let folder = tempfile::tempdir().unwrap();
    let data = folder.path().display().to_string();
    let (_, stderr, ok) = run_command(&["doctor", "--data-dir", &data, "--log-level", "info"]);
    assert!(ok, "{stderr}");
    assert_eq!(
        redact(&stderr),
        "<time>  INFO synapse_mcp::store: created store at <tmp>/synapse.db (schema v7)\n"
    );
    let (_, stderr, ok) = run_command(&["doctor", "--data-dir", &data, "--log-level", "info"]);
    assert!(ok, "{stderr}");
    assert_eq!(stderr, "", "an up-to-date store is opened without a word");
}

/// `workspace delete` of a workspace holding two variables: refused without a terminal or
/// `--yes`, asked on a terminal (kept on `n`, deleted on `y`), deleted with `--yes`.
#[tokio::test]
async fn workspace_delete_asks_first_or_takes_yes() {
    let folder = tempfile::tempdir().unwrap();
    let data = folder.path().display().to_string();
    let fill = |workspace: &'static str| {
        let data = data.clone();
        async move {
            let client = spawn_binary(
                &["--data-dir", &data, "--workspace", workspace],
                crate::common::TestClient::new(crate::common::Elicitation::Unsupported),
            )
            .await;
            for name in ["a", "b"] {
                call(&client, "WriteVar", json!({"name": name, "value": name})).await;
            }
            client.cancel().await.unwrap();
        }
    };
    fill("notes").await;
    let mut said = Transcript::default();
    let (out, stderr, ok) = run_command(&["workspace", "delete", "notes", "--data-dir", &data]);
    assert!(!ok && out.is_empty());
    said.add("without a terminal", &redact(&stderr));
    let on_terminal = |answer: &str| {
        let line = format!("{} workspace delete notes --data-dir {data}", binary());
        let mut child = Command::new("script")
            .args(["--quiet", "--return", "--command", &line, "/dev/null"])
            .env("HOME", quiet_home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // Answer once the question is on the terminal, as a person would.
        let mut terminal = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut asked = Vec::new();
        terminal.read_until(b']', &mut asked).unwrap();
        writeln!(stdin, "{answer}").unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut terminal, &mut rest).unwrap();
        let status = child.wait().unwrap();
        let shown = format!("{}{rest}", String::from_utf8_lossy(&asked)).replace('\r', "");
        (status.success(), redact(&shown))
    };
    let (ok, shown) = on_terminal("n");
    assert!(!ok);
    said.add("on a terminal, answered n", &shown);
    let (out, _, _) = run_command(&["workspace", "list", "--data-dir", &data]);
    assert!(out.contains("\nnotes "), "kept: {out}");
    let (ok, shown) = on_terminal("y");
    assert!(ok);
    said.add("on a terminal, answered y", &shown);

    fill("research").await;
    let (out, stderr, ok) = run_command(&[
        "workspace",
        "delete",
        "research",
        "--yes",
        "--data-dir",
        &data,
    ]);
    assert!(ok, "{stderr}");
    said.add("--yes", &redact(&out));
    let (out, _, _) = run_command(&["workspace", "list", "--data-dir", &data]);
    said.add("left", &redact(&out));
    said.assert_golden("command_line/workspace-delete.txt");
}

/// The configuration's names that match nothing: built-in ones stop the start naming the
/// valid ones, others are warned of once the server knows its script and upstream tools.
#[tokio::test]
async fn config_names_that_match_nothing_are_refused_or_warned_of() {
    let folder = tempfile::tempdir().unwrap();
    let start = |config: &str| {
        let path = folder.path().join("config.toml");
        std::fs::write(&path, config).unwrap();
        let path = path.display().to_string();
        run_command(&[
            "--store",
            "memory",
            "--log-level",
            "warn",
            "--config",
            &path,
        ])
    };
    let mut said = Transcript::default();
    for (heading, config) in [
        ("[tools.WrteVar]", "[tools.WrteVar]\nexecution = \"auto\"\n"),
        ("[tools.Nothing]", "[tools.Nothing]\nenabled = false\n"),
        ("[groups] snapshot", "[groups]\nsnapshot = false\n"),
    ] {
        let (_, stderr, ok) = start(config);
        assert!(!ok);
        said.add(heading, &redact(&stderr));
    }
    // Warned of: a group no folder or upstream names, a script tool of no group.
    let (_, stderr, _) =
        start("[groups]\nmine = true\n\n[tools.lab__count]\nexecution = \"auto\"\n");
    said.add(
        "[groups] mine, [tools.lab__count]",
        &logged(&stderr, "WARN"),
    );
    said.assert_golden("command_line/config-names.txt");

    // An upstream's tool is known once the upstream has listed its tools, also when its first
    // try failed (it is not warned of as listing nothing meanwhile).
    let command = example("upstream_server").display().to_string();
    let started_once = folder.path().join("started-once");
    let second_try = format!(
        "[ -e {once:?} ] && exec {command:?}; touch {once:?}; exit 3",
        once = started_once.display()
    );
    for (command, args) in [
        (command.as_str(), "[]".to_owned()),
        ("sh", format!("[\"-c\", {second_try:?}]")),
    ] {
        let path = folder.path().join("upstream.toml");
        std::fs::write(
            &path,
            format!(
                "[[upstream]]\nname = \"test\"\ncommand = {command:?}\nargs = {args}\n\n[tools.test__echo]\nexecution = \"auto\"\n\n[tools.test__nope]\nexecution = \"auto\"\n"
            ),
        )
        .unwrap();
        let mut child = tokio::process::Command::new(binary())
            .env("HOME", quiet_home())
            .args(["--store", "memory", "--log-level", "warn", "--config"])
            .arg(&path)
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
            child.stderr.take().unwrap(),
        ));
        let mut read = Vec::new();
        let warned = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("[tools.") {
                    return line;
                }
                read.push(line);
            }
            panic!("the server ended without the warning; it said: {read:#?}")
        })
        .await
        .expect("warned within 30 s");
        assert_golden_text("command_line/upstream-tool-name.txt", &redact(&warned));
    }
}
