//! Skills from git over stdio, with local repositories only (`git+file://`), made here with gix:
//! a source at a tag is fetched when the server starts and served (`SkillSearch`, `SkillLoad`,
//! `skills/list`); a new tag is fetched by `skills update` and served after a restart; a
//! branch is updated from one commit to the next; a repository that went missing keeps the
//! last good copy; a host the allowlist does not name is refused; an https fetch that hangs
//! (on a local port that never answers) holds up neither the handshake nor the other roots.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gix::ObjectId;
use gix::objs::tree::EntryKind;
use gix::refs::transaction::PreviousValue;
use serde_json::json;

use super::search;
use crate::common::{
    Client, Elicitation, TestClient, assert_golden_text, call, is_error, quiet_home, spawn_binary,
    text,
};

/// A bare repository whose commits go to `main`.
struct TestRepository {
    path: PathBuf,
    git: gix::Repository,
    head: Option<ObjectId>,
}

fn signature() -> gix::actor::SignatureRef<'static> {
    gix::actor::SignatureRef {
        name: "Test".into(),
        email: "test@example.com".into(),
        time: "1700000000 +0000",
    }
}

impl TestRepository {
    fn new(path: &Path) -> Self {
        let repository = gix::init_bare(path).unwrap();
        Self {
            path: path.to_owned(),
            git: repository,
            head: None,
        }
    }

    /// Commits exactly `files` (path, text) on `main`.
    fn commit(&mut self, message: &str, files: &[(&str, &str)]) -> ObjectId {
        let empty = ObjectId::empty_tree(gix::hash::Kind::Sha1);
        let mut editor = self.git.edit_tree(empty).unwrap();
        for (path, contents) in files {
            let blob = self.git.write_blob(contents.as_bytes()).unwrap();
            editor.upsert(*path, EntryKind::Blob, blob).unwrap();
        }
        let tree = editor.write().unwrap().detach();
        let id = self
            .git
            .commit_as(
                signature(),
                signature(),
                "refs/heads/main",
                message,
                tree,
                self.head,
            )
            .unwrap()
            .detach();
        self.head = Some(id);
        id
    }

    fn lightweight_tag(&self, name: &str) {
        let head = self.head.unwrap();
        self.git
            .tag_reference(name, head, PreviousValue::MustNotExist)
            .unwrap();
    }

    fn annotated_tag(&self, name: &str) {
        let head = self.head.unwrap();
        self.git
            .tag(
                name,
                head,
                gix::objs::Kind::Commit,
                Some(signature()),
                "a release",
                PreviousValue::MustNotExist,
            )
            .unwrap();
    }

    fn source(&self, reference: &str) -> String {
        format!("git+file://{}@{reference}#skills", self.path.display())
    }
}

fn skill_files(body: &str) -> Vec<(&'static str, String)> {
    vec![
        ("README.md", "Not a skill.\n".to_owned()),
        (
            "skills/release-notes/SKILL.md",
            format!(
                "---\nname: release-notes\ndescription: Draft release notes from merged pull requests. Use when preparing a release.\n---\n{body}\n"
            ),
        ),
        (
            "skills/release-notes/references/style.md",
            "Short lines.\n".to_owned(),
        ),
    ]
}

fn commit_skill(repository: &mut TestRepository, message: &str, body: &str) -> ObjectId {
    let files = skill_files(body);
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(path, contents)| (*path, contents.as_str()))
        .collect();
    repository.commit(message, &files)
}

