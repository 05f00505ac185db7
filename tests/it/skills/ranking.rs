//! Search for hard queries, over stdio: a query in Chinese reaches an English skill, a long
//! pasted message finds the skill its small relevant part names, and a long, broad skill does
//! not push a specific one out of first place.

use std::fmt::Write as _;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::search;
use crate::common::{Client, Elicitation, TestClient, spawn_binary, write_skill};

/// A broad skill whose long body touches every topic, beside specific skills.
fn write_library(root: &Path) {
    let mut broad = String::from("# Writing skills\n");
    let topics = [
        "spreadsheets and their formulas",
        "PDF files and forms",
        "web applications and their tests",
        "debugging errors in rows of data",
        "teams that share a workflow",
        "servers, tools and APIs",
    ];
    for (section, topic) in topics.iter().cycle().take(60).enumerate() {
        write!(
            broad,
            "\n## Example {section}\nA skill about {topic} needs a clear description, a body \
             that says when to use it, and tests that show the agent follows it. Review what \
             the team asked for, fix what fails, and measure again before you save it.\n"
        )
        .unwrap();
    }
    write_skill(
        root,
        "skill-authoring",
        "Create, edit and evaluate agent skills: write a skill, improve its description, run evaluations. Use for any work on skills.",
        &broad,
    );
    write_skill(
        root,
        "spreadsheet-formulas",
        "Fix and write formulas in Excel workbooks (.xlsx): #REF! and #VALUE! errors, references broken by inserted rows, recalculation.",
        "# Formulas\nRecalculate after editing; keep the formatting.",
    );
    write_skill(
        root,
        "pdf-tools",
        "Merge, split and rotate PDF files.",
        "# Merging\nUse qpdf.",
    );
    write_skill(
        root,
        "web-testing",
        "Test local web applications in a real browser with Playwright: click through forms, take screenshots, read the console.",
        "# Testing\nStart the server, then drive the page.",
    );
}

async fn client(directory: &Path) -> Client {
    let root = directory.join("skills");
    write_library(&root);
    let root = root.display().to_string();
    spawn_binary(
        &["--skills", &root, "--store", "memory"],
        TestClient::new(Elicitation::Unsupported),
    )
    .await
}

async fn best(client: &Client, query: &str) -> Option<String> {
    search(client, json!({"query": query}))
        .await
        .first()
        .cloned()
}

#[tokio::test]
async fn a_chinese_query_finds_an_english_skill() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    // "How do I merge several PDF files", written without spaces: `PDF` is the shared term.
    assert_eq!(
        best(&client, "如何合并多个PDF文件").await.as_deref(),
        Some("pdf-tools")
    );
    // "Test a web page with Playwright in the browser".
    assert_eq!(
        best(&client, "用Playwright在浏览器里测试网页")
            .await
            .as_deref(),
        Some("web-testing")
    );
    // No shared word at all: "merge the files" reaches the skill through the glossary.
    assert_eq!(
        best(&client, "合并文件").await.as_deref(),
        Some("pdf-tools")
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_long_pasted_query_finds_its_skill() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let pasted = "Hey, some context first: we are a small team shipping a dashboard next month, \
        the standups run long and priorities keep changing, and we review each other's work. \
        Anyway, what I need today: finance sent me a workbook where the totals show #REF! \
        errors since someone inserted rows, and I need the formulas fixed without breaking \
        their formatting. Thanks, and sorry for the long message!";
    assert_eq!(
        best(&client, pasted).await.as_deref(),
        Some("spreadsheet-formulas")
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_broad_skill_does_not_outrank_a_specific_one() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let found = search(
        &client,
        json!({"query": "debug the errors in my spreadsheet formulas and rows"}),
    )
    .await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("spreadsheet-formulas"),
        "{found:?}"
    );
    let found = search(
        &client,
        json!({"query": "test the forms of my web application in a browser"}),
    )
    .await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("web-testing"),
        "{found:?}"
    );
    client.cancel().await.unwrap();
}
