//! The built binary over stdio with rmcp's client: the vars tools, references, eviction,
//! resources, prompts, and a sessionless 2026-07-28 call; and the stdio transport in process
//! with a call that waits while others are answered.

use pretty_assertions::assert_eq;
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

use crate::common::{
    Elicitation, RawSession, TestClient, Transcript, assert_golden, assert_golden_text, call,
    error_part, is_error, spawn_binary, text,
};

async fn client() -> crate::common::Client {
    spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await
}

fn structured(result: &rmcp::model::CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .expect("structured content")
}

#[tokio::test]
async fn initialize_names_the_server_and_lists_the_tools() {
    let client = spawn_binary(
        &["--groups", "default"],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let info = client.peer_info().expect("server info");
    let server = info.server_info.clone().expect("serverInfo");
    assert_eq!(server.name, "synapse-mcp");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    let instructions = info.instructions.clone().unwrap_or_default();
    assert_golden_text("stdio/instructions.txt", &instructions);
    let tools = client.list_all_tools().await.unwrap();
    assert_golden(
        "tests/golden/tools_list.json",
        &serde_json::to_value(&tools).unwrap(),
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn write_then_read_in_windows_by_characters() {
    let client = client().await;
    let written = call(&client, "WriteVar", json!({"name": "greeting", "value": "héllo wörld 😀!", "desc": "a greeting", "tags": ["demo"]})).await;
    assert_eq!(
        structured(&written),
        json!({"name": "greeting", "created": true, "length": 14})
    );
    let window = call(
        &client,
        "ReadVar",
        json!({"name": "greeting", "start": 6, "length": 5}),
    )
    .await;
    assert_eq!(
        text(&window),
        "[Variable `greeting`: characters 6–11 of 14; more remains: ReadVar {\"name\": \"greeting\", \"start\": 11}]\nwörld"
    );
    let rest = call(&client, "ReadVar", json!({"name": "greeting", "start": 11})).await;
    assert_eq!(
        text(&rest),
        "[Variable `greeting`: characters 11–14 of 14; nothing more remains]\n 😀!"
    );
    let updated = call(
        &client,
        "WriteVar",
        json!({"name": "greeting", "value": {"json": true}}),
    )
    .await;
    assert_eq!(structured(&updated)["created"], json!(false));
    let whole = call(&client, "ReadVar", json!({"name": "greeting"})).await;
    assert_eq!(
        text(&whole),
        "[Variable `greeting`: whole value, 13 characters]\n{\"json\":true}"
    );
    let missing = call(&client, "ReadVar", json!({"name": "nope"})).await;
    assert!(is_error(&missing));
    assert_golden_text("stdio/read-var-missing.txt", &text(&missing));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn list_vars_filters_by_type_tag_and_search() {
    let client = client().await;
    call(
        &client,
        "WriteVar",
        json!({"name": "alpha", "value": "1", "desc": "First note", "tags": ["notes"]}),
    )
    .await;
    call(
        &client,
        "WriteVar",
        json!({"name": "beta", "value": "2", "tags": ["other"]}),
    )
    .await;
    let names = |result: &rmcp::model::CallToolResult| -> Vec<String> {
        structured(result)["variables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|variable| variable["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let rules = call(&client, "ListVars", json!({"filter": {"type": "RULE"}})).await;
    assert_eq!(
        names(&rules),
        ["Rule/Agent/Plans", "Rule/Agent/TODO", "Rule/Agent/VarRef"]
    );
    let tagged = call(&client, "ListVars", json!({"filter": {"tag": "notes"}})).await;
    assert_eq!(names(&tagged), ["alpha"]);
    let searched = call(&client, "ListVars", json!({"filter": {"search": "FIRST"}})).await;
    assert_eq!(names(&searched), ["alpha"]);
    let added = call(&client, "ListVars", json!({"filter": {"type": "LLMAdd"}})).await;
    assert_eq!(names(&added), ["alpha", "beta"]);
    assert!(
        !text(&added).contains("\"value\""),
        "ListVars must never show values"
    );
    let bad = call(&client, "ListVars", json!({"filter": {"type": "Bogus"}})).await;
    assert!(is_error(&bad), "{}", text(&bad));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn remove_vars_refuses_rules_and_reports_missing_names() {
    let client = client().await;
    call(
        &client,
        "WriteVar",
        json!({"name": "scratch", "value": "x"}),
    )
    .await;
    let removed = call(
        &client,
        "RemoveVars",
        json!({"names": ["scratch", "Rule/Agent/VarRef", "ghost"]}),
    )
    .await;
    assert_eq!(
        structured(&removed),
        json!({
            "removed": ["scratch"],
            "refused": ["Rule/Agent/VarRef"],
            "missing": ["ghost"],
            "note": "rule variables cannot be removed: Rule/Agent/VarRef; no such variables: ghost"
        })
    );
    let rule = call(
        &client,
        "ReadVar",
        json!({"name": "Rule/Agent/VarRef", "length": 30}),
    )
    .await;
    assert_golden_text("stdio/read-rule-window.txt", &text(&rule));
    let overwrite = call(
        &client,
        "WriteVar",
        json!({"name": "Rule/Agent/VarRef", "value": "x"}),
    )
    .await;
    assert!(is_error(&overwrite));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn references_are_resolved_in_any_argument_and_errors_name_them() {
    let client = client().await;
    call(
        &client,
        "WriteVar",
        json!({"name": "x", "value": "0123456789"}),
    )
    .await;
    call(
        &client,
        "WriteVar",
        json!({"name": "doc", "value": {"a": 1}}),
    )
    .await;
    // Stored through the escape, so each holds a literal reference to the other.
    call(
        &client,
        "WriteVar",
        json!({"name": "loop1", "value": "$$VAR_REF{{loop2}}"}),
    )
    .await;
    call(
        &client,
        "WriteVar",
        json!({"name": "loop2", "value": "$$VAR_REF{{loop1}}"}),
    )
    .await;
    // The reference is resolved before WriteVar runs, so the slice is what gets stored.
    call(
        &client,
        "WriteVar",
        json!({"name": "y", "value": "[$VAR_REF{{x:2:5}}] $$VAR_REF{{x}}"}),
    )
    .await;
    let read = call(&client, "ReadVar", json!({"name": "y"})).await;
    assert_eq!(
        text(&read),
        "[Variable `y`: whole value, 21 characters]\n[23456] $VAR_REF{{x}}"
    );
    let cases = [
        ("$VAR_REF{{ghost}}", "variable `ghost` not found"),
        (
            "$VAR_REF{{loop1}}",
            "circular variable reference detected (loop1 → loop2 → loop1)",
        ),
        (
            "$VAR_REF{{doc:0:2}}",
            "cannot slice non-string variable `doc`",
        ),
        ("$VAR_REF{{x:1}}", "malformed reference $VAR_REF{{x:1}}"),
    ];
    let mut refusals = Transcript::default();
    for (reference, expected) in cases {
        let result = call(
            &client,
            "WriteVar",
            json!({"name": "z", "value": {"nested": [reference]}}),
        )
        .await;
        assert!(is_error(&result), "{reference} should fail");
        let message = text(&result);
        assert!(
            message.contains(reference),
            "{message} should name {reference}"
        );
        assert!(
            message.contains(expected),
            "{message} should say {expected}"
        );
        refusals.add(reference, &message);
    }
    refusals.assert_golden("stdio/reference-errors.txt");
    let nothing = call(&client, "ReadVar", json!({"name": "z"})).await;
    assert!(
        is_error(&nothing),
        "a failed reference must not run the tool"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn capacity_evicts_the_least_recently_visited_but_never_kept_rules() {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    // Three rule variables plus three of ours fill a capacity of six.
    std::fs::write(&config, "capacity = 6\n").unwrap();
    let client = spawn_binary(
        &["--config", config.to_str().unwrap()],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    for name in ["a", "b", "c"] {
        call(&client, "WriteVar", json!({"name": name, "value": name})).await;
    }
    call(&client, "ReadVar", json!({"name": "a"})).await;
    let written = call(&client, "WriteVar", json!({"name": "d", "value": "d"})).await;
    assert_eq!(structured(&written)["evicted"], json!(["b"]));
    let written = call(&client, "WriteVar", json!({"name": "e", "value": "e"})).await;
    assert_eq!(structured(&written)["evicted"], json!(["c"]));
    let listed = call(&client, "ListVars", json!({})).await;
    let listed = structured(&listed);
    let names: Vec<&str> = listed["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variable| variable["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Rule/Agent/Plans",
            "Rule/Agent/TODO",
            "Rule/Agent/VarRef",
            "a",
            "d",
            "e"
        ]
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn rules_and_variables_are_resources() {
    let client = client().await;
    call(
        &client,
        "WriteVar",
        json!({"name": "my note", "value": "hello"}),
    )
    .await;
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources
        .iter()
        .map(|resource| resource.uri.as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "skill://passing-large-values/SKILL.md",
            "skill://synapse-workspace/SKILL.md",
            "skill://writing-skills/SKILL.md",
            "ui://synapse/workspace",
            "log://calls",
            "rule://Agent/VarRef",
            "rule://Agent/TODO",
            "rule://Agent/Plans",
            "var://Rule/Agent/Plans",
            "var://Rule/Agent/TODO",
            "var://Rule/Agent/VarRef",
            "var://my%20note"
        ]
    );
    let templates = client.list_all_resource_templates().await.unwrap();
    let templates: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(
        templates,
        [
            "skill://{name}/SKILL.md",
            "skill://{name}/{path}",
            "var://{name}",
            "state://{path}",
            "snapshot://{chat}",
            "snapshot://{chat}/{id}",
            "rule://{group}/{rule}"
        ]
    );
    let rule = client
        .read_resource(ReadResourceRequestParams::new("rule://Agent/VarRef"))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents {
        text, mime_type, ..
    } = &rule.contents[0]
    else {
        panic!("text expected")
    };
    assert!(text.starts_with("# $VAR_REF"));
    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
    let variable = client
        .read_resource(ReadResourceRequestParams::new("var://my%20note"))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &variable.contents[0] else {
        panic!("text expected")
    };
    assert_eq!(text, "hello");
    let missing = client
        .read_resource(ReadResourceRequestParams::new("var://nope"))
        .await
        .unwrap_err();
    assert_golden_text("stdio/resource-missing.txt", &missing.to_string());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_tool_rules_prompt_holds_the_full_rules_the_instructions_point_to() {
    let client = client().await;
    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(
        prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["tool-rules", "skill", "state-functions"]
    );
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("tool-rules"))
        .await
        .unwrap();
    let message = serde_json::to_value(&prompt.messages[0]).unwrap();
    let instructions = client.peer_info().unwrap().instructions.clone().unwrap();
    let full = message["content"]["text"].as_str().unwrap();
    assert!(
        instructions.contains("`tool-rules` prompt"),
        "{instructions}"
    );
    assert_golden_text("stdio/tool-rules-prompt.txt", full);
    assert!(
        client
            .get_prompt(GetPromptRequestParams::new("nope"))
            .await
            .is_err()
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_sessionless_2026_07_28_call_is_answered() {
    let mut session = RawSession::start(&[]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "_meta": meta, "name": "WriteVar", "arguments": {"name": "k", "value": "v"}}}),
        )
        .await;
    let written = session.response(1).await;
    assert_eq!(
        written["result"]["structuredContent"]["created"],
        json!(true),
        "{written}"
    );
    assert_eq!(written["result"]["resultType"], json!("complete"));
    session
        .send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "_meta": meta, "name": "ReadVar", "arguments": {"name": "k"}}}),
        )
        .await;
    let read = session.response(2).await;
    assert_eq!(
        read["result"]["content"][0]["text"],
        json!("[Variable `k`: whole value, 1 characters]\nv")
    );
}

/// A call the transport cannot answer at once (a plan whose first step waits) goes on by
/// itself: a `ping` sent after it is answered first, and the plan's progress reaches the client
/// before its answer.
#[tokio::test]
async fn a_call_that_waits_goes_on_while_the_next_is_answered() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let server = crate::common::test_server("");
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    tokio::spawn(server.serve_lines(server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let plan = json!({"steps": [
        {"_id": "slow", "_tool": "Wait", "millis": 300},
        {"_id": "after", "_tool": "Echo", "text": "2"}
    ]});
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ] {
        client_write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    let initialized: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap())
        .expect("the initialize answer is JSON");
    assert_eq!(initialized["id"], json!(1));
    // Sent once initialized, so that both are answered by the transport itself.
    for message in [
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "_meta": {"progressToken": "plan"}, "name": "RunPlan", "arguments": plan}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    ] {
        client_write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|message: &String| message.starts_with("answer 2"))
    {
        let line = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server answers within 30 s")
            .unwrap()
            .expect("the server keeps its output open");
        let message: Value = serde_json::from_str(&line).expect("every line is JSON");
        seen.push(match (&message["id"], &message["method"]) {
            (Value::Null, method) => format!(
                "{} {}/{}",
                method.as_str().unwrap(),
                message["params"]["progress"],
                message["params"]["total"]
            ),
            (id, _) => format!(
                "answer {id}: {}",
                message["result"]["structuredContent"]["ok"]
                    .as_bool()
                    .map_or_else(|| message["result"].to_string(), |ok| ok.to_string())
            ),
        });
    }
    assert_eq!(
        seen,
        [
            "answer 3: {}",
            "notifications/progress 1.0/2.0",
            "notifications/progress 2.0/2.0",
            "answer 2: true"
        ]
    );
}

#[test]
fn the_command_line_explains_itself_and_names_bad_config_files() {
    let help = std::process::Command::new(crate::common::binary())
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    let help = String::from_utf8(help.stdout).unwrap();
    assert_golden_text("stdio/help.txt", &help);
    let version = std::process::Command::new(crate::common::binary())
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(version.stdout).unwrap(),
        format!("synapse-mcp {}\n", env!("CARGO_PKG_VERSION"))
    );

    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("bad.toml");
    std::fs::write(&config, "capacity = \"lots\"\n").unwrap();
    let failed = std::process::Command::new(crate::common::binary())
        .arg("--config")
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!failed.status.success());
    assert!(failed.stdout.is_empty(), "stdout is the protocol channel");
    let message = String::from_utf8(failed.stderr).unwrap();
    assert_golden_text("stdio/bad-config.txt", &error_part(&message));
}
