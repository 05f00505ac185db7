//! Plans through the protocol: the state document, `†` references, `_outputPath`
//! with `||` and `&&`, and `RunPlan` — validation, order, parallel steps, failures.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{Elicitation, TestClient, call, in_process, is_error, text};

fn structured(result: &rmcp::model::CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("no structured content: {}", text(result)))
}

async fn state(client: &crate::common::Client, path: &str) -> String {
    let read = call(client, "ReadState", json!({"path": path})).await;
    assert!(!is_error(&read), "{}", text(&read));
    text(&read).split_once('\n').unwrap().1.to_owned()
}

#[tokio::test]
async fn output_path_on_a_plain_call_writes_state_and_typed_references_read_it() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let written = call(
        &client,
        "Echo",
        json!({"text": {"name": "Ada", "tags": ["x"]}, "_outputPath": "†state.user"}),
    )
    .await;
    assert!(
        text(&written).ends_with("[Written to †state.user]"),
        "{}",
        text(&written)
    );
    call(&client, "WriteState", json!({"path": "count", "value": 42})).await;
    let typed = call(&client, "Echo", json!({"text": {"who": "†state.user", "n": "†state.count", "line": "†state.user.name is †state.count"}})).await;
    assert_eq!(
        serde_json::from_str::<Value>(&text(&typed)).unwrap(),
        json!({"who": {"name": "Ada", "tags": ["x"]}, "n": 42, "line": "Ada is 42"})
    );
    let fanned = call(
        &client,
        "Echo",
        json!({"text": "both", "_outputPath": "†state.a.b && †var.copy"}),
    )
    .await;
    assert!(
        text(&fanned).ends_with("[Written to †state.a.b, †var.copy]"),
        "{}",
        text(&fanned)
    );
    assert_eq!(state(&client, "a.b").await, "\"both\"");
    let copy = call(&client, "ReadVar", json!({"name": "copy"})).await;
    assert!(text(&copy).ends_with("\nboth"));
    let spliced = call(&client, "Echo", json!({"text": "user: †state.user"})).await;
    assert!(
        is_error(&spliced) && text(&spliced).contains("cannot be spliced"),
        "{}",
        text(&spliced)
    );
    let outside = call(&client, "Echo", json!({"text": "†input.x"})).await;
    assert!(
        text(&outside).contains("only available inside RunPlan"),
        "{}",
        text(&outside)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_branch_writes_a_failure_as_data_and_the_call_succeeds() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let result = call(&client, "Fail", json!({"message": "no such user", "_outputPath": "†state.user.verified || †state.user.failed"})).await;
    assert!(!is_error(&result), "{}", text(&result));
    assert!(
        text(&result).contains("written to †state.user.failed as data: no such user"),
        "{}",
        text(&result)
    );
    assert_eq!(
        state(&client, "user").await,
        "{\n  \"failed\": \"no such user\"\n}"
    );
    let plain = call(
        &client,
        "Fail",
        json!({"message": "boom", "_outputPath": "†state.x"}),
    )
    .await;
    assert!(is_error(&plain), "without || a failure stays a failure");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_three_step_plan_chains_outputs_and_fans_out() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    call(
        &client,
        "WriteVar",
        json!({"name": "greeting", "value": "hello"}),
    )
    .await;
    let plan = json!({
        "input": {"who": "Ada", "times": 2},
        "steps": [
            {"_id": "first", "_tool": "Echo", "text": "†var.greeting †input.who", "_outputPath": "†state.first"},
            {"_id": "second", "_tool": "Repeat", "unit": "†state.first|", "times": "†input.times", "_outputPath": "†state.second"},
            {"_id": "third", "_tool": "Echo", "text": {"from": "†steps.second"}, "_outputPath": "†state.report.a && †state.report.b"}
        ]
    });
    let result = call(&client, "RunPlan", plan).await;
    let output = structured(&result);
    assert_eq!(output["ok"], json!(true), "{output}");
    assert_eq!(output["order"], json!([["first"], ["second"], ["third"]]));
    let statuses: Vec<&str> = output["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["success", "success", "success"]);
    assert_eq!(
        output["steps"][2]["written"],
        json!(["†state.report.a", "†state.report.b"])
    );
    assert!(
        output["steps"][0]["resultVariable"]
            .as_str()
            .unwrap()
            .starts_with("Echo_")
    );
    assert_eq!(state(&client, "second").await, "\"hello Ada|hello Ada|\"");
    assert_eq!(
        state(&client, "report.b").await,
        "{\n  \"from\": \"hello Ada|hello Ada|\"\n}"
    );
    let diff_paths: Vec<&str> = output["stateDiff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(diff_paths, ["first", "report", "second"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn validation_lists_every_problem_before_anything_runs() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let plan = json!({"steps": [
        {"_id": "a", "_tool": "Echo", "text": "†steps.b", "_outputPath": "†state.a"},
        {"_id": "b", "_tool": "Echo", "text": "†state.a", "_outputPath": "†state.b"},
        {"_id": "c", "_tool": "Echo", "text": "†state.nothing.here"},
        {"_id": "d", "_tool": "NoSuchTool"},
        {"_id": "e", "_tool": "Repeat", "unit": 5, "times": 1},
        {"_id": "f", "_tool": "Echo", "text": "†steps.ghost"}
    ]});
    let result = call(&client, "RunPlan", plan).await;
    assert!(is_error(&result));
    let message = text(&result);
    for expected in [
        "the plan is not valid (5 problems)",
        "step `c`: †state.nothing.here: no step writes it and the state has nothing there (a dangling reference)",
        "step `d`: unknown tool `NoSuchTool`",
        "step `e`: argument `unit` of `Repeat` must be \"string\", not a number",
        "step `f`: †steps.ghost refers to unknown step `ghost`",
        "steps `a`, `b` depend on each other in a cycle",
    ] {
        assert!(
            message.contains(expected),
            "missing «{expected}» in:\n{message}"
        );
    }
    let state_after = call(&client, "ReadState", json!({})).await;
    assert!(
        text(&state_after).ends_with("\n{}"),
        "nothing ran: {}",
        text(&state_after)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_dry_run_returns_the_order_and_runs_nothing() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let plan = json!({"dryRun": true, "steps": [
        {"_id": "late", "_tool": "Echo", "text": "†steps.early"},
        {"_id": "early", "_tool": "Echo", "text": "x", "_outputPath": "†state.early"},
        {"_id": "alone", "_tool": "Echo", "text": "y"}
    ]});
    let output = structured(&call(&client, "RunPlan", plan).await);
    assert_eq!(
        output,
        json!({"ok": true, "order": [["early", "alone"], ["late"]]})
    );
    let state_after = call(&client, "ReadState", json!({})).await;
    assert!(text(&state_after).ends_with("\n{}"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn independent_steps_run_at_the_same_time_and_failures_stop_only_their_dependants() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let plan = json!({"steps": [
        {"_id": "slow1", "_tool": "Wait", "millis": 150},
        {"_id": "slow2", "_tool": "Wait", "millis": 150},
        {"_id": "broken", "_tool": "Fail", "message": "down"},
        {"_id": "needs-broken", "_tool": "Echo", "text": "†steps.broken"},
        {"_id": "caught", "_tool": "Fail", "message": "handled", "_outputPath": "†state.ok || †state.err"},
        {"_id": "after-caught", "_tool": "Echo", "text": "got: †state.err"}
    ]});
    let output = structured(&call(&client, "RunPlan", plan).await);
    let steps = output["steps"].as_array().unwrap();
    let by_id = |id: &str| {
        steps
            .iter()
            .find(|step| step["id"] == json!(id))
            .unwrap()
            .clone()
    };
    let (first, second) = (by_id("slow1"), by_id("slow2"));
    let overlap = first["startedMicros"].as_u64() < second["finishedMicros"].as_u64()
        && second["startedMicros"].as_u64() < first["finishedMicros"].as_u64();
    assert!(
        overlap,
        "independent steps should overlap: {first} {second}"
    );
    assert_eq!(by_id("broken")["status"], json!("error"));
    assert_eq!(by_id("needs-broken")["status"], json!("skipped"));
    assert_eq!(by_id("caught")["status"], json!("success"));
    assert_eq!(by_id("after-caught")["status"], json!("success"));
    assert_eq!(output["ok"], json!(false));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_plan_stored_in_a_variable_runs_with_new_input() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let plan = json!({"steps": [{"_id": "say", "_tool": "Echo", "text": "hi †input.name", "_outputPath": "†state.said"}]});
    call(
        &client,
        "WriteVar",
        json!({"name": "plans/greet", "value": plan}),
    )
    .await;
    let output = structured(
        &call(
            &client,
            "RunPlan",
            json!({"plan": "$VAR_REF{{plans/greet}}", "input": {"name": "Grace"}}),
        )
        .await,
    );
    assert_eq!(output["ok"], json!(true), "{output}");
    assert_eq!(state(&client, "said").await, "\"hi Grace\"");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_schema_pinned_output_path_wins() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let result = call(
        &client,
        "Pinned",
        json!({"text": 7, "_outputPath": "†state.elsewhere"}),
    )
    .await;
    assert!(
        text(&result).ends_with("[Written to †state.pinned]"),
        "{}",
        text(&result)
    );
    assert_eq!(state(&client, "pinned").await, "7");
    client.cancel().await.unwrap();
}

#[tokio::test]
#[expect(
    deprecated,
    reason = "resources/subscribe is how initialize-era clients subscribe"
)]
async fn plans_report_progress_and_state_subscribers_hear_of_writes() {
    let observer = TestClient::new(Elicitation::Unsupported);
    let (_server, client) = in_process("", observer.clone()).await;
    client
        .subscribe(rmcp::model::SubscribeRequestParams::new("state://report"))
        .await
        .unwrap();
    let arguments = json!({"steps": [
        {"_id": "one", "_tool": "Echo", "text": "1", "_outputPath": "†state.report.one"},
        {"_id": "two", "_tool": "Echo", "text": "2"}
    ]});
    let mut request = rmcp::model::CallToolRequestParams::new("RunPlan")
        .with_arguments(arguments.as_object().cloned().unwrap());
    request.meta = Some(rmcp::model::RequestMetaObject::with_progress_token(
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::String("plan-1".into())),
    ));
    let result = client.call_tool(request).await.unwrap();
    assert_eq!(structured(&result)["ok"], json!(true));
    crate::common::wait_for(&observer, "resources/updated state://report").await;
    let progress: Vec<String> = observer
        .notifications()
        .into_iter()
        .filter(|seen| seen.starts_with("progress"))
        .collect();
    assert_eq!(progress.len(), 2, "{progress:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_plan_stops_the_steps_not_yet_started() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let arguments = json!({"steps": [
        {"_id": "slow", "_tool": "Wait", "millis": 300, "_outputPath": "†state.slow"},
        {"_id": "after", "_tool": "Echo", "text": "†state.slow", "_outputPath": "†state.after"}
    ]});
    let params = rmcp::model::CallToolRequestParams::new("RunPlan")
        .with_arguments(arguments.as_object().cloned().unwrap());
    let request =
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
    let handle = client
        .peer()
        .send_cancellable_request(request, rmcp::service::PeerRequestOptions::default())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let state_after = call(&client, "ReadState", json!({})).await;
    assert!(
        text(&state_after).ends_with("\n{}"),
        "no step wrote anything: {}",
        text(&state_after)
    );
    client.cancel().await.unwrap();
}

