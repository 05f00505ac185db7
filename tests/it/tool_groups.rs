//! `ToolGroups` over stdio against the real binary: listing needs no approval, a switch asks the
//! user, changes `tools/list` with a `tools/list_changed`, takes the group's rules out of the
//! `tool-rules` prompt, and is still in force after a restart on the same store.

use pretty_assertions::assert_eq;
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams};
use serde_json::json;

use crate::common::{
    Elicitation, TestClient, Transcript, assert_golden_text, call, group_is_on, is_error,
    spawn_binary, text, tool_names, wait_for,
};

fn approving() -> TestClient {
    TestClient::new(Elicitation::Accept(json!({"approve": true})))
}

/// The arguments that keep the workspace in a SQLite file under `directory`.
fn stored_in(directory: &tempfile::TempDir) -> [String; 2] {
    [
        "--data-dir".to_owned(),
        directory.path().display().to_string(),
    ]
}

async fn tool_rules(
    client: &rmcp::service::RunningService<rmcp::RoleClient, TestClient>,
) -> String {
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("tool-rules"))
        .await
        .unwrap();
    serde_json::to_string(&prompt.messages).unwrap()
}

#[tokio::test]
async fn listing_needs_no_approval_and_shows_every_group_with_its_tools() {
    // A client that cannot be asked: a call that needed consent would be denied.
    let client = spawn_binary(
        &["--groups", "default"],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let result = call(&client, "ToolGroups", json!({})).await;
    assert!(!is_error(&result), "{}", text(&result));
    let listed = result.structured_content.unwrap();
    let groups: Vec<(&str, &str, bool)> = listed["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| {
            (
                group["name"].as_str().unwrap(),
                group["origin"].as_str().unwrap(),
                group["enabled"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            ("Agent", "built-in", true),
            ("vars", "built-in", true),
            ("plans", "built-in", true),
            ("snapshots", "built-in", false),
            ("skills", "built-in", true),
            ("scripts", "built-in", false),
            ("tools", "built-in", true),
        ]
    );
    let vars = &listed["groups"][1]["tools"];
    assert_eq!(vars[0], json!({"name": "ReadVar", "enabled": true}));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_group_switched_off_leaves_the_tool_list_and_the_rules_and_stays_off_after_a_restart() {
    let directory = tempfile::tempdir().unwrap();
    let store = stored_in(&directory);
    let arguments: Vec<&str> = store.iter().map(String::as_str).collect();
    let asker = approving();
    let client = spawn_binary(&arguments, asker.clone()).await;
    let every_tool = tool_names(&client).await;
    assert!(every_tool.contains(&"SnapshotGet".to_owned()));
    let every_rule = tool_rules(&client).await;
    assert!(every_rule.contains("## snapshots"));

    let result = call(
        &client,
        "ToolGroups",
        json!({"action": "disable", "group": "snapshots"}),
    )
    .await;

    assert!(!is_error(&result), "{}", text(&result));
    let answer = result.structured_content.unwrap();
    assert_eq!(answer["changed"], "group `snapshots` switched off");
    assert_eq!(answer["groups"][0]["name"], "snapshots");
    assert_eq!(answer["groups"][0]["enabled"], false);
    let switched_off: Vec<&str> = answer["groups"][0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    let remaining: Vec<String> = every_tool
        .iter()
        .filter(|name| !switched_off.contains(&name.as_str()))
        .cloned()
        .collect();
    assert_eq!(asker.asked().len(), 1, "the switch asks the user");
    wait_for(&asker, "tools/list_changed").await;
    assert_eq!(tool_names(&client).await, remaining);
    let rules = tool_rules(&client).await;
    assert!(!rules.contains("## snapshots"), "{rules}");
    assert_golden_text("tool_groups/rules-without-snapshots.txt", &rules);
    let gone = client
        .call_tool(
            CallToolRequestParams::new("SnapshotGet")
                .with_arguments(json!({"id": "x"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap_err();
    assert_golden_text(
        "tool_groups/switched-off-tool-called.txt",
        &gone.to_string(),
    );
    client.cancel().await.unwrap();

    let restarted = spawn_binary(&arguments, approving()).await;
    assert_eq!(tool_names(&restarted).await, remaining);
    let result = call(
        &restarted,
        "ToolGroups",
        json!({"action": "enable", "group": "snapshots"}),
    )
    .await;
    assert_eq!(
        result.structured_content.unwrap()["changed"],
        "group `snapshots` switched on"
    );
    assert_eq!(tool_names(&restarted).await, every_tool);
    restarted.cancel().await.unwrap();
}

#[tokio::test]
async fn a_single_tool_switches_off_inside_a_group_that_stays_on() {
    let asker = approving();
    let client = spawn_binary(&[], asker.clone()).await;
    let every_tool = tool_names(&client).await;
    let result = call(
        &client,
        "ToolGroups",
        json!({"action": "disable", "tool": "WriteVar"}),
    )
    .await;
    assert!(!is_error(&result), "{}", text(&result));
    let vars = &result.structured_content.unwrap()["groups"][0];
    assert_eq!(vars["name"], "vars");
    assert_eq!(vars["enabled"], true);
    assert_eq!(
        vars["tools"],
        json!([
            {"name": "ReadVar", "enabled": true},
            {"name": "ListVars", "enabled": true},
            {"name": "WriteVar", "enabled": false},
            {"name": "RemoveVars", "enabled": true},
        ])
    );
    wait_for(&asker, "tools/list_changed").await;
    let remaining: Vec<String> = every_tool
        .into_iter()
        .filter(|name| name != "WriteVar")
        .collect();
    assert_eq!(tool_names(&client).await, remaining);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_switch_the_user_declines_changes_nothing() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Decline)).await;
    let every_tool = tool_names(&client).await;
    let result = call(
        &client,
        "ToolGroups",
        json!({"action": "disable", "group": "vars"}),
    )
    .await;
    assert!(is_error(&result));
    assert_eq!(tool_names(&client).await, every_tool);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mistakes_are_refused_with_the_fix() {
    let client = spawn_binary(&[], approving()).await;
    let every_tool = tool_names(&client).await;
    let cases = [
        (
            json!({"action": "disable", "group": "snapshot"}),
            "there is no group `snapshot`; did you mean `snapshots`? `action: \"list\"` shows every group and tool",
        ),
        (
            json!({"action": "enable", "tool": "RedVar"}),
            "there is no tool `RedVar`; did you mean `ReadVar`?",
        ),
        (
            json!({"action": "disable", "group": "tools"}),
            "`ToolGroups` and its group `tools` stay on",
        ),
        (
            json!({"action": "disable", "tool": "ToolGroups"}),
            "`ToolGroups` and its group `tools` stay on",
        ),
        (
            json!({"action": "enable"}),
            "`enable` needs the `group` or the `tool` to switch",
        ),
        (
            json!({"action": "disable", "group": "vars", "tool": "ReadVar"}),
            "give either `group` or `tool`, not both",
        ),
        (
            json!({"group": "vars"}),
            "`list` takes no `group` or `tool`",
        ),
    ];
    let mut refusals = Transcript::default();
    for (arguments, expected) in cases {
        let result = call(&client, "ToolGroups", arguments.clone()).await;
        assert!(is_error(&result), "{arguments}");
        assert!(
            text(&result).contains(expected),
            "{arguments}: {}",
            text(&result)
        );
        refusals.add(&arguments.to_string(), &text(&result));
    }
    refusals.assert_golden("tool_groups/mistakes.txt");
    assert_eq!(tool_names(&client).await, every_tool);
    client.cancel().await.unwrap();
}

/// The snapshot tools were on by default before: a workspace that holds a template keeps them on
/// after the default changed (its switch is stored and `ToolGroups` shows it), while a new
/// workspace on the same store starts without them.
#[tokio::test]
async fn a_workspace_holding_snapshots_keeps_the_snapshot_tools_on() {
    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().display().to_string();
    let client = spawn_binary(&["--data-dir", &data, "--groups", "all"], approving()).await;
    let set = call(
        &client,
        "TemplateSet",
        json!({"characterId": "alice", "template": {"hp": 10}}),
    )
    .await;
    assert!(!is_error(&set), "{}", text(&set));
    client.cancel().await.unwrap();

    // An empty `[groups]` leaves every group to its default.
    let config = directory.path().join("config.toml");
    std::fs::write(&config, "[groups]\n").unwrap();
    let config = config.display().to_string();
    let start = |workspace: &'static str| {
        let (data, config) = (data.clone(), config.clone());
        async move {
            let arguments = [
                "--data-dir",
                &data,
                "--config",
                &config,
                "--workspace",
                workspace,
            ];
            spawn_binary(&arguments, approving()).await
        }
    };
    let kept = start("default").await;
    assert!(tool_names(&kept).await.contains(&"TemplateGet".to_owned()));
    assert!(group_is_on(&kept, "snapshots").await);
    let template = call(&kept, "TemplateGet", json!({"characterId": "alice"})).await;
    assert_eq!(
        template.structured_content.unwrap()["template"],
        json!({"hp": 10})
    );
    kept.cancel().await.unwrap();

    let fresh = start("fresh").await;
    assert!(!tool_names(&fresh).await.contains(&"TemplateGet".to_owned()));
    fresh.cancel().await.unwrap();
}

/// The rules follow the tools: with `WriteVar` and `RemoveVars` off, the `tool-rules` prompt and
/// the rule variables no longer teach them (the TODO rule, which needs `WriteVar`, is withdrawn
/// with its variable); on again, they are back as before.
#[tokio::test]
async fn rules_follow_the_tools_that_are_on() {
    let client = spawn_binary(&[], approving()).await;
    let before = tool_rules(&client).await;
    let var_ref = || call(&client, "ReadVar", json!({"name": "Rule/Agent/VarRef"}));
    let var_ref_before = text(&var_ref().await);
    for tool in ["WriteVar", "RemoveVars"] {
        let off = call(
            &client,
            "ToolGroups",
            json!({"action": "disable", "tool": tool}),
        )
        .await;
        assert!(!is_error(&off), "{}", text(&off));
    }
    let rules = tool_rules(&client).await;
    for taught in ["WriteVar", "RemoveVars", "Rule/Agent/TODO"] {
        assert!(!rules.contains(taught), "{taught} is still taught: {rules}");
    }
    assert!(rules.contains("ListVars"), "{rules}");
    assert!(!text(&var_ref().await).contains("WriteVar"));
    let todo = call(&client, "ReadVar", json!({"name": "Rule/Agent/TODO"})).await;
    assert!(is_error(&todo), "{}", text(&todo));
    let todo_resource = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "rule://Agent/TODO",
        ))
        .await;
    assert!(todo_resource.is_err(), "{todo_resource:?}");
    let listed = client.list_all_resources().await.unwrap();
    assert!(
        !listed
            .iter()
            .any(|resource| resource.uri == "rule://Agent/TODO"),
        "{listed:?}"
    );

    for tool in ["WriteVar", "RemoveVars"] {
        let on = call(
            &client,
            "ToolGroups",
            json!({"action": "enable", "tool": tool}),
        )
        .await;
        assert!(!is_error(&on), "{}", text(&on));
    }
    assert_eq!(tool_rules(&client).await, before);
    assert_eq!(text(&var_ref().await), var_ref_before);
    let todo = call(&client, "ReadVar", json!({"name": "Rule/Agent/TODO"})).await;
    assert!(!is_error(&todo), "{}", text(&todo));
}

/// A script group declares rules in its `group.json` (text or a file) and an upstream server in
/// its `[[upstream]]` table: each becomes a `Rule/{group}/{rule}` variable listed in the
/// `tool-rules` prompt, an always-load rule is pinned in the instructions, and a rule that
/// needs a tool which is off is withdrawn.
#[tokio::test]
async fn script_and_upstream_groups_declare_rules() {
    let folder = tempfile::tempdir().unwrap();
    let group = folder.path().join("tools/lab");
    std::fs::create_dir_all(&group).unwrap();
    std::fs::write(group.join("say.sh"), "printf '%s' \"$1\"\n").unwrap();
    let manifest = json!({"description": "Says a word.", "script": "say.sh",
        "inputSchema": {"type": "object"}, "approval": "auto"});
    std::fs::write(group.join("say.tool.json"), manifest.to_string()).unwrap();
    std::fs::write(group.join("style.md"), "# Style\nSay one word at a time.").unwrap();
    let settings = json!({"rules": [
        {"name": "Style", "description": "How to say things", "file": "style.md",
         "when": "Before lab__say", "needs": ["lab__say"]},
        {"name": "Always", "description": "Pinned", "prompt": "Lab rule: never shout.",
         "alwaysLoad": true},
    ]});
    std::fs::write(group.join("group.json"), settings.to_string()).unwrap();
    let upstream = crate::common::example("upstream_server")
        .display()
        .to_string();
    let config = folder.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"up\"\ncommand = {upstream:?}\n\n[[upstream.rules]]\nname = \"Echoing\"\ndescription = \"What echo is for\"\nprompt = \"Use up__echo to repeat text.\"\n"
        ),
    )
    .unwrap();
    let tools = folder.path().join("tools").display().to_string();
    let config = config.display().to_string();
    let client = spawn_binary(&["--tools", &tools, "--config", &config], approving()).await;

    let instructions = client.peer_info().unwrap().instructions.clone().unwrap();
    assert!(
        instructions.contains("\n\nLab rule: never shout."),
        "{instructions}"
    );
    assert!(
        instructions.contains("`Rule/lab/Style`: Before lab__say"),
        "{instructions}"
    );
    assert!(
        instructions.contains("`Rule/up/Echoing`: What echo is for"),
        "{instructions}"
    );
    let rules = tool_rules(&client).await;
    assert!(
        rules.contains("| `Rule/lab/Style` | How to say things | Before lab__say |"),
        "{rules}"
    );
    assert!(
        rules.contains("| `Rule/up/Echoing` | What echo is for | When needed |"),
        "{rules}"
    );
    let read = |name: &'static str| call(&client, "ReadVar", json!({"name": name}));
    assert_eq!(
        text(&read("Rule/lab/Style").await),
        "[Variable `Rule/lab/Style`: whole value, 31 characters]\n# Style\nSay one word at a time."
    );
    assert!(text(&read("Rule/up/Echoing").await).ends_with("\nUse up__echo to repeat text."));

    let off = call(
        &client,
        "ToolGroups",
        json!({"action": "disable", "tool": "lab__say"}),
    )
    .await;
    assert!(!is_error(&off), "{}", text(&off));
    assert!(is_error(&read("Rule/lab/Style").await));
    assert!(!tool_rules(&client).await.contains("Rule/lab/Style"));
}