/// Runs a `synapse-mcp` command that does not serve; its exit status, stdout and stderr.
fn run(arguments: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(crate::common::binary())
        .env("HOME", quiet_home())
        .args(arguments)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

async fn serve(source: &str, data: &Path) -> Client {
    let data = data.display().to_string();
    let arguments = ["--skills", source, "--data-dir", data.as_str()];
    spawn_binary(&arguments, TestClient::new(Elicitation::Unsupported)).await
}

/// The body `SkillLoad` serves, once the skill is there (the first fetch runs beside the
/// session, so the skill may join a moment after the handshake).
async fn load_when_served(client: &Client, name: &str) -> String {
    for _ in 0..200 {
        let result = call(client, "SkillLoad", json!({"name": name})).await;
        if !is_error(&result) {
            return text(&result);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("skill `{name}` was never served");
}

#[tokio::test]
async fn a_git_file_source_at_a_tag_is_served_then_updated_to_a_new_tag() {
    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().join("data");
    let mut repository = TestRepository::new(&directory.path().join("skills-repo.git"));
    let first = commit_skill(&mut repository, "first", "Version one body.");
    repository.lightweight_tag("v1");

    // Fetched when the server starts, without a `git` binary, and served like any skill.
    let client = serve(&repository.source("v1"), &data).await;
    let loaded = load_when_served(&client, "release-notes").await;
    assert_golden_text("skills/git/loaded-v1.txt", &loaded);
    assert_eq!(
        search(&client, json!({"query": "release notes"})).await,
        ["release-notes"]
    );
    let listed = client.list_skills(None).await.unwrap().skills;
    let uris: Vec<&str> = listed.iter().map(|skill| skill.uri.as_str()).collect();
    assert_eq!(uris, ["skill://release-notes/SKILL.md"]);
    client.cancel().await.unwrap();

    let second = commit_skill(&mut repository, "second", "Version two body.");
    repository.annotated_tag("v2");
    let data_argument = data.display().to_string();
    let source = repository.source("v2");
    let (succeeded, stdout, stderr) = run(&[
        "skills",
        "update",
        "--skills",
        &source,
        "--data-dir",
        &data_argument,
    ]);
    assert!(succeeded, "{stdout}{stderr}");
    assert_eq!(stdout, format!("{source}: fetched {second}\n"));

    // Pointed at the new tag, the server serves its copy at once.
    let client = serve(&source, &data).await;
    let loaded = load_when_served(&client, "release-notes").await;
    assert_golden_text("skills/git/loaded-v2.txt", &loaded);
    client.cancel().await.unwrap();

    let (succeeded, report, _) = run(&[
        "skills",
        "check",
        "--skills",
        &source,
        "--data-dir",
        &data_argument,
    ]);
    assert!(succeeded, "{report}");
    let skill_md = skill_files("Version two body.")[1].1.clone();
    let digest = super::surface::sha256(skill_md.as_bytes());
    assert!(
        report.contains(&format!("ref v2, commit {second}, fetched ")),
        "{report}"
    );
    assert!(
        report.contains(&format!("    {digest} SKILL.md\n")),
        "{report}"
    );
    assert_golden_text("skills/git/check-report.txt", &report);
    assert_ne!(first, second);
}

#[tokio::test]
async fn skills_update_moves_a_branch_source_to_its_new_commit() {
    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().join("data").display().to_string();
    let mut repository = TestRepository::new(&directory.path().join("skills-repo.git"));
    let first = commit_skill(&mut repository, "first", "Version one body.");
    let source = repository.source("main");
    let update = || run(&["skills", "update", "--skills", &source, "--data-dir", &data]);

    assert_eq!(update().1, format!("{source}: fetched {first}\n"));
    assert_eq!(update().1, format!("{source}: unchanged at {first}\n"));
    let second = commit_skill(&mut repository, "second", "Version two body.");
    let (succeeded, stdout, _) = update();
    assert!(succeeded);
    assert_eq!(stdout, format!("{source}: {first} → {second}\n"));
}

#[tokio::test]
async fn a_source_that_cannot_be_fetched_keeps_the_last_good_copy() {
    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().join("data");
    let data_argument = data.display().to_string();
    let mut repository = TestRepository::new(&directory.path().join("skills-repo.git"));
    let first = commit_skill(&mut repository, "first", "Version one body.");
    repository.lightweight_tag("v1");
    let source = repository.source("v1");
    let arguments = ["--skills", source.as_str(), "--data-dir", &data_argument];
    let (succeeded, _, _) = run(&[&["skills", "update"][..], &arguments].concat());
    assert!(succeeded);

    std::fs::remove_dir_all(&repository.path).unwrap();
    let (succeeded, stdout, _) = run(&[&["skills", "update"][..], &arguments].concat());
    assert!(!succeeded, "{stdout}");
    assert!(
        stdout.starts_with(&format!("{source}: failed: cannot open the repository")),
        "{stdout}"
    );
    assert!(
        stdout.ends_with(&format!("; keeping the last good copy, {first}\n")),
        "{stdout}"
    );

    let client = serve(&source, &data).await;
    let loaded = load_when_served(&client, "release-notes").await;
    assert_golden_text("skills/git/loaded-v1.txt", &loaded);
    client.cancel().await.unwrap();
    let (_, report, _) = run(&[&["skills", "check"][..], &arguments].concat());
    assert!(report.contains(&format!("commit {first}")), "{report}");
    assert_golden_text("skills/git/check-report-after-a-failed-update.txt", &report);
}

#[test]
fn sources_the_allowlist_does_not_name_and_bad_values_are_refused() {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(&config, "skill_sources_allow = [\"github.com/org\"]\n").unwrap();
    let config = config.display().to_string();
    let refused = "git+https://evil.example/team/skills@v1";
    let (succeeded, _, stderr) =
        run(&["--config", &config, "--skills", refused, "skills", "check"]);
    assert!(!succeeded);
    assert_golden_text("skills/git/not-allowed.txt", &stderr);

    // Second round, finding 5: escaped dots passed the prefix and the fetch left it.
    let mut refusals = String::new();
    for escaped in [
        "git+https://github.com/org/%2e%2e/evil/repo@v1",
        "git+https://github.com/org/.%2E/evil/repo@v1",
        "git+https://github.com/org/%252e%252e/evil/repo@v1",
        "git+https://github.com/org/..%2fevil/repo@v1",
        // Found by the skill_sources fuzz target: `?` ends a URL's path, `..` is taken back.
        "git+https://github.com/org/..%3fevil/repo@v1",
    ] {
        let (succeeded, _, stderr) =
            run(&["--config", &config, "--skills", escaped, "skills", "check"]);
        assert!(!succeeded, "{escaped} was accepted: {stderr}");
        refusals.push_str(escaped);
        refusals.push('\n');
        refusals.push_str(&stderr);
        refusals.push('\n');
    }
    assert_golden_text("skills/git/escaped-paths.txt", &refusals);

    let (succeeded, _, stderr) = run(&["--skills", "git+file:///srv/repo", "skills", "check"]);
    assert!(!succeeded);
    assert_golden_text("skills/git/names-no-ref.txt", &stderr);
}

#[tokio::test]
async fn a_fetch_that_hangs_never_holds_up_the_session_or_the_other_roots() {
    // A port that completes TCP handshakes (the kernel's backlog) but never answers: the https
    // fetch of the source waits on it for as long as the server runs.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let directory = tempfile::tempdir().unwrap();
    let folder = directory.path().join("skills");
    crate::common::write_skill(
        &folder,
        "local-notes",
        "Keep local notes. Use when testing.",
        "Local body.",
    );
    let folder = folder.display().to_string();
    let source = format!("git+https://127.0.0.1:{port}/org/skills@v1");
    let data = directory.path().join("data").display().to_string();
    let arguments = [
        "--skills",
        &folder,
        "--skills",
        &source,
        "--data-dir",
        &data,
    ];
    // A guard, not a speed check: a session held up by the fetch would wait forever.
    let session = async {
        let client = spawn_binary(&arguments, TestClient::new(Elicitation::Unsupported)).await;
        let loaded = text(&call(&client, "SkillLoad", json!({"name": "local-notes"})).await);
        client.cancel().await.unwrap();
        loaded
    };
    let loaded = tokio::time::timeout(Duration::from_mins(2), session)
        .await
        .expect("the session waited on the hanging fetch");
    assert!(loaded.contains("Local body."), "{loaded}");
    drop(silent);
}

/// Second round, finding 4: a 2.2 MB repository holding a 2 GiB blob of zeros took the server to
/// 2,072 MB before the copy's 256 MiB bound fired: the blob was inflated, then measured. Now
/// each object is measured from its header first. Here a 300 MiB blob (300 KB in the
/// repository) is refused with the bound's message, and `skills update` stays small.
#[tokio::test]
async fn a_blob_over_the_copy_limit_is_refused_before_it_is_inflated() {
    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().join("data").display().to_string();
    let mut repository = TestRepository::new(&directory.path().join("skills-repo.git"));
    commit_skill(&mut repository, "first", "Version one body.");
    let written = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "head -c 314572800 /dev/zero | git --git-dir '{}' hash-object -w --stdin",
            repository.path.display()
        ))
        .output()
        .unwrap();
    assert!(written.status.success(), "{written:?}");
    let blob =
        ObjectId::from_hex(String::from_utf8(written.stdout).unwrap().trim().as_bytes()).unwrap();
    let head = repository.head.unwrap();
    let tree = repository.git.find_commit(head).unwrap().tree_id().unwrap();
    let mut editor = repository.git.edit_tree(tree).unwrap();
    editor
        .upsert("skills/release-notes/zeros.bin", EntryKind::Blob, blob)
        .unwrap();
    let tree = editor.write().unwrap().detach();
    let commit = repository
        .git
        .commit_as(
            signature(),
            signature(),
            "refs/heads/main",
            "zeros",
            tree,
            [head],
        )
        .unwrap()
        .detach();
    repository.head = Some(commit);
    let source = repository.source("main");
    let output = std::process::Command::new("/usr/bin/time")
        .args(["-f", "peak %M KiB"])
        .arg(crate::common::binary())
        .args(["skills", "update", "--skills", &source, "--data-dir", &data])
        .env("HOME", quiet_home())
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("would hold more than 20000 files or 256 MiB"),
        "{stdout}\n{stderr}"
    );
    let peak: u64 = stderr
        .lines()
        .rev()
        .find_map(|line| {
            line.strip_prefix("peak ")?
                .strip_suffix(" KiB")?
                .parse()
                .ok()
        })
        .unwrap();
    assert!(peak < 128 * 1024, "peak {peak} KiB\n{stderr}");
}

