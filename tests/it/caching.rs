//! Honest annotations and safe caching through the real binary: what each tool says it does,
//! cached results that never push out what the model or the user wrote, skill results cached
//! without a durable commit each, and `_outputPath` kept away from rule variables.

use std::collections::BTreeMap;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, assert_golden_text, call, copy_tree, is_error, spawn_binary,
    text,
};

/// The binary on a copy of the fixture skills (the server writes its index beside them), a
/// data folder, and `config` as its configuration file.
async fn client(directory: &Path, config: &str) -> Client {
    let skills = directory.join("skills");
    if !skills.exists() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills");
        copy_tree(&fixtures, &skills);
    }
    let config_path = directory.join("config.toml");
    std::fs::write(&config_path, config).unwrap();
    let args = [
        "--skills".to_owned(),
        skills.display().to_string(),
        "--data-dir".to_owned(),
        directory.join("data").display().to_string(),
        "--config".to_owned(),
        config_path.display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await
}

async fn variable_names(client: &Client) -> Vec<String> {
    let listed = call(client, "ListVars", json!({"cached": true})).await;
    let mut names: Vec<String> = listed.structured_content.as_ref().unwrap()["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variable| variable["name"].as_str().unwrap().to_owned())
        .filter(|name| !name.starts_with("Rule/"))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn six_skill_searches_at_capacity_eight_keep_what_the_user_and_model_wrote() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path(), "capacity = 8\n").await;
    let written = call(
        &client,
        "WriteVar",
        json!({"name": "mine", "value": "the user's note"}),
    )
    .await;
    assert!(!is_error(&written), "{}", text(&written));
    let noted = call(
        &client,
        "WriteVar",
        json!({"name": "noted", "value": "the model's note"}),
    )
    .await;
    assert!(!is_error(&noted), "{}", text(&noted));

    for query in ["pdf", "csv", "git", "api", "merge", "clean"] {
        let searched = call(&client, "SkillSearch", json!({"query": query})).await;
        assert!(!is_error(&searched), "{}", text(&searched));
    }

    // The rule variables hold three of the eight places, the two notes two more: the searches'
    // twelve cached variables took turns in the last three.
    let names = variable_names(&client).await;
    let (written_on_purpose, cached): (Vec<String>, Vec<String>) = names
        .into_iter()
        .partition(|name| !name.starts_with("SkillSearch_"));
    assert_eq!(written_on_purpose, ["mine", "noted"]);
    assert_eq!(cached.len(), 3, "{cached:?}");
    let read = call(&client, "ReadVar", json!({"name": "mine"})).await;
    assert_golden_text("caching/read-mine.txt", &text(&read));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_skill_result_is_readable_at_once_and_written_to_the_store_lazily() {
    let directory = tempfile::tempdir().unwrap();
    let first = client(directory.path(), "").await;
    let loaded = call(&first, "SkillLoad", json!({"name": "pdf-tools"})).await;
    assert!(!is_error(&loaded), "{}", text(&loaded));
    let cached = variable_names(&first)
        .await
        .into_iter()
        .find(|name| name.starts_with("SkillLoad_") && name.ends_with("_result"))
        .expect("SkillLoad's result is cached");

    // In this process: ReadVar and `$VAR_REF` see it at once.
    let read = call(&first, "ReadVar", json!({"name": cached})).await;
    assert_golden_text("caching/read-cached-skill.txt", &text(&read));
    let copied = call(
        &first,
        "WriteState",
        json!({"path": "copy", "value": format!("$VAR_REF{{{{{cached}:0:14}}}}")}),
    )
    .await;
    assert!(!is_error(&copied), "{}", text(&copied));
    let state = call(&first, "ReadState", json!({"path": "copy"})).await;
    assert_golden_text("caching/copied-state.txt", &text(&state));

    // Another process on the same store sees what was committed (the WriteState above, and
    // a WriteVar), but not the cached result, which waits for its batch...
    let written = call(&first, "WriteVar", json!({"name": "durable", "value": "x"})).await;
    assert!(!is_error(&written), "{}", text(&written));
    let second = client(directory.path(), "").await;
    let seen = variable_names(&second).await;
    assert!(seen.contains(&"durable".to_owned()), "{seen:?}");
    // (The WriteVar's commit carried the waiting cached variables along.)
    assert!(seen.contains(&cached), "{seen:?}");

    // ...a later skill result waits for the next commit, or the end of the first process.
    let searched = call(&first, "SkillSearch", json!({"query": "csv"})).await;
    assert!(!is_error(&searched), "{}", text(&searched));
    let search_result = variable_names(&first)
        .await
        .into_iter()
        .find(|name| name.starts_with("SkillSearch_") && name.ends_with("_result"))
        .unwrap();
    assert!(!variable_names(&second).await.contains(&search_result));
    first.cancel().await.unwrap();
    let mut seen_later = Vec::new();
    for _ in 0..200 {
        seen_later = variable_names(&second).await;
        if seen_later.contains(&search_result) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(seen_later.contains(&search_result), "{seen_later:?}");
    second.cancel().await.unwrap();
}

#[tokio::test]
async fn output_path_refuses_a_rule_variable_as_write_var_does() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path(), "").await;
    let rule = "Rule/Agent/VarRef";
    let before = text(&call(&client, "ReadVar", json!({"name": rule})).await);

    let refused = call(
        &client,
        "SkillSearch",
        json!({"query": "pdf", "_outputPath": format!("†var.{rule}")}),
    )
    .await;
    let branch = call(
        &client,
        "ReadState",
        json!({"_outputPath": format!("†state.ok || †var.{rule}")}),
    )
    .await;
    let by_write_var = call(&client, "WriteVar", json!({"name": rule, "value": "x"})).await;

    assert!(is_error(&refused));
    assert_eq!(
        text(&refused),
        "_outputPath target `†var.Rule/Agent/VarRef` is a rule (RULE) and cannot be changed; \
         write to another name, e.g. †var.VarRef_copy"
    );
    assert!(is_error(&branch));
    assert_golden_text("caching/rule-branch.txt", &text(&branch));
    assert!(is_error(&by_write_var));
    let after = text(&call(&client, "ReadVar", json!({"name": rule})).await);
    assert_eq!(after, before);
    client.cancel().await.unwrap();
}

