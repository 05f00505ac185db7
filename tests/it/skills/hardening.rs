//! Skill folders built to hurt the server, driven over stdio: saves through symlinks, link
//! loops, huge and special files, approvals that must not cover more than they say, a call
//! cancelled while its approval is open, and saves that must stay bounded.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::Fixture;
use crate::common::{
    Client, Elicitation, RawSession, TestClient, call, is_error, spawn_binary, text, write_skill,
};

const AUTO: &str = "[tools.SkillSave]\nexecution = \"auto\"\n";

async fn client(fixture: &Fixture, config: &str, elicitation: Elicitation) -> (Client, TestClient) {
    let path = fixture.root().with_file_name("config.toml");
    std::fs::write(&path, config).unwrap();
    let mut args = fixture.args();
    args.extend(["--config".to_owned(), path.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let observer = TestClient::new(elicitation);
    (spawn_binary(&args, observer.clone()).await, observer)
}

/// A skill folder `name` in the fixture root with a SKILL.md.
fn skill(fixture: &Fixture, name: &str) -> std::path::PathBuf {
    let description = "A test skill. Use when testing.";
    write_skill(&fixture.root(), name, description, &format!("# {name}"))
}

fn save(name: &str, files: &Value) -> Value {
    json!({"name": name, "description": "A test skill. Use when testing.", "body": "# Steps", "files": files})
}

#[tokio::test]
async fn a_save_never_writes_through_a_symlink() {
    let fixture = Fixture::new();
    let outside = fixture.root().with_file_name("outside");
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("target.txt"), "original").unwrap();
    let victim = skill(&fixture, "victim");
    std::os::unix::fs::symlink(outside.join("target.txt"), victim.join("notes.md")).unwrap();
    std::os::unix::fs::symlink(outside.join("dir"), victim.join("docs")).unwrap();
    let (client, _) = client(&fixture, AUTO, Elicitation::Unsupported).await;

    let replaced = call(
        &client,
        "SkillSave",
        save("victim", &json!({"notes.md": "PWNED"})),
    )
    .await;
    assert!(!is_error(&replaced), "{}", text(&replaced));
    assert_eq!(
        std::fs::read_to_string(outside.join("target.txt")).unwrap(),
        "original"
    );
    let notes = victim.join("notes.md");
    assert!(!std::fs::symlink_metadata(&notes).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "PWNED");

    let through = call(
        &client,
        "SkillSave",
        save("victim", &json!({"docs/evil.txt": "PWNED"})),
    )
    .await;
    assert!(
        is_error(&through) && text(&through).contains("`docs/evil.txt` is refused"),
        "{}",
        text(&through)
    );
    assert!(!outside.join("dir/evil.txt").exists());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_approved_save_covers_only_its_own_skill() {
    let fixture = Fixture::new();
    skill(&fixture, "victim");
    let remember = Elicitation::Accept(json!({"approve": true, "remember": true}));
    let (client, observer) = client(&fixture, "", remember).await;
    for name in ["first-save", "first-save", "victim"] {
        let result = call(&client, "SkillSave", save(name, &json!({"notes.md": "x"}))).await;
        assert!(!is_error(&result), "{}", text(&result));
    }
    let asked = observer.asked();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked[1].contains("skill `victim` only") && asked[1].contains("`remember`"),
        "the question says what it covers: {}",
        asked[1]
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_approval_without_remember_covers_just_this_call() {
    let fixture = Fixture::new();
    let once = Elicitation::Accept(json!({"approve": true}));
    let (client, observer) = client(&fixture, "", once).await;
    for _ in 0..2 {
        let result = call(&client, "SkillSave", save("twice", &json!({}))).await;
        assert!(!is_error(&result), "{}", text(&result));
    }
    assert_eq!(observer.asked().len(), 2);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn link_loops_are_walked_once() {
    let fixture = Fixture::new();
    let loopy = skill(&fixture, "loopy");
    std::fs::write(loopy.join("notes.md"), "n").unwrap();
    for index in 0..3 {
        std::os::unix::fs::symlink(".", loopy.join(format!("l{index}"))).unwrap();
    }
    let client = fixture.client().await;
    let loaded = text(&call(&client, "SkillLoad", json!({"name": "loopy"})).await);
    let listed: Vec<&str> = loaded
        .lines()
        .filter(|line| line.contains("<file>"))
        .collect();
    assert_eq!(listed, ["  <file>notes.md</file>"], "{loaded}");
    let skills = client.list_skills(None).await.unwrap().skills;
    let entry = serde_json::to_value(skills.iter().find(|skill| skill.name() == "loopy")).unwrap();
    assert_eq!(
        entry["resources"].as_array().map(Vec::len),
        Some(2),
        "SKILL.md and notes.md: {entry}"
    );
    client.cancel().await.unwrap();
}

/// The peak resident memory of a process, in KiB.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_window_of_a_huge_file_reads_only_the_window() {
    let fixture = Fixture::new();
    let big = skill(&fixture, "big");
    let sparse = std::fs::File::create(big.join("sparse.txt")).unwrap();
    sparse.set_len(512 * 1024 * 1024).unwrap();
    let args = fixture.args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut session = RawSession::initialized(&args).await;
    let answer = session
        .call(
            1,
            "SkillReadFile",
            json!({"name": "big", "path": "sparse.txt", "length": 10}),
        )
        .await;
    let shown = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        shown.starts_with(
            "[File `sparse.txt` of skill `big`: characters 0–10 of a large file; more remains"
        ),
        "{answer}"
    );
    let peak = peak_memory(session.pid());
    assert!(
        peak < 128 * 1024,
        "peak RSS {peak} KiB for a 10-character window"
    );
    session
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "skills/list", "params": {}}))
        .await;
    let listed = session.response(2).await;
    assert!(listed.get("result").is_some(), "{listed}");
    let peak = peak_memory(session.pid());
    assert!(peak < 128 * 1024, "peak RSS {peak} KiB after skills/list");
}

