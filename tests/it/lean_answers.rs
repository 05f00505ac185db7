//! What the model and the user read, kept short, through the real binary: a `SkillSearch` hit
//! once (text for the model, JSON for clients), `ListVars` without the cache entries unless asked
//! and with one readable time per variable, argument errors in JSON's words naming the
//! argument, approval questions in one line, and a `prompts/list` that stays small however
//! many skills are served (one `skill` prompt whose `name` completes; per-skill prompts are a
//! switch).

use pretty_assertions::assert_eq;
use rmcp::model::{ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, Reference};
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, Transcript, call, copy_tree, in_process, is_error, manifest,
    spawn_binary, text, write_skill,
};

/// A time as results show it: ISO 8601, UTC, to the second (`2026-11-27T21:01:33Z`).
pub(crate) fn assert_readable_time(time: &Value) {
    let pattern = regex::Regex::new(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$");
    assert!(
        time.as_str()
            .is_some_and(|time| pattern.unwrap().is_match(time)),
        "not a readable time: {time}"
    );
}

async fn client_with(args: &[String]) -> Client {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await
}

/// A server over a copy of the fixture skills (kept while the folder lives).
async fn fixture_client() -> (tempfile::TempDir, Client) {
    let directory = tempfile::tempdir().unwrap();
    let copy = directory.path().join("skills");
    copy_tree(&manifest("tests/fixtures/skills"), &copy);
    let client = client_with(&["--skills".to_owned(), copy.display().to_string()]).await;
    (directory, client)
}

#[tokio::test]
async fn a_skill_search_hit_comes_once_text_for_the_model_and_json_for_clients() {
    let (_folder, client) = fixture_client().await;
    let mut transcript = Transcript::default();
    for query in ["merge pdf pages", "zebra husbandry"] {
        let found = call(&client, "SkillSearch", json!({"query": query})).await;
        assert!(!is_error(&found), "{}", text(&found));
        transcript.add(&format!("{query}: text"), &text(&found));
        transcript.add(
            &format!("{query}: structured content"),
            &serde_json::to_string_pretty(&found.structured_content.unwrap()).unwrap(),
        );
    }
    transcript.assert_golden("lean_answers/skill-search.txt");
    client.cancel().await.unwrap();
}

/// The model's own variables first; the cache entries of a call are counted, and listed when
/// asked for; one readable time per variable.
#[tokio::test]
async fn list_vars_shows_the_models_variables_and_counts_the_cache_entries() {
    let (_folder, client) = fixture_client().await;
    for (name, value) in [("search-plan", "draft the notes"), ("search-notes", "x")] {
        let written = call(&client, "WriteVar", json!({"name": name, "value": value})).await;
        assert!(!is_error(&written), "{}", text(&written));
    }
    let found = call(&client, "SkillSearch", json!({"query": "pdf"})).await;
    assert!(!is_error(&found), "{}", text(&found));
    // The cached entries' descriptions name the call's random node, as their names do.
    let node = regex::Regex::new(r"call [0-9a-f]{16}\b").unwrap();
    let mut transcript = Transcript::default();
    for (heading, arguments) in [
        ("ListVars", json!({"filter": {"search": "search"}})),
        (
            "ListVars with cached: true",
            json!({"filter": {"search": "search"}, "cached": true}),
        ),
        (
            "ListVars of one cache type",
            json!({"filter": {"type": "ToolCallArgs"}}),
        ),
    ] {
        let listed = call(&client, "ListVars", arguments).await;
        let variables = listed
            .structured_content
            .as_ref()
            .map(|listed| &listed["variables"]);
        for variable in variables.and_then(Value::as_array).into_iter().flatten() {
            assert_readable_time(&variable["updated"]);
        }
        transcript.add(heading, &node.replace_all(&text(&listed), "call <node>"));
    }
    transcript.assert_golden("lean_answers/list-vars.txt");
    client.cancel().await.unwrap();
}

/// Wrong-typed arguments, each answered with the argument, the value and what is expected in
/// JSON's words.
#[tokio::test]
async fn wrong_typed_arguments_are_named_with_json_words() {
    let (_folder, client) = fixture_client().await;
    let mut transcript = Transcript::default();
    for (tool, arguments) in [
        ("ReadVar", json!({"name": 42})),
        ("ReadVar", json!({"name": "notes", "start": -1})),
        ("ReadVar", json!({"name": "notes", "length": 2.5})),
        ("SkillSearch", json!({"query": "pdf", "maxResults": "five"})),
        ("SkillSearch", json!({"query": "pdf", "tags": "pdf"})),
        ("SkillSearch", json!({"query": "pdf", "tags": ["pdf", 5]})),
        ("SkillSearch", json!({"query": "pdf", "rerank": "yes"})),
        ("ListVars", json!({"filter": {"type": "Notes"}})),
        ("RemoveVars", json!({"names": "notes"})),
        ("WriteVar", json!({"name": ["notes"], "value": "x"})),
    ] {
        let answer = call(&client, tool, arguments.clone()).await;
        assert!(is_error(&answer), "{tool} {arguments}: {}", text(&answer));
        transcript.add(&format!("{tool} {arguments}"), &text(&answer));
    }
    transcript.assert_golden("bad_input/wrong-types.txt");
    client.cancel().await.unwrap();
}

/// The question before a call is one line, whatever the arguments hold; `ask-once` adds the
/// line that says what `remember` allows.
#[tokio::test]
async fn an_approval_question_is_one_line_whatever_the_arguments() {
    let asker = TestClient::new(Elicitation::Accept(json!({"approve": true})));
    let config = "[tools.Echo]\nexecution = \"ask-once\"\n";
    let (_server, client) = in_process(config, asker.clone()).await;
    let long = "a long paragraph of text ".repeat(40);
    let arguments = json!({"text": {"title": "Notes", "body": long, "tags": ["a", "b", "c"]}});
    let echoed = call(&client, "Echo", arguments).await;
    assert!(!is_error(&echoed), "{}", text(&echoed));
    let short = call(&client, "Echo", json!({"text": long})).await;
    assert!(!is_error(&short), "{}", text(&short));
    assert_eq!(
        asker.asked(),
        [
            "Allow `Echo` to run with text {3 keys}?\nTick `remember` to also allow, without \
             asking, every later `Echo` call with arguments {text:object}.",
            &format!(
                "Allow `Echo` to run with text \"{}\"… (1000 characters)?\nTick `remember` to \
                 also allow, without asking, every later `Echo` call with arguments \
                 {{text:string}}.",
                &long[..80]
            ),
        ]
    );
    client.cancel().await.unwrap();
}

/// 400 skills with descriptions of 200 characters each.
fn many_skills(root: &std::path::Path) {
    for index in 0..400 {
        let description = format!(
            "Skill number {index:03} of a large library. {}Use when the task is number {index:03}.",
            "It does one careful thing the others do not, and says when it applies. ".repeat(2)
        );
        write_skill(root, &format!("task-{index:03}"), &description, "Body.");
    }
}

fn prompts_json(prompts: &[rmcp::model::Prompt]) -> String {
    serde_json::to_string(prompts).unwrap()
}

#[tokio::test]
async fn prompts_stay_small_with_a_large_library_and_per_skill_prompts_are_a_switch() {
    let directory = tempfile::tempdir().unwrap();
    let skills = directory.path().join("skills");
    many_skills(&skills);
    let args = vec![
        "--skills".to_owned(),
        skills.display().to_string(),
        "--data-dir".to_owned(),
        directory.path().join("data").display().to_string(),
    ];
    let client = client_with(&args).await;
    let prompts = client.list_all_prompts().await.unwrap();
    let listed = prompts_json(&prompts);
    assert!(
        listed.chars().count() <= 4_000,
        "prompts/list is {} characters: {listed}",
        listed.chars().count()
    );
    assert_eq!(
        serde_json::from_str::<Value>(&listed).unwrap(),
        json!([
            {"name": "tool-rules", "description": "How to use this server's tools: variables, $VAR_REF references, output limits, approvals, and the index of on-demand rules"},
            {"name": "skill", "description": "A skill's instructions, to follow: the SKILL.md body in <skill_content>",
             "arguments": [{"name": "name", "description": "The skill's name (completion lists the library's skills)", "required": true}]},
            {"name": "state-functions", "description": "The <variable_system_functions> block that teaches a role-play model the state function calls (@.SET, @.ADD, …) enabled for a character",
             "arguments": [{"name": "characterId", "description": "The character whose own functions to include too", "required": false}]}
        ])
    );

    // `name` completes to the skills; the prompt is the skill's activation text.
    let completion = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("skill"),
            ArgumentInfo::new("name", "task-39"),
        ))
        .await
        .unwrap()
        .completion;
    assert_eq!(
        (completion.values, completion.total, completion.has_more),
        (
            (390..400).map(|index| format!("task-{index}")).collect(),
            Some(10),
            Some(false)
        )
    );
    let mut request = GetPromptRequestParams::new("skill");
    request.arguments = Some(serde_json::from_value(json!({"name": "task-007"})).unwrap());
    let prompt = client.get_prompt(request).await.unwrap();
    let message = serde_json::to_value(&prompt.messages[0]).unwrap();
    assert!(
        message["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("<skill_content name=\"task-007\">"),
        "{message}"
    );
    let mut transcript = Transcript::default();
    let missing = client
        .get_prompt(GetPromptRequestParams::new("skill"))
        .await
        .unwrap_err();
    transcript.add("skill without a name", &missing.to_string());
    let mut request = GetPromptRequestParams::new("skill");
    request.arguments = Some(serde_json::from_value(json!({"name": "task-7"})).unwrap());
    let unknown = client.get_prompt(request).await.unwrap_err();
    transcript.add("skill with an unknown name", &unknown.to_string());
    transcript.assert_golden("lean_answers/skill-prompt-refusals.txt");
    client.cancel().await.unwrap();

    // With the switch, one prompt per skill as well.
    let config = directory.path().join("config.toml");
    std::fs::write(&config, "skill_prompts = true\n").unwrap();
    let mut switched = args.clone();
    switched.extend(["--config".to_owned(), config.display().to_string()]);
    let client = client_with(&switched).await;
    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 403);
    assert_eq!(prompts[3].name, "skill-task-000");
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("skill-task-007"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages[0]).unwrap()["content"]["text"],
        json!(client_prompt_text(&client, "task-007").await)
    );
    client.cancel().await.unwrap();
}

/// The text of the `skill` prompt for `name`.
async fn client_prompt_text(client: &Client, name: &str) -> String {
    let mut request = GetPromptRequestParams::new("skill");
    request.arguments = Some(serde_json::from_value(json!({"name": name})).unwrap());
    let prompt = client.get_prompt(request).await.unwrap();
    serde_json::to_value(&prompt.messages[0]).unwrap()["content"]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}
