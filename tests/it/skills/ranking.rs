//! Search for hard queries, over stdio: a query in Chinese reaches an English skill, a long
//! pasted message finds the skill its small relevant part names, a long, broad skill does not
//! push a specific one out of first place, a conversion ("a pdf from markdown") finds the
//! skill going its way rather than the one going the other, and British spellings and German
//! compounds meet the skills' own words.

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

/// Document skills as public skill libraries write them: one makes and edits PDFs, one turns
/// documents (PDFs among them) into Markdown, others write Word files, slides and Markdown
/// reports that mention both formats in passing.
fn write_document_library(root: &Path) {
    write_skill(
        root,
        "pdf",
        "Use this skill whenever the user wants to do anything with PDF files: reading or extracting text and tables, merging or splitting PDFs, rotating pages, adding watermarks, creating new PDFs, filling PDF forms. If the user asks to produce a .pdf, use this skill.",
        "# PDF processing\n## Creating PDFs\nBuild the pages with reportlab, or render HTML first.\n## Merging\nUse pypdf to merge or split files.\n## Forms\nFill the fields with pypdf.",
    );
    write_skill(
        root,
        "markitdown",
        "Convert files and office documents to Markdown. Supports PDF, DOCX, PPTX, XLSX, images with OCR, HTML, CSV and JSON. Use when a document must become Markdown text for an LLM or an index.",
        "# MarkItDown\n## Command line\n`markitdown report.pdf -o report.md` writes the Markdown.\n## Python\nConvert a PDF, a Word file or slides to Markdown in one call; every Markdown heading and table is kept.",
    );
    write_skill(
        root,
        "docx",
        "Create, read and edit Word documents (.docx): tracked changes, comments, tables of contents, headers and page numbers.",
        "# Word documents\n## Converting\nExport to PDF with LibreOffice when asked.\n## Markdown\nPandoc reads Markdown into a .docx.",
    );
    write_skill(
        root,
        "pptx",
        "Any task with a .pptx file: creating slide decks and presentations, reading or editing slides, layouts, speaker notes.",
        "# Slides\nExport the deck to PDF for handouts.",
    );
    write_skill(
        root,
        "markdown-reports",
        "Write scientific reports and documentation in Markdown with Mermaid diagrams, then share them as PDF or HTML.",
        "# Markdown first\nWrite in Markdown; render to PDF with pandoc at the end.\n## Diagrams\nMermaid in Markdown code blocks.",
    );
    // The rest of a library: skills that name neither format.
    let others = [
        (
            "xlsx",
            "Open, edit and create spreadsheets (.xlsx, .csv): formulas, formatting, charts.",
        ),
        (
            "systematic-debugging",
            "Use when encountering any bug, test failure or unexpected behavior, before proposing fixes.",
        ),
        (
            "brainstorming",
            "Explore intent, requirements and design before building a feature.",
        ),
        (
            "webapp-testing",
            "Test local web applications with Playwright: screenshots, browser logs, clicking through forms.",
        ),
        (
            "scanpy",
            "Single-cell RNA-seq analysis: quality control, normalization, clustering, marker genes.",
        ),
        (
            "slack-gif-creator",
            "Create animated GIFs optimized for Slack.",
        ),
    ];
    for (name, description) in others {
        write_skill(
            root,
            name,
            description,
            "# Steps\nFollow the steps in order.",
        );
    }
}

#[tokio::test]
async fn a_conversion_finds_the_skill_that_goes_its_way() {
    let directory = tempfile::tempdir().unwrap();
    let root = directory.path().join("skills");
    write_document_library(&root);
    let root = root.display().to_string();
    let client = spawn_binary(
        &["--skills", &root, "--store", "memory"],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let first_three = |found: Vec<String>| found.into_iter().take(3).collect::<Vec<_>>();
    // Wanted: a PDF. The skill that turns PDFs into Markdown goes the other way.
    let found = search(&client, json!({"query": "make a pdf from markdown"})).await;
    assert_eq!(
        first_three(found),
        ["pdf", "markdown-reports", "docx"],
        "make a pdf from markdown"
    );
    let found = search(&client, json!({"query": "用markdown生成PDF"})).await;
    assert_eq!(
        first_three(found),
        ["pdf", "markdown-reports", "markitdown"],
        "用markdown生成PDF"
    );
    // The other way round, the converter comes first.
    let found = search(&client, json!({"query": "convert a pdf to markdown"})).await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("markitdown"),
        "{found:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn british_spellings_meet_the_skills_american_words() {
    let directory = tempfile::tempdir().unwrap();
    let root = directory.path().join("skills");
    write_skill(
        &root,
        "file-organizer",
        "Organize files into folders.",
        "# Folders\nOne folder per year.",
    );
    // Says "files" more often: without the spelling rule it wins on the one shared word.
    write_skill(
        &root,
        "file-lister",
        "List files, hidden files and large files.",
        "# Listing\nSorted by name.",
    );
    let root = root.display().to_string();
    let client = spawn_binary(
        &["--skills", &root, "--store", "memory"],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    // The stemmer keeps "organise" (`organis`) and "organize" (`organ`) apart.
    assert_eq!(
        best(&client, "organise my files").await.as_deref(),
        Some("file-organizer")
    );
    client.cancel().await.unwrap();
}
