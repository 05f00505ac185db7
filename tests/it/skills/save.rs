//! `SkillSave` over stdio: strict checks before writing, a new skill found at once by search,
//! load and the index, an update that keeps other files and backs up the old version, and
//! the ask-once approval it carries by default.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Fixture, search};
use crate::common::{
    Client, Elicitation, TestClient, assert_golden_text, call, is_error, spawn_binary, text,
    wait_for,
};

async fn client(fixture: &Fixture, config: &str, elicitation: Elicitation) -> (Client, TestClient) {
    let path = fixture.root().with_file_name("config.toml");
    std::fs::write(&path, config).unwrap();
    let mut args = fixture.args();
    args.extend(["--config".to_owned(), path.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let observer = TestClient::new(elicitation);
    (spawn_binary(&args, observer.clone()).await, observer)
}

const AUTO: &str = "[tools.SkillSave]\nexecution = \"auto\"\n";

#[tokio::test]
async fn a_saved_skill_is_served_searched_and_indexed_at_once() {
    let fixture = Fixture::new();
    let (client, observer) = client(&fixture, AUTO, Elicitation::Unsupported).await;
    let saved = call(&client, "SkillSave", json!({
        "name": "release-notes", "description": "Write release notes from merged changes. Use when: a version is tagged.",
        "body": "# Release notes\n\nGroup changes by kind.", "files": {"references/template.md": "## Added\n"}})).await;
    assert!(!is_error(&saved), "{}", text(&saved));
    let folder = fixture.root().join("release-notes");
    assert_eq!(
        saved.structured_content.unwrap(),
        json!({"name": "release-notes", "path": folder.display().to_string(),
            "root": fixture.root().display().to_string(), "created": true})
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("references/template.md")).unwrap(),
        "## Added\n"
    );
    assert_eq!(
        search(&client, json!({"query": "release notes"}))
            .await
            .first()
            .map(String::as_str),
        Some("release-notes")
    );
    let loaded = text(&call(&client, "SkillLoad", json!({"name": "release-notes"})).await);
    assert_golden_text("skills/save/loaded-new.txt", &loaded);
    let index: Value = fixture.index().1;
    assert!(
        index["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|entry| entry["name"] == "release-notes")
    );
    let listed = client.list_skills(None).await.unwrap().skills;
    assert!(listed.iter().any(|skill| skill.name() == "release-notes"));
    // Per-skill prompts are off by default, so only the resources change.
    wait_for(&observer, "resources/list_changed").await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_update_keeps_other_files_and_backs_up_the_old_version() {
    let fixture = Fixture::new();
    let (client, _) = client(&fixture, AUTO, Elicitation::Unsupported).await;
    let first = text(&call(&client, "SkillLoad", json!({"name": "pdf-tools"})).await);
    assert!(first.contains("# PDF Tools"));
    let saved = call(&client, "SkillSave", json!({"name": "pdf-tools", "description": "Merge PDFs, version two.", "body": "# PDF Tools v2"})).await;
    let output = saved.structured_content.clone().unwrap();
    assert_eq!(output["created"], json!(false), "{}", text(&saved));
    let backup = std::path::PathBuf::from(output["backup"].as_str().unwrap());
    assert!(
        backup.join("SKILL.md").is_file() && backup.starts_with(fixture.root().join(".backups"))
    );
    let folder = fixture.root().join("pdf-tools");
    assert!(
        folder.join("references/REFERENCE.md").is_file(),
        "other files are kept"
    );
    let skill_md = std::fs::read_to_string(folder.join("SKILL.md")).unwrap();
    assert_golden_text("skills/save/updated-skill-md.txt", &skill_md);
    let again = text(&call(&client, "SkillLoad", json!({"name": "pdf-tools"})).await);
    assert_golden_text("skills/save/loaded-updated.txt", &again);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn invalid_skills_and_paths_are_refused_before_writing() {
    let fixture = Fixture::new();
    let (client, _) = client(&fixture, AUTO, Elicitation::Unsupported).await;
    let cases = [
        (
            json!({"name": "Bad Name", "description": "d", "body": "b"}),
            "[name-format]",
        ),
        (
            json!({"name": "ok", "description": "d".repeat(1025), "body": "b"}),
            "[description-length]",
        ),
        (
            json!({"name": "ok", "description": "d", "body": "b", "files": {"../escape.md": "x"}}),
            "is refused",
        ),
        (
            json!({"name": "ok", "description": "d", "body": "b", "root": "/nowhere"}),
            "cannot save into `/nowhere`",
        ),
    ];
    for (arguments, expected) in cases {
        let result = call(&client, "SkillSave", arguments.clone()).await;
        assert!(
            is_error(&result) && text(&result).contains(expected),
            "{arguments}: {}",
            text(&result)
        );
    }
    assert!(!fixture.root().join("ok").exists());
    assert!(!fixture.root().parent().unwrap().join("escape.md").exists());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn saving_asks_once_by_default() {
    let fixture = Fixture::new();
    let remember = Elicitation::Accept(json!({"approve": true, "remember": true}));
    let (client, observer) = client(&fixture, "", remember).await;
    for name in ["first-save", "first-save"] {
        let result = call(
            &client,
            "SkillSave",
            json!({"name": name, "description": "A saved skill.", "body": "Steps."}),
        )
        .await;
        assert!(!is_error(&result), "{}", text(&result));
    }
    assert_eq!(observer.asked().len(), 1, "{:?}", observer.asked());
    client.cancel().await.unwrap();
    let (client, _) = client_without_elicitation(&fixture).await;
    let refused = call(
        &client,
        "SkillSave",
        json!({"name": "third-save", "description": "d", "body": "b"}),
    )
    .await;
    assert!(is_error(&refused), "{}", text(&refused));
    assert!(!fixture.root().join("third-save").exists());
    client.cancel().await.unwrap();
}

/// A save is checked before the user is asked: a skill that breaks the specification, or
/// cannot go where it would, is refused without a question (the user used to approve a save
/// that then failed).
#[tokio::test]
async fn an_invalid_save_is_refused_before_the_user_is_asked() {
    let fixture = Fixture::new();
    let approve = Elicitation::Accept(json!({"approve": true}));
    let (client, observer) = client(&fixture, "", approve).await;
    for (arguments, expected) in [
        (
            json!({"name": "Bad Name", "description": "d", "body": "b"}),
            "[name-format]",
        ),
        (
            json!({"name": "ok", "description": "d", "body": "b", "root": "/nowhere"}),
            "cannot save into `/nowhere`",
        ),
    ] {
        let result = call(&client, "SkillSave", arguments.clone()).await;
        assert!(
            is_error(&result) && text(&result).contains(expected),
            "{arguments}: {}",
            text(&result)
        );
    }
    assert_eq!(observer.asked(), Vec::<String>::new());
    let valid = call(
        &client,
        "SkillSave",
        json!({"name": "checked-first", "description": "d", "body": "b"}),
    )
    .await;
    assert!(!is_error(&valid), "{}", text(&valid));
    assert_eq!(observer.asked().len(), 1, "{:?}", observer.asked());
    client.cancel().await.unwrap();
}

async fn client_without_elicitation(fixture: &Fixture) -> (Client, TestClient) {
    let mut args = fixture.args();
    args.extend(["--workspace".to_owned(), "fresh".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let observer = TestClient::new(Elicitation::Unsupported);
    (spawn_binary(&args, observer.clone()).await, observer)
}

/// With no skills folder named, a save goes to `~/.synapse/skills`, made by that save; the
/// answer names it, and the skill is served at once. HOME is a temporary folder: the real
/// one is never written.
#[tokio::test]
async fn with_no_folders_given_a_save_goes_to_the_home_skills_folder() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, AUTO).unwrap();
    let config = config.display().to_string();
    let client = crate::common::spawn_binary_at_home(
        home.path(),
        &["--config", &config],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let root = home.path().join(".synapse/skills");
    assert!(!root.exists());
    let saved = call(&client, "SkillSave", json!({
        "name": "standup-notes", "description": "Write a daily standup note. Use when the user asks for a standup summary.",
        "body": "# Standup\n\nYesterday, today, blockers."})).await;
    assert!(!is_error(&saved), "{}", text(&saved));
    let folder = root.join("standup-notes");
    assert_eq!(
        saved.structured_content.unwrap(),
        json!({"name": "standup-notes", "path": folder.display().to_string(),
            "root": root.display().to_string(), "created": true})
    );
    assert!(
        std::fs::read_to_string(folder.join("SKILL.md"))
            .unwrap()
            .starts_with("---\nname: standup-notes\n")
    );
    let loaded = text(&call(&client, "SkillLoad", json!({"name": "standup-notes"})).await);
    assert_golden_text("skills/save/loaded-standup.txt", &loaded);
    client.cancel().await.unwrap();
}
