//! Faults a real client causes, against the real binary: it closes stdin while calls run, it
//! disappears mid-call (both pipes gone), it cancels running calls. The slow call is a real tool:
//! `SkillRunScript` on a skill whose script starts a `sleep` and writes that process's id, so the
//! tests can see the script die with the call. Afterwards the server must have exited cleanly,
//! and a restart on the same data folder must find every acknowledged write and a sound store.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout};

use crate::common::{
    Elicitation, RawSession, TestClient, binary, call, spawn_binary, text, write_skill,
};

/// A data folder, a config that turns scripts on without asking, and a skill whose script
/// sleeps in the background of `sh` (so only a process-group kill stops it).
struct Setup {
    directory: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let directory = tempfile::tempdir().unwrap();
        let description = "Sleeps, for the fault tests.";
        let skills = directory.path().join("skills");
        let skill = write_skill(&skills, "slow", description, "Run scripts/slow.sh.");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::write(
            skill.join("scripts/slow.sh"),
            "sleep \"$2\" &\necho $! > \"$1\"\nwait\n",
        )
        .unwrap();
        std::fs::write(
            directory.path().join("config.toml"),
            "capacity = 5000\n[groups]\nscripts = true\n[tools.SkillRunScript]\nexecution = \"auto\"\n",
        )
        .unwrap();
        Self { directory }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.directory.path().join(relative)
    }

    fn args(&self) -> Vec<String> {
        [
            "--data-dir",
            "data",
            "--skills",
            "skills",
            "--config",
            "config.toml",
        ]
        .chunks(2)
        .flat_map(|pair| [pair[0].to_owned(), self.path(pair[1]).display().to_string()])
        .collect()
    }

    async fn raw(&self) -> RawSession {
        let args = self.args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        RawSession::initialized(&args).await
    }

    /// A raw session, split into its process and pipes, whose call 1 runs a 30-second script;
    /// with the script's process id.
    async fn raw_with_a_sleeper(
        &self,
    ) -> (
        tokio::process::Child,
        tokio::process::ChildStdin,
        tokio::io::BufReader<tokio::process::ChildStdout>,
        u32,
    ) {
        let (child, mut stdin, stdout) = self.raw().await.split();
        stdin
            .write_all(format!("{}\n", self.sleeper(1, "pid")).as_bytes())
            .await
            .unwrap();
        let sleeping = self.sleeping_pid("pid").await;
        (child, stdin, stdout, sleeping)
    }

    async fn client(&self) -> crate::common::Client {
        let args = self.args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await
    }

    /// A `SkillRunScript` request whose `sleep` writes its process id to `pid_file`.
    fn sleeper(&self, id: i64, pid_file: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "SkillRunScript",
            "arguments": {"name": "slow", "script": "scripts/slow.sh",
                "args": [self.path(pid_file).display().to_string(), "30"], "timeoutSeconds": 120}}})
    }

    /// The id of the sleeping process, once its script has written it.
    async fn sleeping_pid(&self, pid_file: &str) -> u32 {
        let path = self.path(pid_file);
        for _ in 0..400 {
            if let Ok(text) = std::fs::read_to_string(&path)
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the script never wrote {}", path.display());
    }
}

/// Whether a process has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

async fn assert_ends_soon(pid: u32, what: &str) {
    for _ in 0..200 {
        if ended(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what}: process {pid} is still running five seconds later");
}

async fn exit_status(child: &mut Child) -> ExitStatus {
    tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server exits within ten seconds")
        .unwrap()
}

fn write_request(index: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": 1_000 + index, "method": "tools/call", "params": {
        "name": "WriteVar", "arguments": {"name": format!("fault-{index}"), "value": format!("value {index}")}}})
}

/// Reads responses until `count` writes were acknowledged; returns their indices.
async fn acknowledged_writes(stdout: &mut BufReader<ChildStdout>, count: usize) -> Vec<usize> {
    let mut acknowledged = Vec::new();
    let mut line = String::new();
    while acknowledged.len() < count {
        line.clear();
        let read = tokio::time::timeout(Duration::from_secs(30), stdout.read_line(&mut line))
            .await
            .expect("the writes are answered")
            .unwrap();
        assert!(read > 0, "stdout closed early");
        let response: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = response["id"].as_u64().filter(|id| *id >= 1_000) {
            assert_eq!(response["result"]["isError"], json!(false), "{line}");
            acknowledged.push(usize::try_from(id).unwrap() - 1_000);
        }
    }
    acknowledged
}

