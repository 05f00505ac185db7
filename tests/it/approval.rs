//! Approval policies through the protocol: elicitation on initialize-era sessions (accept,
//! reject with a reason, decline), ask-once memory, result approval, the fallback for clients
//! that cannot be asked, and MRTR `input_required` round trips on 2026-07-28 sessions.

use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, serve_client_with_lifecycle};
use serde_json::json;

use crate::common::{Elicitation, TestClient, call, in_process, is_error, test_server, text};

const ASK_ALWAYS: &str = "[tools.Echo]\nexecution = \"ask-always\"\n";

#[tokio::test]
async fn an_approved_call_runs_after_the_user_is_asked() {
    let asker = TestClient::new(Elicitation::Accept(json!({"approve": true})));
    let (_server, client) = in_process(ASK_ALWAYS, asker.clone()).await;
    let result = call(&client, "Echo", json!({"text": "go"})).await;
    assert_eq!(text(&result), "go");
    // One line naming the tool and its arguments in brief, never their JSON.
    assert_eq!(asker.asked(), ["Allow `Echo` to run with text \"go\"?"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_rejection_carries_the_users_reason_to_the_model() {
    let asker = TestClient::new(Elicitation::Accept(
        json!({"approve": false, "reason": "not on Fridays"}),
    ));
    let (server, client) = in_process(ASK_ALWAYS, asker).await;
    let result = call(&client, "Echo", json!({"text": "go"})).await;
    assert!(is_error(&result));
    assert_eq!(
        text(&result),
        "The user rejected this call of `Echo`: not on Fridays"
    );
    let cached = server
        .executor()
        .workspace()
        .list(&synapse_mcp::vars::ListFilter {
            tag: Some("Echo".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(
        cached.is_empty(),
        "a rejected call runs nothing and caches nothing"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_declined_form_rejects_the_call() {
    let (_server, client) = in_process(ASK_ALWAYS, TestClient::new(Elicitation::Decline)).await;
    let result = call(&client, "Echo", json!({"text": "go"})).await;
    assert!(is_error(&result));
    assert_eq!(
        text(&result),
        "The user rejected this call of `Echo`: the user declined"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn ask_once_remembers_an_approval_per_argument_shape() {
    let asker = TestClient::new(Elicitation::Accept(
        json!({"approve": true, "remember": true}),
    ));
    let (_server, client) =
        in_process("[tools.Echo]\nexecution = \"ask-once\"\n", asker.clone()).await;
    call(&client, "Echo", json!({"text": "one"})).await;
    call(&client, "Echo", json!({"text": "two"})).await;
    assert_eq!(asker.asked().len(), 1, "the same shape is asked once");
    call(&client, "Echo", json!({"text": {"an": "object"}})).await;
    assert_eq!(asker.asked().len(), 2, "a new shape is asked again");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_rejected_result_is_withheld_and_not_left_in_a_variable() {
    let asker = TestClient::new(Elicitation::Accept(
        json!({"approve": false, "reason": "secret"}),
    ));
    let (server, client) =
        in_process("[tools.Echo]\nresult = \"ask-always\"\n", asker.clone()).await;
    let result = call(&client, "Echo", json!({"text": "classified"})).await;
    assert_eq!(
        text(&result),
        "The user rejected the result of this call of `Echo`: secret"
    );
    assert!(
        asker.asked()[0].contains("classified"),
        "the user sees the result to release"
    );
    let results = server
        .executor()
        .workspace()
        .list(&synapse_mcp::vars::ListFilter {
            var_type: Some(synapse_mcp::vars::VarType::ToolCallResult),
            ..Default::default()
        })
        .unwrap();
    assert!(results.is_empty(), "{results:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_that_cannot_be_asked_gets_the_fallback_and_how_to_allow_it() {
    let (_server, client) = in_process(ASK_ALWAYS, TestClient::new(Elicitation::Unsupported)).await;
    let result = call(&client, "Echo", json!({"text": "go"})).await;
    assert!(is_error(&result));
    let message = text(&result);
    assert!(
        message.contains("[tools.Echo] execution = \"auto\""),
        "{message}"
    );
    assert!(
        message.contains("approval_fallback = \"allow\""),
        "{message}"
    );
    client.cancel().await.unwrap();

    let allow = format!("approval_fallback = \"allow\"\n{ASK_ALWAYS}");
    let (_server, client) = in_process(&allow, TestClient::new(Elicitation::Unsupported)).await;
    assert_eq!(
        text(&call(&client, "Echo", json!({"text": "go"})).await),
        "go"
    );
    client.cancel().await.unwrap();
}

async fn modern_client(config: &str, asker: TestClient) -> crate::common::Client {
    let server = test_server(config);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = server.serve(server_io).await.expect("server start");
        running.waiting().await.ok();
    });
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    serve_client_with_lifecycle(asker, client_io, lifecycle)
        .await
        .expect("discover")
}

#[tokio::test]
async fn mrtr_input_required_round_trips_for_execution_and_result() {
    let config = "[tools.Echo]\nexecution = \"ask-always\"\nresult = \"ask-always\"\n";
    let asker = TestClient::new(Elicitation::Accept(json!({"approve": true})));
    let client = modern_client(config, asker.clone()).await;
    let result = call(&client, "Echo", json!({"text": "modern"})).await;
    assert_eq!(text(&result), "modern");
    let questions = asker.asked();
    assert_eq!(questions.len(), 2, "{questions:?}");
    assert!(
        questions[0].starts_with("Allow `Echo` to run"),
        "{}",
        questions[0]
    );
    assert!(
        questions[1].starts_with("Release this result of `Echo`"),
        "{}",
        questions[1]
    );
    client.cancel().await.unwrap();

    let refuser = TestClient::new(Elicitation::Accept(
        json!({"approve": false, "reason": "no"}),
    ));
    let client = modern_client(ASK_ALWAYS, refuser).await;
    let result = call(&client, "Echo", json!({"text": "modern"})).await;
    assert_eq!(text(&result), "The user rejected this call of `Echo`: no");
    client.cancel().await.unwrap();
}

/// Steps of a plan that ask: their tools and arguments as written.
const PLAN_ASKS: &str = "[tools.WriteState]\nexecution = \"ask-always\"\n\
    [tools.WriteVar]\nexecution = \"ask-once\"\n[tools.ReadState]\nresult = \"ask-always\"\n";

async fn plan_client(asker: TestClient) -> (tempfile::TempDir, crate::common::Client) {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(&config, PLAN_ASKS).unwrap();
    let client = crate::common::spawn_binary(&["--config", config.to_str().unwrap()], asker).await;
    (directory, client)
}

fn asking_plan() -> serde_json::Value {
    json!({"input": {"word": "hi"}, "steps": [
        {"_id": "mark", "_tool": "WriteState", "path": "mark", "value": "†input.word"},
        {"_id": "keep", "_tool": "WriteVar", "name": "kept", "value": "$VAR_REF{{seed}}"},
        {"_id": "look", "_tool": "ReadState", "path": "†steps.mark.path", "_outputPath": "†state.seen"}
    ]})
}

/// A plan asks once, showing every step that needs approval with its tool and arguments as
/// written; the answer covers exactly those steps (they do not ask again), a result gate still
/// asks when the result arrives, and the next run of the plan asks again. Was: one question
/// per step.
#[tokio::test]
async fn a_plan_is_approved_as_one_unit_and_result_gates_still_ask() {
    let asker = TestClient::new(Elicitation::Accept(json!({"approve": true})));
    let (_directory, client) = plan_client(asker.clone()).await;
    call(
        &client,
        "WriteVar",
        json!({"name": "seed", "value": "grain"}),
    )
    .await;
    let asked_before = asker.asked().len();
    let ran = call(&client, "RunPlan", asking_plan()).await;
    assert!(!is_error(&ran), "{}", text(&ran));
    let output = ran.structured_content.clone().unwrap();
    assert_eq!(output["ok"], json!(true), "{output}");
    let questions = asker.asked()[asked_before..].to_vec();
    assert_eq!(questions.len(), 2, "{questions:#?}");
    assert_eq!(
        questions[0],
        "Run this plan? 2 of its 3 steps need your approval; approving runs exactly these steps \
         of this plan without asking again (a result that needs approval is still asked about \
         when it arrives):\n\
         - step `mark`: `WriteState` with {\"path\":\"mark\",\"value\":\"†input.word\"} \
         (references, resolved when the step runs: †input.word)\n\
         - step `keep`: `WriteVar` with {\"name\":\"kept\",\"value\":\"$VAR_REF{{seed}}\"} \
         (references, resolved when the step runs: $VAR_REF{{seed}})"
    );
    assert!(
        questions[1].starts_with("Release this result of `ReadState` to the model?"),
        "{}",
        questions[1]
    );
    let kept = call(&client, "ReadVar", json!({"name": "kept"})).await;
    assert!(text(&kept).ends_with("\ngrain"), "{}", text(&kept));

    call(&client, "RunPlan", asking_plan()).await;
    let again = asker.asked()[asked_before + 2..].to_vec();
    assert_eq!(
        again.len(),
        2,
        "the approval covered that run only: {again:#?}"
    );
    assert!(
        again[0].starts_with("Run this plan? 2 of its 3 steps"),
        "{}",
        again[0]
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_rejected_plan_runs_no_step() {
    let (_directory, client) = plan_client(TestClient::new(Elicitation::Decline)).await;
    // A tool that does not ask writes the variable the plan reads.
    let seeded = call(&client, "ListVars", json!({"_outputPath": "†var.seed"})).await;
    assert!(!is_error(&seeded), "{}", text(&seeded));
    let ran = call(&client, "RunPlan", asking_plan()).await;
    assert!(is_error(&ran));
    assert_eq!(
        text(&ran),
        "The user rejected this plan (steps `mark`, `keep` needed approval): the user declined; \
         no step ran"
    );
    let kept = call(&client, "ReadVar", json!({"name": "kept"})).await;
    assert!(is_error(&kept), "{}", text(&kept));
    client.cancel().await.unwrap();
}
