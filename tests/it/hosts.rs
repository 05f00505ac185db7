//! `synapse-mcp config HOST`: the entry a host needs, printed with this binary's absolute path,
//! and `--write` merging it into the host's own file beside what is there, with a backup.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{binary, error_part};

/// `synapse-mcp ARGS` with `home` as HOME and `folder` as the current folder: stdout, stderr and
/// whether it succeeded.
fn run(home: &Path, folder: &Path, args: &[&str]) -> (String, String, bool) {
    let output = std::process::Command::new(binary())
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .current_dir(folder)
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
        output.status.success(),
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn each_host_gets_its_entry_with_this_binarys_absolute_path() {
    let directory = tempfile::tempdir().unwrap();
    let (home, project) = (
        directory.path().join("home"),
        directory.path().join("project"),
    );
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let command = std::fs::canonicalize(binary())
        .unwrap()
        .display()
        .to_string();
    let (out, stderr, ok) = run(&home, &project, &["config", "claude-code"]);
    assert!(ok, "{stderr}");
    let project_file = project.join(".mcp.json").display().to_string();
    assert_eq!(
        out,
        format!(
            "# Claude Code (this project) reads {project_file}: merge this into it (or run \
             `synapse-mcp config claude-code --write`)\n{}\n# or, for every project of this \
             user:\nclaude mcp add --scope user synapse -- {command}\n",
            serde_json::to_string_pretty(&json!({"mcpServers": {"synapse": {
                "type": "stdio", "command": command, "args": []}}}))
            .unwrap()
        )
    );
    let (_, stderr, ok) = run(&home, &project, &["config", "claude"]);
    assert!(!ok);
    assert_eq!(
        error_part(&stderr),
        "Error: there is no host `claude`; give one of `claude-desktop`, `claude-code`, \
         `cursor`, `vscode`\n"
    );
}

#[test]
fn write_merges_into_the_hosts_file_and_keeps_the_old_one() {
    let directory = tempfile::tempdir().unwrap();
    let (home, project) = (
        directory.path().join("home"),
        directory.path().join("project"),
    );
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let command = std::fs::canonicalize(binary())
        .unwrap()
        .display()
        .to_string();
    let cursor = home.join(".cursor/mcp.json");
    let before = r#"{"mcpServers": {"github": {"command": "gh-mcp"}}}"#;
    std::fs::write(&cursor, before).unwrap();

    let (out, stderr, ok) = run(
        &home,
        &project,
        &["config", "cursor", "--write", "--", "--workspace", "notes"],
    );
    assert!(ok, "{stderr}");
    assert_eq!(
        read_json(&cursor),
        json!({"mcpServers": {
            "github": {"command": "gh-mcp"},
            "synapse": {"command": command, "args": ["--workspace", "notes"]},
        }})
    );
    let backups: Vec<_> = std::fs::read_dir(home.join(".cursor"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path != &cursor)
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(std::fs::read_to_string(&backups[0]).unwrap(), before);
    assert_eq!(
        out,
        format!(
            "added `synapse` in {}; the file as it was is {}\n",
            cursor.display(),
            backups[0].display()
        )
    );

    // VS Code's file belongs to the folder it runs in, and is made with its folder.
    let (out, stderr, ok) = run(&home, &project, &["config", "vscode", "--write"]);
    assert!(ok, "{stderr}");
    let vscode = project.join(".vscode/mcp.json");
    assert_eq!(out, format!("added `synapse` in {}\n", vscode.display()));
    assert_eq!(
        read_json(&vscode),
        json!({"servers": {"synapse": {"type": "stdio", "command": command, "args": []}}})
    );

    // A file that is not JSON is left as it is, with the reason.
    std::fs::write(&vscode, "{ // a comment\n}").unwrap();
    let (_, stderr, ok) = run(&home, &project, &["config", "vscode", "--write"]);
    assert!(!ok);
    assert_eq!(
        error_part(&stderr),
        format!(
            "Error: {} is not a JSON object (key must be a string at line 1 column 3), so the \
             entry cannot be merged into it; fix the file, or add the entry printed by \
             `synapse-mcp config vscode` by hand\n",
            vscode.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&vscode).unwrap(),
        "{ // a comment\n}"
    );
}