/// A search while a source's first fetch is under way says the source is loading instead of
/// that nothing matches; hits from the other roots come with a one-line note; once the source
/// is in, the note is gone.
#[tokio::test]
async fn a_search_while_a_source_is_still_loading_says_so() {
    // As above: an https fetch that never completes keeps the source loading for the test.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let directory = tempfile::tempdir().unwrap();
    let source = format!("git+https://127.0.0.1:{port}/org/skills@v1");
    let data = directory.path().join("data").display().to_string();
    let client = spawn_binary(
        &["--skills", &source, "--data-dir", &data],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let searched = call(&client, "SkillSearch", json!({"query": "release notes"})).await;
    assert_eq!(
        text(&searched),
        format!(
            "No skill matches yet: 1 skill source is still loading ({source}); search again in a \
             moment."
        )
    );
    assert_eq!(
        searched.structured_content,
        Some(json!({"matched_skills": [], "loading": [source]}))
    );
    client.cancel().await.unwrap();

    let folder = directory.path().join("skills");
    crate::common::write_skill(
        &folder,
        "local-notes",
        "Keep local notes. Use when testing.",
        "Local body.",
    );
    let folder = folder.display().to_string();
    let client = spawn_binary(
        &[
            "--skills",
            &folder,
            "--skills",
            &source,
            "--data-dir",
            &data,
        ],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let searched = text(&call(&client, "SkillSearch", json!({"query": "local notes"})).await);
    let note = format!(
        "Note: 1 skill source is still loading ({source}); its skills are not searched yet.\n<available-skills>\n"
    );
    assert!(searched.contains(&note), "{searched}");
    client.cancel().await.unwrap();
    drop(silent);

    // A local repository lands a moment after the start; from then on no note.
    let mut repository = TestRepository::new(&directory.path().join("skills-repo.git"));
    commit_skill(&mut repository, "first", "Version one body.");
    repository.lightweight_tag("v1");
    let client = serve(&repository.source("v1"), &directory.path().join("data")).await;
    load_when_served(&client, "release-notes").await;
    let searched = call(&client, "SkillSearch", json!({"query": "release notes"})).await;
    let found = searched.structured_content.unwrap();
    assert_eq!(found["matched_skills"][0]["name"], json!("release-notes"));
    assert_eq!(found.get("loading"), None, "{found}");
    client.cancel().await.unwrap();
}

/// `SkillLoad` of a skill not found while a source's first fetch is under way waits for that
/// fetch, and tells a client that gave a `progressToken`; the wait ends with the fetch, or
/// when the call is cancelled.
#[tokio::test]
async fn skill_load_waits_for_a_first_fetch_and_reports_it() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let directory = tempfile::tempdir().unwrap();
    let source = format!("git+https://127.0.0.1:{port}/org/skills@v1");
    let data = directory.path().join("data").display().to_string();
    let mut session =
        crate::common::RawSession::initialized(&["--skills", &source, "--data-dir", &data]).await;
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "SkillLoad", "arguments": {"name": "release-notes"},
            "_meta": {"progressToken": "f1"}}}),
        )
        .await;
    let first = session.message().await;
    assert_eq!(
        first,
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
            "progressToken": "f1", "progress": 0.0, "total": 1.0,
            "message": format!("waiting for the first fetch of {source}")}})
    );
    session
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1, "reason": "test"}}),
        )
        .await;
    session
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    let answered = session.message().await;
    assert_eq!(answered, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    drop(session);
    drop(silent);

    // A local repository: the first call is served from it, once it is in.
    let mut repository = TestRepository::new(&directory.path().join("skills-repo.git"));
    commit_skill(&mut repository, "first", "Version one body.");
    repository.lightweight_tag("v1");
    let source = repository.source("v1");
    let data = directory.path().join("data-2").display().to_string();
    let mut session =
        crate::common::RawSession::initialized(&["--skills", &source, "--data-dir", &data]).await;
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "SkillLoad", "arguments": {"name": "release-notes"},
            "_meta": {"progressToken": "f2"}}}),
        )
        .await;
    let mut progress = Vec::new();
    let answer = loop {
        let message = session.message().await;
        if message["id"] == json!(1) {
            break message["result"].clone();
        }
        progress.push(message["params"]["message"].clone());
    };
    assert_eq!(answer["isError"], json!(false), "{answer}");
    // The fetch may have landed before the call came.
    if !progress.is_empty() {
        assert_eq!(
            progress,
            [
                json!(format!("waiting for the first fetch of {source}")),
                json!("1 of 1 skill sources fetched")
            ]
        );
    }
}
