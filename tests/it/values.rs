//! Data passed by reference arrives unchanged: what a reading tool stores through
//! `_outputPath`, hands to a later plan step as `†steps.<id>` or caches for `$VAR_REF` is its
//! value — never the lines that frame it for the model (a window's place, how to read on, the
//! `<skill_content>` envelope). Driven over stdio against the real binary with a skill folder, a
//! script tool group and an upstream MCP server.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, call, example, is_error, spawn_binary_at_home, text,
    write_skill,
};

const NOTES: &str = "Top hits: alpha, beta, gamma. Second line of the notes.";
const BODY: &str = "# Charts\n\nDraw the chart with `plot.py`.";
const REFERENCE: &str = "Axis labels go below the chart.";

/// A server with the skill `charts`, the script tool `lab__say`, the upstream `up` and the
/// variable `notes`.
async fn workspace(folder: &std::path::Path) -> Client {
    let skills = folder.join("skills");
    let skill = write_skill(&skills, "charts", "Draws charts from tables.", BODY);
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::write(skill.join("references/REFERENCE.md"), REFERENCE).unwrap();
    let group = folder.join("tools/lab");
    std::fs::create_dir_all(&group).unwrap();
    std::fs::write(group.join("say.sh"), "printf 'said: %s' \"$1\"\n").unwrap();
    let manifest = json!({"description": "Says a word.", "script": "say.sh",
        "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}},
        "arguments": {"argv": [{"arg": "word"}]}, "approval": "auto"});
    std::fs::write(group.join("say.tool.json"), manifest.to_string()).unwrap();
    let config = folder.join("config.toml");
    let upstream = example("upstream_server").display().to_string();
    std::fs::write(
        &config,
        format!("[[upstream]]\nname = \"up\"\ncommand = {upstream:?}\n"),
    )
    .unwrap();
    let home = folder.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let (skills, tools, config) = (
        skills.display().to_string(),
        folder.join("tools").display().to_string(),
        config.display().to_string(),
    );
    let args = [
        "--skills", &skills, "--tools", &tools, "--config", &config, "--groups", "all",
    ];
    let client = spawn_binary_at_home(
        &home,
        &args,
        TestClient::new(Elicitation::Accept(json!({}))),
    )
    .await;
    succeeds(
        &client,
        "WriteVar",
        json!({"name": "notes", "value": NOTES}),
    )
    .await;
    client
}

async fn succeeds(client: &Client, tool: &str, arguments: Value) -> String {
    let result = call(client, tool, arguments).await;
    assert!(!is_error(&result), "{tool}: {}", text(&result));
    text(&result)
}

/// The state document, whole.
async fn state(client: &Client) -> Value {
    let shown = succeeds(client, "ReadState", json!({})).await;
    let (_, document) = shown.split_once('\n').expect("a header line");
    serde_json::from_str(document).unwrap()
}

#[tokio::test]
async fn what_a_reading_tool_stores_is_its_value_not_its_frame() {
    let folder = tempfile::tempdir().unwrap();
    let client = workspace(folder.path()).await;
    succeeds(
        &client,
        "WriteVar",
        json!({"name": "settings", "value": {"theme": "dark", "size": 3}}),
    )
    .await;
    let reads = [
        ("ReadVar", json!({"name": "notes"}), "whole"),
        (
            "ReadVar",
            json!({"name": "notes", "start": 10, "length": 5}),
            "window",
        ),
        ("ReadVar", json!({"name": "settings"}), "json"),
        ("SkillLoad", json!({"name": "charts"}), "body"),
        (
            "SkillReadFile",
            json!({"name": "charts", "path": "references/REFERENCE.md"}),
            "file",
        ),
        ("lab__say", json!({"word": "hello"}), "script"),
        ("up__echo", json!({"text": "from upstream"}), "upstream"),
    ];
    for (tool, mut arguments, key) in reads {
        arguments["_outputPath"] = json!(format!("†state.copied.{key}"));
        let shown = succeeds(&client, tool, arguments).await;
        assert!(shown.contains("[Written to"), "{tool}: {shown}");
    }
    succeeds(
        &client,
        "ReadState",
        json!({"path": "copied.json", "_outputPath": "†state.again"}),
    )
    .await;
    assert_eq!(
        state(&client).await,
        json!({
            "copied": {
                "whole": NOTES,
                "window": "alpha",
                "json": {"theme": "dark", "size": 3},
                "body": BODY,
                "file": REFERENCE,
                "script": "said: hello",
                "upstream": "from upstream",
            },
            "again": {"theme": "dark", "size": 3},
        })
    );
}

#[tokio::test]
async fn a_plan_step_and_a_cached_result_hand_on_the_value() {
    let folder = tempfile::tempdir().unwrap();
    let client = workspace(folder.path()).await;
    let plan = json!({
        "steps": [
            {"_id": "read", "_tool": "ReadVar", "name": "notes"},
            {"_id": "load", "_tool": "SkillLoad", "name": "charts"},
            {"_id": "keep", "_tool": "WriteState", "path": "handed",
             "value": {"notes": "†steps.read", "body": "†steps.load"}},
        ]
    });
    succeeds(&client, "RunPlan", plan).await;
    // SkillLoad's result is cached: `$VAR_REF` of it is the body, with no envelope.
    let listed = succeeds(&client, "ListVars", json!({"cached": true})).await;
    let cached = listed
        .split('"')
        .find(|word| word.starts_with("SkillLoad_") && word.ends_with("_result"))
        .expect("SkillLoad's result is cached")
        .to_owned();
    succeeds(
        &client,
        "WriteState",
        json!({"path": "referenced", "value": format!("$VAR_REF{{{{{cached}}}}}")}),
    )
    .await;
    assert_eq!(
        state(&client).await,
        json!({"handed": {"notes": NOTES, "body": BODY}, "referenced": BODY})
    );
}
