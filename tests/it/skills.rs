//! The skills library driven the way a client drives it: the real binary over stdio, pointed at
//! a copy of `tests/fixtures/skills` (so that a save lands in a temporary folder) to which the
//! cases git cannot hold are added: a `.git` folder and symlinks that leave the root.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, Transcript, assert_golden_text, call, copy_tree, is_error,
    spawn_binary, text, write_skill,
};

mod catalog;
mod git;
pub(crate) mod hardening;
mod ranking;
mod reload;
mod rerank;
mod save;
mod scripts;
mod sections;
mod surface;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A writable copy of the fixture root, with a data dir beside it.
struct Fixture {
    directory: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path().join("skills");
        copy_tree(&fixtures().join("skills"), &root);
        write_skill(&root.join(".git"), "git-skill", "Never found.", "");
        let outside = fixtures().join("outside");
        std::os::unix::fs::symlink(outside.join("escaped-skill"), root.join("escaped")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("pdf-tools/leak")).unwrap();
        Self { directory }
    }

    fn root(&self) -> PathBuf {
        self.directory.path().join("skills")
    }

    fn args(&self) -> Vec<String> {
        let data = self.directory.path().join("data");
        vec![
            "--skills".into(),
            self.root().display().to_string(),
            "--data-dir".into(),
            data.display().to_string(),
        ]
    }

    /// The index the server keeps of the root in the data folder: its path and content.
    fn index(&self) -> (PathBuf, Value) {
        crate::common::index_of(&self.directory.path().join("data"), "skills", &self.root())
    }

    async fn client(&self) -> Client {
        let args = self.args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await
    }
}

const USABLE: [&str; 10] = [
    "api-docs",
    "crlf-skill",
    "csv-cleaner",
    "git-commits",
    "huge-body",
    "lowercase-file",
    "nested-skill",
    "no-newline",
    "other-name",
    "pdf-tools",
];

#[tokio::test]
async fn the_catalog_holds_the_usable_skills_and_skips_the_rest() {
    let fixture = Fixture::new();
    let client = fixture.client().await;
    let resources = client.list_all_resources().await.unwrap();
    let skills: BTreeSet<String> = resources
        .iter()
        .filter_map(|resource| resource.uri.strip_prefix("skill://"))
        .map(|uri| uri.trim_end_matches("/SKILL.md").to_owned())
        .collect();
    assert_eq!(
        skills,
        USABLE.iter().map(|name| (*name).to_owned()).collect()
    );
    let description = |name: &str| {
        let uri = format!("skill://{name}/SKILL.md");
        let resource = resources
            .iter()
            .find(|resource| resource.uri == uri)
            .unwrap();
        resource.description.clone().unwrap()
    };
    assert_eq!(
        description("csv-cleaner"),
        "Clean tabular data in CSV files: drop empty rows, fix encodings and normalise dates. Use before any analysis of spreadsheets.\n"
    );
    assert_eq!(
        description("git-commits"),
        "Write clear git commit messages.\nUse when the user asks to commit changes or to review a commit history."
    );
    assert_eq!(
        description("api-docs"),
        "Writes reference documentation for HTTP APIs. Use when: the user asks for endpoint docs"
    );
    assert!(description("crlf-skill").ends_with("test line endings."));
    client.cancel().await.unwrap();
}