#[tokio::test]
async fn a_fifo_is_left_out_of_the_listing_of_its_skill_only() {
    let fixture = Fixture::new();
    let piped = skill(&fixture, "piped");
    let fifo = piped.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let client = fixture.client().await;
    let skills = client.list_skills(None).await.unwrap().skills;
    let entry = serde_json::to_value(skills.iter().find(|skill| skill.name() == "piped")).unwrap();
    assert_eq!(
        entry["resources"].as_array().map(Vec::len),
        Some(1),
        "{entry}"
    );
    let read = call(
        &client,
        "SkillReadFile",
        json!({"name": "piped", "path": "pipe"}),
    )
    .await;
    assert!(
        is_error(&read) && text(&read).contains("not a regular file"),
        "{}",
        text(&read)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_call_cancelled_while_asking_never_runs() {
    let fixture = Fixture::new();
    let config = fixture.root().with_file_name("config.toml");
    std::fs::write(&config, "[tools.SkillSave]\nexecution = \"ask-always\"\n").unwrap();
    let mut args = fixture.args();
    args.extend(["--config".to_owned(), config.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut session = RawSession::start(&args);
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await;
    session.response(0).await;
    session
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    for round in 1..=10 {
        let name = format!("cancelled-{round}");
        session
            .send(
                &json!({"jsonrpc": "2.0", "id": round, "method": "tools/call",
                "params": {"name": "SkillSave", "arguments": save(&name, &json!({}))}}),
            )
            .await;
        let question = loop {
            let message = session.next_message().await;
            if message["method"] == "elicitation/create" {
                break message;
            }
        };
        session
            .send(
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": round, "reason": "changed my mind"}}),
            )
            .await;
        session
            .send(&json!({"jsonrpc": "2.0", "id": question["id"],
                "result": {"action": "accept", "content": {"approve": true, "remember": true}}}))
            .await;
    }
    // A later call that runs: the cancelled ones, had they run, ran before it.
    session
        .send(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
            "params": {"name": "SkillSave", "arguments": save("kept", &json!({}))}}))
        .await;
    let answer = loop {
        let message = session.next_message().await;
        if message["method"] == "elicitation/create" {
            session
                .send(&json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"action": "accept", "content": {"approve": true}}}))
                .await;
        } else if message["id"] == 99 {
            break message;
        }
    };
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    assert!(fixture.root().join("kept").is_dir());
    for round in 1..=10 {
        let folder = fixture.root().join(format!("cancelled-{round}"));
        assert!(
            !folder.exists(),
            "a cancelled save wrote {}",
            folder.display()
        );
    }
}

