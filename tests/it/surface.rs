//! What a host pays for this server in every conversation, checked on the real `tools/list`,
//! `instructions` and `prompts/list`: the model-visible characters of the tool definitions
//! (name, description and input schema as compact JSON) of a default start and of every
//! built-in group on, against their budgets.

use rmcp::model::Tool;

use crate::common::{Elicitation, TestClient, assert_golden, spawn_binary};

/// The most model-visible characters of a default start's tool definitions (≈ 4k tokens).
const DEFAULT_BUDGET: usize = 16_000;
/// The same with every built-in group on.
const ALL_GROUPS_BUDGET: usize = 32_000;
/// The most characters of the server's `instructions`.
const INSTRUCTIONS_BUDGET: usize = 2_000;
/// The most characters of a default start's `prompts/list` (its `prompts`, as compact JSON).
const PROMPTS_BUDGET: usize = 4_000;

/// What the model reads of the tool definitions: names, descriptions and input schemas.
fn model_visible(tools: &[Tool]) -> usize {
    tools
        .iter()
        .map(|tool| {
            let description = tool.description.as_deref().unwrap_or_default();
            let schema = serde_json::to_string(&tool.input_schema).unwrap();
            tool.name.chars().count() + description.chars().count() + schema.chars().count()
        })
        .sum()
}

#[tokio::test]
async fn a_default_start_fits_its_budgets() {
    let client = spawn_binary(
        &["--groups", "default"],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let instructions = (client.peer_info())
        .and_then(|info| info.instructions.clone())
        .unwrap_or_default();
    let tools = client.list_all_tools().await.unwrap();
    let prompts = client.list_all_prompts().await.unwrap();
    let prompts = serde_json::to_string(&prompts).unwrap().chars().count();
    let visible = model_visible(&tools);
    assert!(
        visible <= DEFAULT_BUDGET,
        "{visible} model-visible characters over {DEFAULT_BUDGET}"
    );
    let instructions = instructions.chars().count();
    assert!(
        instructions <= INSTRUCTIONS_BUDGET,
        "instructions {instructions} characters"
    );
    assert!(
        prompts <= PROMPTS_BUDGET,
        "prompts/list {prompts} characters"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_built_in_group_on_fits_its_budget() {
    let client = spawn_binary(
        &["--groups", "all"],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    assert_golden(
        "tests/golden/tools_list_all.json",
        &serde_json::to_value(&tools).unwrap(),
    );
    let visible = model_visible(&tools);
    assert!(
        visible <= ALL_GROUPS_BUDGET,
        "{visible} model-visible characters over {ALL_GROUPS_BUDGET}"
    );
    client.cancel().await.unwrap();
}
