//! The catalog from the outside: `synapse-mcp skills check` in both modes, the index written
//! into the data folder (never into the folders served) and reused on the next start, the
//! `index.json` earlier versions wrote into those folders removed, and name collisions between
//! roots.

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
    fixture.index().1
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
async fn the_index_is_written_in_the_seed_format_and_reused_while_mtimes_match() {
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
    std::fs::write(fixture.index().0, index.to_string()).unwrap();
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
        "a warm start with nothing changed does not rewrite the index"
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
    // A copy, so that nothing the server might write lands in the repository.
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

/// Every file, folder and link below `root`, by path, with its bytes (a link: its target).
fn tree(root: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut found = std::collections::BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                found.insert(name, target.display().to_string().into_bytes());
            } else if kind.is_dir() {
                found.insert(format!("{name}/"), Vec::new());
                pending.push(path);
            } else {
                found.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    found
}

/// The example tool group in a `--tools` folder beside the fixture's skills.
fn tool_folder(fixture: &Fixture) -> std::path::PathBuf {
    let tools = fixture.root().with_file_name("tools");
    copy_tree(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tools"),
        &tools,
    );
    tools
}

async fn serve_skills_and_tools(fixture: &Fixture, tools: &std::path::Path) {
    let mut args = fixture.args();
    args.extend(["--tools".to_owned(), tools.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let client = spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await;
    let searched = call(&client, "SkillSearch", json!({"query": "merge pdf files"})).await;
    assert!(text(&searched).contains("pdf-tools"), "{}", text(&searched));
    let names = crate::common::tool_names(&client).await;
    assert!(names.iter().any(|name| name.contains("__")), "{names:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_folders_served_are_only_read_and_their_indexes_live_in_the_data_folder() {
    let fixture = Fixture::new();
    let tools = tool_folder(&fixture);
    let (skills_before, tools_before) = (tree(&fixture.root()), tree(&tools));
    serve_skills_and_tools(&fixture, &tools).await;
    assert_eq!(
        tree(&fixture.root()),
        skills_before,
        "the --skills folder changed"
    );
    assert_eq!(tree(&tools), tools_before, "the --tools folder changed");
    let data = fixture.root().with_file_name("data");
    let (_, skills_index) = crate::common::index_of(&data, "skills", &fixture.root());
    assert_eq!(skills_index["totalSkills"], json!(10));
    let (_, tools_index) = crate::common::index_of(&data, "tools", &tools);
    assert_eq!(tools_index["totalGroups"], json!(1));
}

#[tokio::test]
async fn an_index_json_an_earlier_version_wrote_is_removed_and_a_foreign_one_kept() {
    // What earlier versions wrote into the folders they served: the format of the indexes.
    let fixture = Fixture::new();
    let tools = tool_folder(&fixture);
    let times =
        r#""generatedAt": "2026-11-01T10:00:00.000Z", "updatedAt": "2026-11-01T10:00:00.000Z""#;
    let path = fixture.root().join("pdf-tools").display().to_string();
    let old_skills = format!(
        r#"{{"version": "1.0.0", "skills": [{{"name": "pdf-tools", "title": "Pdf Tools",
        "description": "d", "tags": [], "tools": [], "scriptCount": 0, "path": "{path}",
        "hasSkillMd": true, "lastModified": "2026-11-01T10:00:00.000Z", "skillFile": "SKILL.md",
        "size": 1, "modifiedNs": 1, "frontmatter": {{"name": "pdf-tools"}}}}],
        "totalSkills": 1, "totalTools": 0, {times}}}"#
    );
    std::fs::write(fixture.root().join("index.json"), &old_skills).unwrap();
    let old_tools = format!(
        r#"{{"version": "1.0.0", "groups": [], "totalGroups": 0, "totalTools": 0, "totalScripts": 0, {times}}}"#
    );
    std::fs::write(tools.join("index.json"), old_tools).unwrap();
    // A folder of the user's whose own `index.json` merely shares the name, and one whose file
    // has the index's keys and one more.
    let foreign = fixture.root().with_file_name("foreign");
    write_skill(
        &foreign,
        "own-index",
        "A skill beside an index of the user's.",
        "# Own",
    );
    let foreign_text = "{\"skills\": [\"own-index\"], \"note\": \"kept by hand\"}\n";
    std::fs::write(foreign.join("index.json"), foreign_text).unwrap();
    let almost = fixture.root().with_file_name("almost");
    write_skill(
        &almost,
        "almost-ours",
        "A skill beside an index with a key more.",
        "# Almost",
    );
    let mut near: Value = serde_json::from_str(&old_skills).unwrap();
    near["owner"] = json!("me");
    let almost_text = near.to_string();
    std::fs::write(almost.join("index.json"), &almost_text).unwrap();

    let mut args = fixture.args();
    for folder in [&foreign, &almost] {
        args.extend(["--skills".to_owned(), folder.display().to_string()]);
    }
    args.extend(["--tools".to_owned(), tools.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let client = spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await;
    client.list_all_prompts().await.unwrap();
    client.cancel().await.unwrap();
    assert_eq!(
        (
            fixture.root().join("index.json").exists(),
            tools.join("index.json").exists(),
            std::fs::read_to_string(foreign.join("index.json")).unwrap(),
            std::fs::read_to_string(almost.join("index.json")).unwrap(),
        ),
        (false, false, foreign_text.to_owned(), almost_text)
    );
}