/// What `tools/list` says of each tool: (title, readOnlyHint, destructiveHint, lists
/// `_outputPath`).
#[tokio::test]
async fn every_tool_has_a_title_and_honest_hints_and_lists_output_path() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(
        directory.path(),
        "[groups]\nscripts = true\nsnapshots = true\n",
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    let described: BTreeMap<String, Value> = tools
        .iter()
        .map(|tool| {
            let annotations = tool.annotations.as_ref().unwrap();
            let properties = tool.input_schema.get("properties").unwrap();
            (
                tool.name.to_string(),
                json!([
                    tool.title.as_ref().is_some_and(|title| !title.is_empty()),
                    annotations.read_only_hint,
                    annotations.destructive_hint,
                    properties.get("_outputPath").is_some(),
                ]),
            )
        })
        .collect();
    let expected: BTreeMap<String, Value> = [
        ("ReadVar", json!([true, true, false, true])),
        ("ListVars", json!([true, true, false, true])),
        ("WriteVar", json!([true, false, true, true])),
        ("RemoveVars", json!([true, false, true, true])),
        ("ReadState", json!([true, true, false, true])),
        ("WriteState", json!([true, false, true, true])),
        ("RunPlan", json!([true, false, true, true])),
        ("SkillSearch", json!([true, true, false, true])),
        ("SkillLoad", json!([true, true, false, true])),
        ("SkillSave", json!([true, false, true, true])),
        ("SkillReadFile", json!([true, true, false, true])),
        ("SkillRunScript", json!([true, false, true, true])),
        ("ToolGroups", json!([true, false, false, true])),
        ("SnapshotProcess", json!([true, false, false, true])),
        ("SnapshotApply", json!([true, false, false, true])),
        ("SnapshotGet", json!([true, true, false, true])),
        ("SnapshotUpdate", json!([true, false, true, true])),
        ("SnapshotDeleteChat", json!([true, false, true, true])),
        ("SnapshotCleanup", json!([true, false, true, true])),
        ("SnapshotList", json!([true, true, false, true])),
        ("SnapshotDiff", json!([true, true, false, true])),
        ("SnapshotReprocess", json!([true, false, true, true])),
        ("SnapshotDelete", json!([true, false, true, true])),
        ("SnapshotGlobalSave", json!([true, false, true, true])),
        ("SnapshotGlobalList", json!([true, true, false, true])),
        ("SnapshotGlobalGet", json!([true, true, false, true])),
        ("SnapshotGlobalDelete", json!([true, false, true, true])),
        ("FunctionList", json!([true, true, false, true])),
        ("FunctionUpsert", json!([true, false, true, true])),
        ("FunctionRemove", json!([true, false, true, true])),
        ("FunctionImport", json!([true, false, false, true])),
        ("FunctionExport", json!([true, true, false, true])),
        ("FunctionMove", json!([true, false, true, true])),
        ("FunctionReorder", json!([true, false, true, true])),
        ("FunctionEnable", json!([true, false, true, true])),
        ("FunctionTest", json!([true, true, false, true])),
        ("SnapshotEnable", json!([true, false, true, true])),
        ("TemplateGet", json!([true, true, false, true])),
        ("TemplateSet", json!([true, false, true, true])),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect();
    assert_eq!(described, expected);
    client.cancel().await.unwrap();
}

/// The tool-chain log (`log://calls`): the latest cached calls, newest first, each with its
/// arguments and result cut for display and the variable holding the whole result.
#[tokio::test]
async fn the_tool_chain_log_lists_the_latest_calls_cut_for_display() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path(), "").await;
    for (tool, arguments) in [
        ("SkillLoad", json!({"name": "pdf-tools"})),
        ("SkillSearch", json!({"query": "merge pdf files"})),
    ] {
        let result = call(&client, tool, arguments).await;
        assert!(!is_error(&result), "{}", text(&result));
    }
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new("log://calls"))
        .await
        .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text: log, .. } = &read.contents[0]
    else {
        panic!("the log is text: {read:?}");
    };
    let mut log: Value = serde_json::from_str(log).unwrap();
    let calls = log["calls"].as_array_mut().unwrap();
    for call in calls.iter_mut() {
        let node = call["call"].as_str().unwrap().to_owned();
        assert_eq!(node.len(), 16, "{call}");
        assert_eq!(
            call["resultVariable"],
            format!("{}_{node}_result", call["tool"].as_str().unwrap())
        );
        assert!(call["at"].as_str().unwrap().ends_with('Z'), "{call}");
        let result = call["result"].as_str().unwrap();
        assert!(result.chars().count() <= 201, "{result}");
        let object = call.as_object_mut().unwrap();
        for member in ["call", "resultVariable", "at", "result"] {
            object.remove(member);
        }
    }
    assert_eq!(
        log,
        json!({"calls": [
            {"tool": "SkillSearch", "arguments": "{\"query\":\"merge pdf files\"}"},
            {"tool": "SkillLoad", "arguments": "{\"name\":\"pdf-tools\"}"},
        ]})
    );
}
