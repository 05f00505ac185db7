//! What a host sees before the first call, through the real binary: instructions short enough
//! not to be cut, and completion values for every template and prompt argument.

use std::collections::HashMap;
use std::path::Path;

use pretty_assertions::assert_eq;
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompletionContext, GetPromptRequestParams, Reference,
};
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, call, is_error, spawn_binary, text, write_skill,
};

/// 105 skills, so that names run past one page of 100.
fn write_skills(root: &Path) {
    for index in 0..105 {
        let name = format!("skill-{index:03}");
        write_skill(root, &name, &format!("Test skill {index}."), "Body.");
    }
}

async fn client(directory: &Path) -> Client {
    let skills = directory.join("skills");
    write_skills(&skills);
    let args = [
        "--skills".to_owned(),
        skills.display().to_string(),
        "--data-dir".to_owned(),
        directory.join("data").display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await
}

async fn ok(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await;
    assert!(!is_error(&result), "{tool}: {}", text(&result));
    result.structured_content.unwrap_or(Value::Null)
}

/// `(values, total, hasMore)` for one argument.
async fn complete(
    client: &Client,
    reference: Reference,
    argument: &str,
    typed: &str,
    context: &[(&str, &str)],
) -> Value {
    let mut request = CompleteRequestParams::new(reference, ArgumentInfo::new(argument, typed));
    if !context.is_empty() {
        request = request.with_context(CompletionContext::with_arguments(
            context
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect::<HashMap<_, _>>(),
        ));
    }
    let completion = client.complete(request).await.unwrap().completion;
    json!([completion.values, completion.total, completion.has_more])
}

#[tokio::test]
async fn the_instructions_fit_in_two_thousand_characters_with_the_essentials_first() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let instructions = client.peer_info().unwrap().instructions.clone().unwrap();
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("tool-rules"))
        .await
        .unwrap();
    let full = serde_json::to_value(&prompt.messages[0]).unwrap()["content"]["text"]
        .as_str()
        .unwrap()
        .to_owned();

    assert!(
        instructions.chars().count() < 2_000,
        "{} characters:\n{instructions}",
        instructions.chars().count()
    );
    assert!(
        instructions
            .starts_with("# synapse-mcp: the essentials\n\n1. **Never invent tool output.**"),
        "{instructions}"
    );
    for pointer in [
        "`tool-rules` prompt",
        "`Rule/Agent/VarRef`",
        "`Rule/Agent/TODO`",
        "`Rule/Agent/Plans`",
        "$VAR_REF{{name}}",
        "`SkillSearch`",
        "`RunPlan`",
    ] {
        assert!(instructions.contains(pointer), "{pointer}: {instructions}");
    }
    assert!(full.len() > instructions.len());
    assert!(full.contains("## vars"), "{full}");
    assert!(full.contains("| `Rule/Agent/VarRef` |"), "{full}");
    client.cancel().await.unwrap();
}

/// The binary with three variables, a state, a chat's snapshot and a character's template.
async fn seeded_client(directory: &Path) -> (Client, String) {
    let client = client(directory).await;
    for name in ["alpha", "alpine", "beta"] {
        ok(&client, "WriteVar", json!({"name": name, "value": "x"})).await;
    }
    ok(
        &client,
        "WriteState",
        json!({"path": "user", "value": {"name": "Ada", "tags": ["x", "y"]}}),
    )
    .await;
    let applied = ok(
        &client,
        "SnapshotApply",
        json!({"chatFile": "chat-a", "text": "@.SET(\"a\", 1);"}),
    )
    .await;
    ok(
        &client,
        "TemplateSet",
        json!({"characterId": "hero", "template": {"a": 0}}),
    )
    .await;
    let snapshot_id = applied["snapshotId"].as_str().unwrap().to_owned();
    (client, snapshot_id)
}

fn resource(uri: &str) -> Reference {
    Reference::for_resource(uri)
}

#[tokio::test]
async fn variable_names_and_state_paths_complete_with_a_total() {
    let directory = tempfile::tempdir().unwrap();
    let (client, _) = seeded_client(directory.path()).await;

    assert_eq!(
        complete(&client, resource("var://{name}"), "name", "al", &[]).await,
        json!([["alpha", "alpine"], 2, false])
    );
    assert_eq!(
        complete(
            &client,
            resource("var://{name}"),
            "name",
            "Rule/Agent/V",
            &[]
        )
        .await,
        json!([["Rule/Agent/VarRef"], 1, false])
    );
    assert_eq!(
        complete(&client, resource("state://{path}"), "path", "", &[]).await,
        json!([["user"], 1, false])
    );
    assert_eq!(
        complete(&client, resource("state://{path}"), "path", "user.", &[]).await,
        json!([["user.name", "user.tags"], 2, false])
    );
    assert_eq!(
        complete(
            &client,
            resource("state://{path}"),
            "path",
            "user.tags.",
            &[]
        )
        .await,
        json!([["user.tags.0", "user.tags.1"], 2, false])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn snapshots_rules_and_characters_complete_with_a_total() {
    let directory = tempfile::tempdir().unwrap();
    let (client, snapshot_id) = seeded_client(directory.path()).await;
    let snapshot = resource("snapshot://{chat}/{id}");
    let rule = resource("rule://{group}/{rule}");

    assert_eq!(
        complete(&client, snapshot.clone(), "chat", "ch", &[]).await,
        json!([["chat-a"], 1, false])
    );
    assert_eq!(
        complete(&client, snapshot, "id", "", &[("chat", "chat-a")]).await,
        json!([[snapshot_id], 1, false])
    );
    assert_eq!(
        complete(&client, rule.clone(), "group", "", &[]).await,
        json!([["Agent"], 1, false])
    );
    assert_eq!(
        complete(&client, rule, "rule", "", &[("group", "Agent")]).await,
        json!([["Plans", "TODO", "VarRef"], 3, false])
    );
    assert_eq!(
        complete(
            &client,
            Reference::for_prompt("state-functions"),
            "characterId",
            "h",
            &[]
        )
        .await,
        json!([["hero"], 1, false])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn skill_names_past_one_page_say_how_many_there_are() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let template = resource("skill://{name}/SKILL.md");

    let skills = complete(&client, template.clone(), "name", "skill-", &[]).await;
    let narrowed = complete(&client, template, "name", "skill-10", &[]).await;

    assert_eq!(skills[0].as_array().unwrap().len(), 100);
    assert_eq!(skills[0][0], json!("skill-000"));
    assert_eq!(skills[0][99], json!("skill-099"));
    assert_eq!(skills[1], json!(105));
    assert_eq!(skills[2], json!(true));
    assert_eq!(
        narrowed,
        json!([
            [
                "skill-100",
                "skill-101",
                "skill-102",
                "skill-103",
                "skill-104"
            ],
            5,
            false
        ])
    );
    client.cancel().await.unwrap();
}