async fn search(client: &Client, arguments: Value) -> Vec<String> {
    let result = call(client, "SkillSearch", arguments).await;
    assert!(!is_error(&result), "{}", text(&result));
    let matched = result.structured_content.unwrap()["matched_skills"].clone();
    matched
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn search_ranks_by_fields_with_stemming_and_typos() {
    let fixture = Fixture::new();
    let client = fixture.client().await;
    let cases = [
        ("merge pdf files", "pdf-tools"),
        ("cleaning spreadsheets", "csv-cleaner"),
        ("mrege pdfs", "pdf-tools"),
        ("telescopes", "huge-body"),
        ("database migration rollback", "nested-skill"),
        ("commit message", "git-commits"),
        ("kubernetes deployment", "no-newline"),
    ];
    for (query, best) in cases {
        let found = search(&client, json!({"query": query})).await;
        assert_eq!(
            found.first().map(String::as_str),
            Some(best),
            "{query}: {found:?}"
        );
    }
    let tagged = search(
        &client,
        json!({"query": "clean data files", "tags": ["CSV"]}),
    )
    .await;
    assert_eq!(tagged, ["csv-cleaner"]);
    let limited = search(
        &client,
        json!({"query": "use when the user", "maxResults": 2}),
    )
    .await;
    assert_eq!(limited.len(), 2);
    let result = call(&client, "SkillSearch", json!({"query": "merge pdf"})).await;
    assert_golden_text("skills/search-merge-pdf.txt", &text(&result));
    let empty = call(&client, "SkillSearch", json!({"query": "  "})).await;
    assert!(is_error(&empty));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn load_wraps_the_body_lists_resources_and_answers_every_load_whole() {
    let fixture = Fixture::new();
    let client = fixture.client().await;
    let loaded = text(&call(&client, "SkillLoad", json!({"name": "pdf-tools"})).await);
    assert!(loaded.contains(&format!(
        "Skill folder: {}",
        fixture.root().join("pdf-tools").display()
    )));
    assert_golden_text("skills/load-pdf-tools.txt", &loaded);
    // One process serves many conversations: a second load gives the whole body again.
    let again = text(&call(&client, "SkillLoad", json!({"name": "pdf-tools"})).await);
    assert_eq!(again, loaded);
    let forced = text(
        &call(
            &client,
            "SkillLoad",
            json!({"name": "pdf-tools", "force": true}),
        )
        .await,
    );
    assert_eq!(forced, loaded);
    let crlf = text(&call(&client, "SkillLoad", json!({"name": "crlf-skill"})).await);
    assert_golden_text("skills/load-crlf.txt", &crlf);
    let unknown = call(&client, "SkillLoad", json!({"name": "pdf-tool"})).await;
    assert!(is_error(&unknown));
    assert_golden_text("skills/load-unknown.txt", &text(&unknown));
    let huge = text(&call(&client, "SkillLoad", json!({"name": "huge-body"})).await);
    assert!(huge.chars().count() < 45_000);
    assert_golden_text("skills/load-huge-body.txt", &huge);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn files_are_read_in_windows_and_escapes_are_refused() {
    let fixture = Fixture::new();
    let client = fixture.client().await;
    let read = |path: &str| json!({"name": "pdf-tools", "path": path});
    let whole = text(&call(&client, "SkillReadFile", read("references/REFERENCE.md")).await);
    assert_golden_text("skills/read-file-whole.txt", &whole);
    let window = call(
        &client,
        "SkillReadFile",
        json!({"name": "pdf-tools", "path": "references/REFERENCE.md", "start": 2, "length": 4}),
    )
    .await;
    let mut answers = Transcript::default();
    answers.add("a window", &text(&window));
    for escape in [
        "../csv-cleaner/SKILL.md",
        "/etc/passwd",
        "%2e%2e/csv-cleaner/SKILL.md",
        "leak/secret.txt",
        "references/../../x",
    ] {
        let result = call(&client, "SkillReadFile", read(escape)).await;
        assert!(is_error(&result), "{escape} was served: {}", text(&result));
        answers.add(escape, &text(&result));
    }
    let missing = call(&client, "SkillReadFile", read("nope.md")).await;
    answers.add("nope.md", &text(&missing));
    answers.assert_golden("skills/read-file-windows-and-refusals.txt");
    let lower = text(
        &call(
            &client,
            "SkillReadFile",
            json!({"name": "lowercase-file", "path": "SKILL.md"}),
        )
        .await,
    );
    assert_golden_text("skills/read-file-lowercase.txt", &lower);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_bundled_skills_are_served_and_found_by_default() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let cases = [
        ("a tool result was truncated", "passing-large-values"),
        ("create a new skill with a SKILL.md", "writing-skills"),
        ("variables and references", "synapse-workspace"),
    ];
    for (query, best) in cases {
        let found = search(&client, json!({"query": query})).await;
        assert_eq!(
            found.first().map(String::as_str),
            Some(best),
            "{query}: {found:?}"
        );
    }
    let checklist = call(
        &client,
        "SkillReadFile",
        json!({"name": "writing-skills", "path": "references/checklist.md"}),
    )
    .await;
    assert_golden_text("skills/bundled-checklist.txt", &text(&checklist));
    let loaded = text(&call(&client, "SkillLoad", json!({"name": "writing-skills"})).await);
    assert_golden_text("skills/bundled-writing-skills.txt", &loaded);
    client.cancel().await.unwrap();
}
