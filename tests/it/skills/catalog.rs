//! The catalog from the outside: `synapse-mcp skills check` in both modes, `index.json` written
//! into a writable root and reused on the next start, and name collisions between roots.

use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Fixture, copy_tree, fixtures};
use crate::common::{
    Elicitation, TestClient, assert_golden_text, binary, call, quiet_home, spawn_binary, text,
    write_skill,
};

fn check(args: &[&str]) -> (String, bool) {
    let output = Command::new(binary())
        .env("HOME", quiet_home())
        .args(["skills", "check"])
        .args(args)
        .output()
        .unwrap();
    let report = String::from_utf8(output.stdout).unwrap();
    (report, output.status.success())
}

#[test]
fn check_reports_every_finding_and_fails_by_mode() {
    let fixture = Fixture::new();
    let root = fixture.root();
    let root = root.to_str().unwrap();
    let (lenient, passed) = check(&[root]);
    assert!(!passed, "skipped skills fail even the lenient check");
    let line = |file: &str, rest: &str| format!("{root}/{file}{rest}");
    for expected in [
        line(
            "api-docs/SKILL.md",
            ":3: warning [yaml-unquoted-colon] `description`: the value holds `: ` and must be quoted; it was read as quoted text",
        ),
        line(
            "broken-yaml/SKILL.md",
            ":3: error (skipped) [yaml]: the YAML cannot be parsed: unclosed bracket '['",
        ),
        line(
            "git-commits/SKILL.md",
            ":7: warning [unknown-key] `model`: is not a key of the Agent Skills specification (kept, ignored)",
        ),
        line(
            "mismatch-folder/SKILL.md",
            ":2: warning [name-matches-folder] `name`: `other-name` must equal the folder name `mismatch-folder`",
        ),
        line(
            "no-description/SKILL.md",
            ": error (skipped) [description-required] `description`: is required: say what the skill does and when to use it",
        ),
        line("escaped", ": warning [symlink-leaves-root]: symlink to "),
        "10 skills usable, 2 skipped, 0 errors, 4 warnings (lenient mode, 1 roots)".to_owned(),
    ] {
        assert!(
            lenient.contains(&expected),
            "missing {expected:?} in\n{lenient}"
        );
    }
    assert!(
        !lenient.contains("hidden-skill") && !lenient.contains("git-skill"),
        "{lenient}"
    );
    let (strict, passed) = check(&[root, "--strict"]);
    assert!(!passed);
    assert!(
        strict.contains(&line(
            "mismatch-folder/SKILL.md",
            ":2: error [name-matches-folder]"
        )),
        "{strict}"
    );
    assert!(
        strict.contains(&line(
            "api-docs/SKILL.md",
            ":3: error [yaml-unquoted-colon]"
        )),
        "{strict}"
    );
    assert_golden_text("skills/catalog/strict-summary.txt", &strict);
}

#[test]
fn the_bundled_skills_pass_the_strict_check() {
    let bundled = concat!(env!("CARGO_MANIFEST_DIR"), "/skills");
    let (report, passed) = check(&[bundled, "--strict"]);
    assert!(passed, "{report}");
    let (default_roots, passed) = check(&["--strict"]);
    assert!(passed, "{default_roots}");
    assert_golden_text("skills/catalog/default-roots.txt", &default_roots);
}

