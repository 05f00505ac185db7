//! The executor pipeline through the protocol, with the tests' own `test` group served in
//! process: references in a tool's arguments, truncation with its hint, result caching,
//! `_outputLimit`, panics, and the notifications the registry and workspace send.

use pretty_assertions::assert_eq;
use rmcp::model::{CallToolRequestParams, SubscribeRequestParams};
use serde_json::json;

use crate::common::{
    Elicitation, TestClient, call, in_process, is_error, text, tool_names, wait_for,
};

#[tokio::test]
async fn a_reference_in_any_argument_receives_the_slice() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    call(
        &client,
        "WriteVar",
        json!({"name": "x", "value": "héllo wörld"}),
    )
    .await;
    let echoed = call(&client, "Echo", json!({"text": "<$VAR_REF{{x:2:5}}>"})).await;
    assert_eq!(text(&echoed), "<llo w>");
    let nested = call(
        &client,
        "Echo",
        json!({"text": {"list": ["$VAR_REF{{x:6:5}}", 1]}}),
    )
    .await;
    assert_eq!(
        nested.structured_content, None,
        "Echo declares no output schema"
    );
    assert_eq!(text(&nested), r#"{"list":["wörld",1]}"#);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_long_result_is_truncated_cached_and_readable_in_full() {
    let (server, client) = in_process(
        "output_limit = 100\n",
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let result = call(
        &client,
        "Repeat",
        json!({"unit": "0123456789", "times": 50}),
    )
    .await;
    assert!(!is_error(&result));
    let shown = text(&result);
    let variable = shown
        .split('`')
        .find(|part| part.starts_with("Repeat_") && part.ends_with("_result"))
        .unwrap_or_else(|| panic!("the hint must name the variable: {shown}"))
        .to_owned();
    let node = variable
        .trim_start_matches("Repeat_")
        .trim_end_matches("_result");
    assert_eq!(node.len(), 16, "64 bits of a random id");
    assert!(shown.starts_with(&"0123456789".repeat(5)), "{shown}");
    assert!(
        shown.contains("[… 400 characters omitted (characters 50–450) …]"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "ReadVar {{\"name\": \"{variable}\", \"start\": 50, \"length\": 400}}"
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("$VAR_REF{{{{{variable}:50:400}}}}")),
        "{shown}"
    );

    let full = call(
        &client,
        "ReadVar",
        json!({"name": variable, "length": 1000}),
    )
    .await;
    assert_eq!(
        text(&full),
        format!(
            "[Variable `{variable}`: whole value, 500 characters]\n{}",
            "0123456789".repeat(50)
        )
    );
    let args = server
        .executor()
        .workspace()
        .peek(&format!("Repeat_{node}_args"))
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&args.value).unwrap(),
        json!({"times": 50, "unit": "0123456789"})
    );

    let through_reference = call(
        &client,
        "Echo",
        json!({"text": format!("$VAR_REF{{{{{variable}:495:5}}}}")}),
    )
    .await;
    assert_eq!(text(&through_reference), "56789");
    let whole = call(
        &client,
        "Echo",
        json!({"text": format!("$VAR_REF{{{{{variable}}}}}"), "_outputLimit": -1}),
    )
    .await;
    assert_eq!(text(&whole), "0123456789".repeat(50));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_output_limit_argument_is_checked_and_never_reaches_the_tool() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let short = call(
        &client,
        "Echo",
        json!({"text": "abcdefghij", "_outputLimit": 4}),
    )
    .await;
    assert!(
        text(&short).starts_with("ab\n\n[… 6 characters omitted"),
        "{}",
        text(&short)
    );
    let bad = call(
        &client,
        "Echo",
        json!({"text": "x", "_outputLimit": "lots"}),
    )
    .await;
    assert!(is_error(&bad));
    assert!(
        text(&bad).contains("invalid _outputLimit \"lots\""),
        "{}",
        text(&bad)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn variable_tools_do_not_cache_their_own_results() {
    let (server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    call(&client, "WriteVar", json!({"name": "a", "value": "1"})).await;
    call(&client, "ReadVar", json!({"name": "a"})).await;
    call(&client, "ListVars", json!({})).await;
    call(&client, "Echo", json!({"text": "hi"})).await;
    let names: Vec<String> = server
        .executor()
        .workspace()
        .list(&synapse_mcp::vars::ListFilter::default())
        .unwrap()
        .iter()
        .map(|variable| variable.name.to_string())
        .filter(|name| !name.starts_with("Rule/"))
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(
        names[0].starts_with("Echo_") && names[0].ends_with("_args"),
        "{names:?}"
    );
    assert!(
        names[1].starts_with("Echo_") && names[1].ends_with("_result"),
        "{names:?}"
    );
    assert_eq!(names[2], "a");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_panicking_tool_gets_an_internal_error_and_the_server_keeps_serving() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let error = client
        .call_tool(CallToolRequestParams::new("Explode"))
        .await
        .expect_err("a panic must become a JSON-RPC error");
    assert!(error.to_string().contains("boom"), "{error}");
    let echoed = call(&client, "Echo", json!({"text": "still here"})).await;
    assert_eq!(text(&echoed), "still here");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn group_rules_become_variables_resources_and_instructions() {
    let (server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let rule = call(&client, "ReadVar", json!({"name": "Rule/test/Testing"})).await;
    assert!(
        text(&rule).ends_with("# Testing\nEcho echoes."),
        "{}",
        text(&rule)
    );
    let rules = server.executor().tool_rules();
    assert!(
        rules.contains("## test\n\nTest tools: Echo, Repeat, Explode, Fail, Wait, Pinned.\n"),
        "{rules}"
    );
    assert!(
        rules.contains("| `Rule/test/Testing` | How the test tools behave |"),
        "{rules}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn read_var_and_list_vars_stay_listed_while_their_group_is_off() {
    let (_server, client) = in_process(
        "[groups]\nvars = false\nplans = false\nsnapshots = false\n",
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    assert_eq!(
        tool_names(&client).await,
        [
            "Echo",
            "Explode",
            "Fail",
            "ListVars",
            "Pinned",
            "ReadVar",
            "Repeat",
            "SkillLoad",
            "SkillReadFile",
            "SkillSave",
            "SkillSearch",
            "ToolGroups",
            "Wait"
        ],
        "ReadVar and ListVars stay while any group is on; WriteVar and RemoveVars go with vars"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
#[expect(
    deprecated,
    reason = "resources/subscribe is how initialize-era clients subscribe"
)]
async fn subscribers_hear_when_a_variable_changes() {
    let observer = TestClient::new(Elicitation::Unsupported);
    let (_server, client) = in_process("", observer.clone()).await;
    client
        .subscribe(SubscribeRequestParams::new("var://watched"))
        .await
        .unwrap();
    call(
        &client,
        "WriteVar",
        json!({"name": "watched", "value": "1"}),
    )
    .await;
    wait_for(&observer, "resources/updated var://watched").await;
    client.cancel().await.unwrap();
}