#[tokio::test]
async fn saves_are_bounded_and_old_backups_pruned() {
    let fixture = Fixture::new();
    let (client, _) = client(&fixture, AUTO, Elicitation::Unsupported).await;
    for round in 0..8 {
        let result = call(
            &client,
            "SkillSave",
            save("versioned", &json!({"round.md": round.to_string()})),
        )
        .await;
        assert!(!is_error(&result), "{}", text(&result));
    }
    let backups = std::fs::read_dir(fixture.root().join(".backups"))
        .unwrap()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("versioned-")
        })
        .count();
    assert_eq!(backups, 5);
    let huge = "x".repeat(2 * 1024 * 1024);
    let refused = call(
        &client,
        "SkillSave",
        save("too-big", &json!({"huge.md": huge})),
    )
    .await;
    assert!(
        is_error(&refused) && text(&refused).contains("more than the 1048576"),
        "{}",
        text(&refused)
    );
    let many: serde_json::Map<String, Value> = (0..101)
        .map(|index| (format!("f{index}.md"), json!("x")))
        .collect();
    let refused = call(&client, "SkillSave", save("too-many", &Value::Object(many))).await;
    assert!(
        is_error(&refused) && text(&refused).contains("at most 100 files"),
        "{}",
        text(&refused)
    );
    assert!(!fixture.root().join("too-big").exists() && !fixture.root().join("too-many").exists());
    client.cancel().await.unwrap();
}

/// Whether a process is gone (or a zombie), waiting a little for a kill to land.
pub(crate) async fn ends(pid_file: &Path) -> bool {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    for _ in 0..100 {
        let alive = std::fs::read_to_string(&stat).is_ok_and(|stat| !stat.contains(") Z "));
        if !alive {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    false
}

/// A tmpfs mounted for one test and unmounted when dropped.
struct SmallDisk {
    directory: tempfile::TempDir,
}

impl SmallDisk {
    /// `None` (the test is skipped) where mounting is not allowed.
    fn mount() -> Option<Self> {
        let directory = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8M", "tmpfs"])
            .arg(directory.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        mounted.then_some(Self { directory })
    }

    fn fill(&self) {
        use std::io::Write as _;
        let mut filler = std::fs::File::create(self.directory.path().join("filler")).unwrap();
        let block = vec![0_u8; 64 * 1024];
        while filler.write_all(&block).is_ok() {}
        while filler.write_all(&block[..512]).is_ok() {}
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let unmounted = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.directory.path())
            .status();
        assert!(unmounted.is_ok_and(|status| status.success()));
    }
}

/// How the server that wrote `kept` ended before the disk filled up.
enum Ending {
    /// Killed, as a full disk usually finds it: its database's side files stay.
    Killed,
    /// Exited cleanly: SQLite removed its side files, which the next start must create again.
    Clean,
}

/// A server that wrote `kept`, ended as told; the disk then filled up and a second server
/// started on it, which must read `kept` back. `None` where mounting is not allowed.
async fn restarted_on_a_full_disk(ending: Ending) -> Option<(SmallDisk, Client)> {
    let disk = SmallDisk::mount()?;
    let data = disk.directory.path().join("data").display().to_string();
    let args = ["--data-dir", data.as_str()];
    let mut first = RawSession::initialized(&args).await;
    let written = first
        .call(1, "WriteVar", json!({"name": "kept", "value": "safe"}))
        .await;
    assert_eq!(written["result"]["isError"], json!(false), "{written}");
    let (mut process, stdin, _stdout) = first.split();
    match ending {
        Ending::Killed => process.kill().await.unwrap(),
        Ending::Clean => {
            drop(stdin);
            assert!(process.wait().await.unwrap().success());
        }
    }
    disk.fill();
    let client = spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await;
    let read = call(&client, "ReadVar", json!({"name": "kept"})).await;
    assert!(text(&read).ends_with("safe"), "{}", text(&read));
    Some((disk, client))
}

#[tokio::test]
async fn a_full_disk_still_starts_and_serves_reads() {
    // Mounting needs root; elsewhere the test has nothing to check.
    if let Some((_disk, client)) = restarted_on_a_full_disk(Ending::Killed).await {
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_full_disk_after_a_clean_shutdown_starts_read_only() {
    let Some((_disk, client)) = restarted_on_a_full_disk(Ending::Clean).await else {
        return;
    };
    // A store that cannot be written is no mistake of the caller's: an internal error.
    let refused = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("WriteVar")
                .with_arguments(rmcp::object!({"name": "new", "value": "lost?"})),
        )
        .await
        .expect_err("a write to a read-only store fails");
    let rmcp::ServiceError::McpError(refused) = refused else {
        panic!("not a JSON-RPC error: {refused}");
    };
    assert_eq!(
        refused.code,
        rmcp::model::ErrorCode::INTERNAL_ERROR,
        "{refused:?}"
    );
    assert!(refused.message.contains("read-only"), "{}", refused.message);
    client.cancel().await.unwrap();
}