/// Step fields start with `_`, so a tool whose own argument is `id` runs in a plan (the client
/// approves `SnapshotUpdate`, which asks first).
#[tokio::test]
async fn a_plan_step_passes_a_tool_its_own_id() {
    let client = crate::common::spawn_binary(&[], crate::floors::approving()).await;
    let plan = json!({"steps": [
        {"_id": "make", "_tool": "SnapshotApply", "chatFile": "plan", "text": "@.SET(\"a\", 1);"},
        {"_id": "read", "_tool": "SnapshotGet", "id": "†steps.make.snapshotId", "_outputPath": "†state.read"},
        {"_id": "edit", "_tool": "SnapshotUpdate", "id": "†steps.make.snapshotId",
         "snapshot": {"a": 2, "before": "†steps.read.snapshot.a"}}
    ]});
    let result = call(&client, "RunPlan", plan).await;
    assert!(!is_error(&result), "{}", text(&result));
    let output = structured(&result);
    let statuses: Vec<(Value, Value)> = output["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| (step["id"].clone(), step["status"].clone()))
        .collect();
    assert_eq!(
        statuses,
        [
            (json!("make"), json!("success")),
            (json!("read"), json!("success")),
            (json!("edit"), json!("success"))
        ]
    );
    assert_eq!(
        serde_json::from_str::<Value>(&state(&client, "read.snapshot").await).unwrap(),
        json!({"a": 1})
    );
    let snapshot_id = state(&client, "read.id").await;
    let edited = call(
        &client,
        "SnapshotGet",
        json!({"id": serde_json::from_str::<Value>(&snapshot_id).unwrap()}),
    )
    .await;
    assert_eq!(
        structured(&edited)["snapshot"],
        json!({"a": 2, "before": 1})
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_step_named_by_id_or_with_an_unknown_field_is_refused_with_the_fix() {
    let client = crate::common::spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let old = call(
        &client,
        "RunPlan",
        json!({"steps": [{"id": "read", "_tool": "ReadState", "path": "x"}]}),
    )
    .await;
    let unknown = call(
        &client,
        "RunPlan",
        json!({"steps": [{"_id": "read", "_tool": "ReadState", "_after": "x"}]}),
    )
    .await;

    assert!(is_error(&old));
    assert!(
        text(&old).contains(
            "step 1: missing `_id`: a step is named by `_id`, and `id` is passed to the tool as \
             its own argument (e.g. SnapshotGet's snapshot id); rename the step's \"id\": \"read\" \
             to \"_id\": \"read\""
        ),
        "{}",
        text(&old)
    );
    assert!(is_error(&unknown));
    assert!(
        text(&unknown).contains(
            "step 1: unknown step field `_after`: a step takes `_id`, `_tool`, `_outputPath`, \
             `_outputLimit` and the tool's own arguments"
        ),
        "{}",
        text(&unknown)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn inside_a_plan_write_var_receives_the_values_the_plan_computed() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    call(
        &client,
        "WriteState",
        json!({"path": "copy.name", "value": "Grace"}),
    )
    .await;
    let output = structured(
        &call(
            &client,
            "RunPlan",
            json!({"input": {"title": "Dr"}, "steps": [
                {"_id": "greet", "_tool": "WriteVar", "name": "greeting",
                 "value": "hi †input.title †state.copy.name, ††input.title stays"},
            ]}),
        )
        .await,
    );
    assert_eq!(output["ok"], json!(true), "{output}");
    let read = call(&client, "ReadVar", json!({"name": "greeting"})).await;
    assert!(
        text(&read).ends_with("hi Dr Grace, †input.title stays"),
        "{}",
        text(&read)
    );
    // Outside a plan the same call keeps the references as written, for a plan template.
    call(
        &client,
        "WriteVar",
        json!({"name": "template", "value": "hi †state.copy.name"}),
    )
    .await;
    let read = call(&client, "ReadVar", json!({"name": "template"})).await;
    assert!(
        text(&read).ends_with("hi †state.copy.name"),
        "{}",
        text(&read)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn one_path_grammar_reads_and_writes_unicode_and_quoted_keys_everywhere() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let written = call(
        &client,
        "WriteState",
        json!({"path": "角色.好感度", "value": 5}),
    )
    .await;
    assert!(!is_error(&written), "{}", text(&written));
    let dotted = call(
        &client,
        "Echo",
        json!({"text": {"v": "1.2"}, "_outputPath": "†state.\"version.info\""}),
    )
    .await;
    assert!(
        text(&dotted).ends_with("[Written to †state.\"version.info\"]"),
        "{}",
        text(&dotted)
    );
    let read = call(
        &client,
        "Echo",
        json!({"text": {
            "whole": "†state.角色",
            "affection": "†state.角色.好感度",
            "line": "好感度是†state.\"角色\".好感度。",
            "dotted": "†state.\"version.info\".v"
        }}),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&text(&read)).unwrap(),
        json!({
            "whole": {"好感度": 5},
            "affection": 5,
            "line": "好感度是5。",
            "dotted": "1.2"
        })
    );
    assert_eq!(state(&client, "\"version.info\".v").await, "\"1.2\"");
    let plan = call(
        &client,
        "RunPlan",
        json!({"steps": [
            {"_id": "first", "_tool": "Echo", "text": "†state.角色.好感度", "_outputPath": "†state.角色.复制"},
            {"_id": "second", "_tool": "Echo", "text": "†steps.first"}
        ]}),
    )
    .await;
    assert!(!is_error(&plan), "{}", text(&plan));
    assert_eq!(state(&client, "角色.复制").await, "5");
    let unclosed = call(&client, "Echo", json!({"text": "†state.\"角色"})).await;
    assert!(
        is_error(&unclosed) && text(&unclosed).contains("has a quote that is never closed"),
        "{}",
        text(&unclosed)
    );
    client.cancel().await.unwrap();
}

/// The validator knows every write a step makes: `WriteState`'s path and `WriteVar`'s name as
/// well as `_outputPath`, so a later step's `†state`, `†var` and `$VAR_REF` references to them
/// are not dangling (with `dryRun` too), and a `$VAR_REF` in a step is resolved when the step
/// runs. A reference nothing writes and nothing holds is still refused, named.
#[tokio::test]
async fn a_plan_may_read_what_its_write_state_and_write_var_steps_write() {
    let client = crate::common::spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let steps = json!([
        {"_id": "fresh", "_tool": "WriteState", "path": "fresh.x", "value": {"n": 7}},
        {"_id": "note", "_tool": "WriteVar", "name": "notes", "value": "first draft"},
        {"_id": "copy", "_tool": "WriteState", "path": "copy",
         "value": {"n": "†state.fresh.x.n", "var": "†var.notes", "text": "$VAR_REF{{notes}}!"}}
    ]);
    let dry = call(&client, "RunPlan", json!({"steps": steps, "dryRun": true})).await;
    assert!(!is_error(&dry), "{}", text(&dry));
    assert_eq!(
        structured(&dry),
        json!({"ok": true, "order": [["fresh", "note"], ["copy"]]})
    );
    let ran = call(&client, "RunPlan", json!({"steps": steps})).await;
    assert!(!is_error(&ran), "{}", text(&ran));
    assert_eq!(structured(&ran)["ok"], json!(true), "{}", text(&ran));
    assert_eq!(
        serde_json::from_str::<Value>(&state(&client, "copy").await).unwrap(),
        json!({"n": 7, "var": "first draft", "text": "first draft!"})
    );

    // Steps that update what they read run in the plan's order, not in a cycle.
    let updates = call(
        &client,
        "RunPlan",
        json!({"steps": [
            {"_id": "one", "_tool": "WriteVar", "name": "notes", "value": "$VAR_REF{{notes}}, one"},
            {"_id": "two", "_tool": "WriteVar", "name": "notes", "value": "†var.notes, two"}
        ]}),
    )
    .await;
    assert_eq!(
        structured(&updates)["order"],
        json!([["one"], ["two"]]),
        "{}",
        text(&updates)
    );
    let notes = call(&client, "ReadVar", json!({"name": "notes"})).await;
    assert!(
        text(&notes).ends_with("\nfirst draft, one, two"),
        "{}",
        text(&notes)
    );

    let dangling = call(
        &client,
        "RunPlan",
        json!({"dryRun": true, "steps": [
            {"_id": "write", "_tool": "WriteState", "path": "elsewhere", "value": 1},
            {"_id": "read", "_tool": "WriteState", "path": "out",
             "value": ["†state.nowhere", "$VAR_REF{{ghost}}"]}
        ]}),
    )
    .await;
    assert!(is_error(&dangling));
    assert_eq!(
        text(&dangling),
        "the plan is not valid (2 problems):\n\
         - step `read`: $VAR_REF{{ghost}}: no variable `ghost` and no step writes one\n\
         - step `read`: †state.nowhere: no step writes it and the state has nothing there (a dangling reference)"
    );
    client.cancel().await.unwrap();
}

/// A built-in tool's outcomes are success and error: `A && B || C` writes a success to both
/// paths of the first branch and a tool error to the second; a third branch is refused, naming
/// the outcomes.
#[tokio::test]
async fn a_branch_of_a_built_in_tool_may_fan_out_and_a_third_is_refused() {
    let (_server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    let branches = "†state.a && †state.b || †state.c";
    let echoed = call(
        &client,
        "Echo",
        json!({"text": "ok", "_outputPath": branches}),
    )
    .await;
    assert!(!is_error(&echoed), "{}", text(&echoed));
    let failed = call(
        &client,
        "Fail",
        json!({"message": "no", "_outputPath": branches}),
    )
    .await;
    assert!(
        text(&failed).contains("written to †state.c as data: no"),
        "{}",
        text(&failed)
    );
    let whole = call(&client, "ReadState", json!({})).await;
    assert_eq!(
        serde_json::from_str::<Value>(text(&whole).split_once('\n').unwrap().1).unwrap(),
        json!({"a": "ok", "b": "ok", "c": "no"})
    );
    let three = call(
        &client,
        "Echo",
        json!({"text": "x", "_outputPath": "†state.x || †state.y || †state.z"}),
    )
    .await;
    assert!(is_error(&three));
    assert_eq!(
        text(&three),
        "_outputPath has 3 branches (separated by `||`) but `Echo` has 2 outcomes: success, \
         error; give at most 2 paths, one per outcome in that order"
    );
    client.cancel().await.unwrap();
}