fn read_index(fixture: &Fixture) -> Value {
    let text = std::fs::read_to_string(fixture.root().join("index.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The index entry of the skill `pdf-tools`.
fn pdf_entry(index: &Value) -> Value {
    index["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["name"] == "pdf-tools")
        .unwrap()
        .clone()
}

#[tokio::test]
async fn index_json_is_written_in_the_seed_format_and_reused_while_mtimes_match() {
    let fixture = Fixture::new();
    let client = fixture.client().await;
    // The scan runs beside the session; a request that needs the skills waits for it.
    client.list_all_prompts().await.unwrap();
    client.cancel().await.unwrap();
    let mut index = read_index(&fixture);
    assert_eq!(
        (
            index["version"].clone(),
            index["totalSkills"].clone(),
            index["totalTools"].clone()
        ),
        (json!("1.0.0"), json!(10), json!(1))
    );
    let pdf = pdf_entry(&index);
    let path = fixture.root().join("pdf-tools").display().to_string();
    for (key, value) in [
        ("title", json!("Pdf Tools")),
        ("version", json!("1.2.0")),
        ("tags", json!(["pdf", "documents"])),
        ("author", json!("Synapse Tests")),
        ("tools", json!(["skill:pdf-tools:merge"])),
        ("scriptCount", json!(1)),
        ("path", json!(path)),
        ("hasSkillMd", json!(true)),
    ] {
        assert_eq!(pdf[key], value, "{key}");
    }
    assert!(pdf["lastModified"].as_str().unwrap().ends_with('Z'));
    // A warm start takes the catalog from the index: an edit of the index (not of SKILL.md)
    // shows, which proves the SKILL.md was not read.
    for entry in index["skills"].as_array_mut().unwrap() {
        if entry["name"] == "csv-cleaner" {
            entry["frontmatter"]["description"] = json!("FROM THE INDEX");
        }
    }
    std::fs::write(fixture.root().join("index.json"), index.to_string()).unwrap();
    let description = || async {
        let client = fixture.client().await;
        let result = call(&client, "SkillSearch", json!({"query": "csv cleaner"})).await;
        client.cancel().await.unwrap();
        text(&result)
    };
    assert!(description().await.contains("FROM THE INDEX"));
    assert_eq!(
        read_index(&fixture)["updatedAt"],
        index["updatedAt"],
        "a warm start with nothing changed does not rewrite index.json"
    );
    // A changed SKILL.md (a new modification time) is read again.
    let file = fixture.root().join("csv-cleaner/SKILL.md");
    let contents = std::fs::read(&file).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&file, contents).unwrap();
    assert!(!description().await.contains("FROM THE INDEX"));
}

#[tokio::test]
async fn the_index_lists_scripts_added_or_removed_while_skill_md_stays_unchanged() {
    let fixture = Fixture::new();
    let scripts = fixture.root().join("pdf-tools/scripts");
    let listed = || async {
        let client = fixture.client().await;
        client.list_all_prompts().await.unwrap();
        client.cancel().await.unwrap();
        let pdf = pdf_entry(&read_index(&fixture));
        (pdf["tools"].clone(), pdf["scriptCount"].clone())
    };
    assert_eq!(listed().await, (json!(["skill:pdf-tools:merge"]), json!(1)));
    std::fs::write(scripts.join("split.sh"), "echo split\n").unwrap();
    assert_eq!(
        listed().await,
        (
            json!(["skill:pdf-tools:merge", "skill:pdf-tools:split"]),
            json!(2)
        )
    );
    std::fs::remove_file(scripts.join("merge.py")).unwrap();
    assert_eq!(listed().await, (json!(["skill:pdf-tools:split"]), json!(1)));
}

/// Three skills named `pdf-tools`: the fixture's, one in a folder named otherwise beside it
/// (`K-Dense-AI-pdf-tools`, as collections copied side by side name them), one in a later
/// root. None is dropped: the first keeps the name, the others are served under names of their
/// own with URIs that still end in `pdf-tools`, and `skills check` names both folders.
#[tokio::test]
async fn colliding_names_are_served_under_names_of_their_own() {
    let fixture = Fixture::new();
    let renamed_folder = fixture.root().join("K-Dense-AI-pdf-tools");
    std::fs::create_dir_all(&renamed_folder).unwrap();
    std::fs::write(
        renamed_folder.join("SKILL.md"),
        "---\nname: pdf-tools\ndescription: The copied pdf-tools of another collection.\n---\n# Copied\n\nFill PDF forms.\n",
    )
    .unwrap();
    // A copy, so the index.json the server writes into each root stays out of the repository.
    let extra = fixture.root().with_file_name("skills-extra");
    copy_tree(&fixtures().join("skills-extra"), &extra);
    let mut args = fixture.args();
    args.extend(["--skills".to_owned(), extra.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let client = spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await;
    let listed = client.list_skills(None).await.unwrap().skills;
    let named: Vec<(String, String)> = listed
        .iter()
        .filter(|skill| skill.name() == "pdf-tools")
        .map(|skill| (skill.uri.clone(), skill.frontmatter.description.clone()))
        .collect();
    let entry = |uri: &str, description: &str| (uri.to_owned(), description.to_owned());
    assert_eq!(
        named,
        [
            entry(
                "skill://k-dense-ai-pdf-tools/pdf-tools/SKILL.md",
                "The copied pdf-tools of another collection."
            ),
            entry(
                "skill://pdf-tools/SKILL.md",
                "Merge, split and rotate PDF files. Use when the user wants to combine PDFs, extract pages or fix page order."
            ),
            entry(
                "skill://skills-extra-pdf-tools/pdf-tools/SKILL.md",
                "A second pdf-tools that must lose the name collision."
            ),
        ]
    );
    assert!(listed.iter().any(|skill| skill.name() == "extra-skill"));

    let loaded = text(
        &call(
            &client,
            "SkillLoad",
            json!({"name": "k-dense-ai-pdf-tools"}),
        )
        .await,
    );
    assert!(
        loaded.starts_with(
            "<skill_content name=\"k-dense-ai-pdf-tools\">\n# Copied\n\nFill PDF forms."
        ) && loaded.contains(&format!("Skill folder: {}", renamed_folder.display())),
        "{loaded}"
    );
    let uri = "skill://skills-extra-pdf-tools/pdf-tools/SKILL.md";
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text: file, .. } = &read.contents[0]
    else {
        panic!("text")
    };
    assert_golden_text("skills/catalog/renamed-resource.txt", file);
    let got = client
        .get_skill(rmcp::model::GetSkillRequestParams::new(uri))
        .await
        .unwrap();
    assert_eq!(
        (got.skill.uri.as_str(), got.skill.name()),
        (uri, "pdf-tools")
    );
    let wrong = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "skill://skills-extra-pdf-tools/SKILL.md",
        ))
        .await;
    assert!(wrong.is_err(), "the URI must end in the skill's own name");
    client.cancel().await.unwrap();

    let (report, _) = check(&[fixture.root().to_str().unwrap(), extra.to_str().unwrap()]);
    for (loser, served) in [
        (renamed_folder.clone(), "k-dense-ai-pdf-tools"),
        (extra.join("pdf-tools"), "skills-extra-pdf-tools"),
    ] {
        let line = format!(
            "{}/SKILL.md: warning [name-collision]: skill `pdf-tools` at {} has the name of the one at {}, which wins; it is served as `{served}`",
            loser.display(),
            loser.display(),
            fixture.root().join("pdf-tools").display()
        );
        assert!(report.contains(&line), "{line}\n{report}");
    }
}

/// The binary started in `cwd`, which holds project skills.
async fn in_project(cwd: &std::path::Path, args: &[&str]) -> crate::common::Client {
    let mut command = tokio::process::Command::new(binary());
    command
        .current_dir(cwd)
        .env("HOME", quiet_home())
        .args(args)
        .args(["--log-level", "warn"])
        .kill_on_drop(true);
    let transport = rmcp::transport::TokioChildProcess::new(command).unwrap();
    rmcp::ServiceExt::serve(TestClient::new(Elicitation::Unsupported), transport)
        .await
        .unwrap()
}

#[tokio::test]
async fn project_skills_are_served_only_when_trusted_and_then_win() {
    let fixture = Fixture::new();
    let project = fixture.root().with_file_name("project");
    write_skill(
        &project.join(".agents/skills"),
        "pdf-tools",
        "The project's own pdf-tools.",
        "",
    );
    let root = fixture.root().display().to_string();
    let description = |client: crate::common::Client| async move {
        let listed = client.list_skills(None).await.unwrap().skills;
        client.cancel().await.unwrap();
        let pdf = listed
            .into_iter()
            .find(|skill| skill.name() == "pdf-tools")
            .unwrap();
        pdf.frontmatter.description
    };
    let untrusted = in_project(&project, &["--skills", &root]).await;
    assert!(description(untrusted).await.starts_with("Merge, split"));
    let trusted = in_project(&project, &["--skills", &root, "--trust-project"]).await;
    assert_eq!(description(trusted).await, "The project's own pdf-tools.");
}
