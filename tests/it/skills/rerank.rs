//! `SkillSearch {rerank: true}`: the client's model reorders the top candidates through MCP
//! sampling when the client declared it; otherwise, or when its answer is unusable, the local
//! ranking stands and the answer says why.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::Fixture;
use crate::common::{Elicitation, TestClient, call, is_error, spawn_binary, text};

const QUERY: &str = "use when the user";

/// The candidates' names in the order the question lists them (one JSON line each).
fn candidate_names(message: &str) -> Vec<String> {
    message
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|line| line["name"].as_str().map(str::to_owned))
        .collect()
}

fn names(structured: &Value) -> Vec<String> {
    structured["matched_skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The search with and without `rerank`, on a fresh server with this client.
async fn search_both_ways(fixture: &Fixture, client: TestClient) -> (Value, Value) {
    let args = fixture.args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let session = spawn_binary(&args, client).await;
    let local = call(
        &session,
        "SkillSearch",
        json!({"query": QUERY, "maxResults": 4}),
    )
    .await;
    let reranked = call(
        &session,
        "SkillSearch",
        json!({"query": QUERY, "maxResults": 4, "rerank": true}),
    )
    .await;
    assert!(!is_error(&reranked), "{}", text(&reranked));
    session.cancel().await.unwrap();
    (
        local.structured_content.unwrap(),
        reranked.structured_content.unwrap(),
    )
}

#[tokio::test]
async fn the_clients_model_reorders_the_top_candidates() {
    let fixture = Fixture::new();
    // The "model" puts the candidates in reverse, invents one name and leaves the last
    // candidate (the local best) out: it must follow the ranked ones.
    let client = TestClient::new(Elicitation::Unsupported).with_model(|message| {
        let mut names = candidate_names(message);
        names.remove(0);
        names.reverse();
        names.insert(1, "invented-skill".to_owned());
        Ok(format!("Here you go:\n{}", json!(names)))
    });
    let (local, reranked) = search_both_ways(&fixture, client.clone()).await;

    let sampled = client.sampled();
    assert_eq!(sampled.len(), 1, "one sampling request");
    let (system, message) = &sampled[0];
    assert!(system.contains("JSON array"), "{system}");
    assert!(
        message.starts_with(&format!("Task: {QUERY}\n")),
        "{message}"
    );
    let candidates = candidate_names(message);
    assert!(
        candidates.len() > 4,
        "more candidates than results: {candidates:?}"
    );
    assert_eq!(names(&local), candidates[..4]);

    let mut expected: Vec<String> = candidates[1..].iter().rev().cloned().collect();
    expected.push(candidates[0].clone());
    assert_eq!(names(&reranked), expected[..4]);
    assert_eq!(
        reranked["rerank"],
        json!({
            "applied": true,
            "reason": format!(
                "the client's model reordered the top {} candidates ({} ranked, 1 unknown name(s) ignored)",
                candidates.len(),
                candidates.len() - 1
            ),
            "model": "test-model"
        })
    );
}

#[tokio::test]
async fn an_unusable_answer_or_a_failed_sampling_leaves_the_local_order() {
    let fixture = Fixture::new();
    let garbage = TestClient::new(Elicitation::Unsupported)
        .with_model(|_| Ok("I would rather not rank these.".to_owned()));
    let (local, reranked) = search_both_ways(&fixture, garbage).await;
    assert_eq!(names(&reranked), names(&local));
    assert_eq!(
        reranked["rerank"],
        json!({
            "applied": false,
            "reason": "the client's model answered, but its answer held no JSON array of skill names; the local ranking stands",
            "model": "test-model"
        })
    );

    let failing = TestClient::new(Elicitation::Unsupported)
        .with_model(|_| Err(rmcp::ErrorData::internal_error("the user refused", None)));
    let (local, reranked) = search_both_ways(&fixture, failing).await;
    assert_eq!(names(&reranked), names(&local));
    assert_eq!(reranked["rerank"]["applied"], json!(false));
    let reason = reranked["rerank"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the client's sampling failed: ")
            && reason.contains("the user refused")
            && reason.ends_with("; the local ranking stands"),
        "{reason}"
    );
}

#[tokio::test]
async fn without_sampling_the_local_ranking_stands_and_says_why() {
    let fixture = Fixture::new();
    let client = TestClient::new(Elicitation::Unsupported);
    let (local, reranked) = search_both_ways(&fixture, client.clone()).await;
    assert_eq!(names(&reranked), names(&local));
    assert_eq!(
        reranked["rerank"],
        json!({
            "applied": false,
            "reason": "the client did not declare sampling, so the local ranking stands"
        })
    );
    assert!(local.get("rerank").is_none(), "{local}");
    assert_eq!(client.sampled(), []);
}