/// After a restart: every acknowledged write is there, and the store passes its check.
async fn assert_store_sound(setup: &Setup, acknowledged: &[usize]) {
    let client = setup.client().await;
    for index in acknowledged {
        let read = call(
            &client,
            "ReadVar",
            json!({"name": format!("fault-{index}")}),
        )
        .await;
        assert!(
            text(&read).ends_with(&format!("value {index}")),
            "acknowledged write {index} lost: {}",
            text(&read)
        );
    }
    client.cancel().await.unwrap();
    let data = setup.path("data");
    let output = std::process::Command::new(binary())
        .args(["doctor", "--data-dir", data.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "doctor failed: {report}");
    assert!(report.contains("ok"), "{report}");
}

#[tokio::test]
async fn stdin_closed_while_calls_run_exits_cleanly_and_keeps_every_acknowledged_write() {
    let setup = Setup::new();
    let (mut child, mut stdin, mut stdout, sleeping) = setup.raw_with_a_sleeper().await;
    for index in 0..200 {
        stdin
            .write_all(format!("{}\n", write_request(index)).as_bytes())
            .await
            .unwrap();
    }
    let acknowledged = acknowledged_writes(&mut stdout, 50).await;
    drop(stdin);
    let status = exit_status(&mut child).await;
    assert!(status.success(), "the server exited with {status}");
    assert_ends_soon(
        sleeping,
        "the script of a call cut short by the end of input",
    )
    .await;
    assert_store_sound(&setup, &acknowledged).await;
}

#[tokio::test]
async fn a_client_that_vanishes_mid_call_leaves_a_sound_store() {
    let setup = Setup::new();
    let (mut child, mut stdin, mut stdout, sleeping) = setup.raw_with_a_sleeper().await;
    let plan = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "RunPlan", "arguments": {"steps": (0..50).map(|step| json!({
            "_id": format!("s{step}"), "_tool": "WriteState", "path": format!("chain.s{step}"),
            "value": if step == 0 { json!(0) } else { json!(format!("†steps.s{}", step - 1)) }
        })).collect::<Vec<_>>()}}});
    stdin
        .write_all(format!("{plan}\n").as_bytes())
        .await
        .unwrap();
    for index in 0..200 {
        stdin
            .write_all(format!("{}\n", write_request(index)).as_bytes())
            .await
            .unwrap();
    }
    let acknowledged = acknowledged_writes(&mut stdout, 20).await;
    drop(stdin);
    drop(stdout);
    let status = exit_status(&mut child).await;
    assert!(
        status.code().is_some(),
        "the server died of a signal: {status}"
    );
    assert_ne!(status.code(), Some(101), "the server panicked");
    assert_ends_soon(sleeping, "the script of a call whose client vanished").await;
    assert_store_sound(&setup, &acknowledged).await;
}

#[tokio::test]
async fn cancelled_calls_stop_and_the_session_goes_on() {
    let setup = Setup::new();
    let mut session = setup.raw().await;
    session.send(&setup.sleeper(1, "alone")).await;
    let alone = setup.sleeping_pid("alone").await;
    let plan = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "RunPlan", "arguments": {"steps": [
        {"_id": "slow", "_tool": "SkillRunScript", "name": "slow", "script": "scripts/slow.sh",
         "args": [setup.path("planned").display().to_string(), "30"], "timeoutSeconds": 120},
        {"_id": "after", "_tool": "WriteState", "path": "after", "value": "†steps.slow"}
    ]}}});
    session.send(&plan).await;
    let planned = setup.sleeping_pid("planned").await;
    for id in [1, 2] {
        session
            .send(
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "the user changed their mind"}}),
            )
            .await;
    }
    assert_ends_soon(alone, "a cancelled SkillRunScript").await;
    assert_ends_soon(planned, "the script of a cancelled plan's step").await;
    // The session goes on; the cancelled requests get no answer, and the step after the
    // cancelled one never ran.
    session
        .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .await;
    let pong = session.response(3).await;
    assert_eq!(pong["result"], json!({}));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let state = session.call(4, "ReadState", json!({})).await;
    let shown = state["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        shown.ends_with("\n{}"),
        "the step after a cancelled one wrote: {shown}"
    );
}
