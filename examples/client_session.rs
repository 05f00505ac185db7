//! A client session that walks synapse-mcp's main job end to end, with rmcp's own client over
//! the server's stdio, as an MCP client such as Claude Desktop drives it:
//!
//! 1. store a long text in a variable (`WriteVar`);
//! 2. call a tool with a `$VAR_REF` reference, so the text never passes through the model
//!    (`WriteState` with `$VAR_REF{{report:0:60}}`, then `ReadState`);
//! 3. search the skills library and load the best match (`SkillSearch`, `SkillLoad`);
//! 4. run a plan whose steps are linked by `†` references (`RunPlan`);
//! 5. process a SillyTavern-shaped chat (`examples/sillytavern_chat.json`) into a state snapshot
//!    per AI reply (`SnapshotProcess`), then read the newest one back (`SnapshotGet`).
//!
//! ```sh
//! cargo run --example client_session                       # bundled skills, memory store
//! cargo run --example client_session -- --skills tests/fixtures/skills
//! cargo run --example client_session -- --server target/release/synapse-mcp
//! ```
//! The server runs with `--store memory`, so the session leaves nothing behind. Without
//! `--server`, the example builds the `synapse-mcp` binary with the cargo that runs it.
#![allow(
    clippy::print_stdout,
    reason = "an example shows its session on stdout"
)]

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

/// What the session is started with.
struct Options {
    server: Option<PathBuf>,
    skills: Option<PathBuf>,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options {
        server: None,
        skills: None,
    };
    let mut arguments = std::env::args().skip(1);
    while let Some(flag) = arguments.next() {
        let value = arguments
            .next()
            .with_context(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--server" => options.server = Some(value.into()),
            "--skills" => options.skills = Some(value.into()),
            other => bail!("unknown option `{other}`; use --server PATH or --skills DIR"),
        }
    }
    Ok(options)
}

/// The server binary: the one given, or the package's own, built now by the running cargo.
fn server_binary(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(path) = given {
        return Ok(path);
    }
    let cargo = std::env::var_os("CARGO")
        .context("no --server given and not run by cargo: pass --server path/to/synapse-mcp")?;
    let status = std::process::Command::new(cargo)
        .args(["build", "--quiet", "--bin", "synapse-mcp"])
        .status()
        .context("cannot run cargo to build synapse-mcp")?;
    if !status.success() {
        bail!("building synapse-mcp failed ({status})");
    }
    let examples = std::env::current_exe()?
        .parent()
        .map(PathBuf::from)
        .context("the example has no folder")?;
    let profile = examples
        .parent()
        .context("no target folder above examples/")?;
    Ok(profile.join("synapse-mcp"))
}

type Client = RunningService<RoleClient, ()>;

/// Calls a tool; a tool error ends the session with its message.
async fn call(client: &Client, tool: &str, arguments: Value) -> anyhow::Result<CallToolResult> {
    let Value::Object(arguments) = arguments else {
        bail!("the arguments of {tool} must be a JSON object");
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .with_context(|| format!("{tool} failed at the protocol level"))?;
    if result.is_error == Some(true) {
        bail!("{tool} returned a tool error: {}", text(&result));
    }
    Ok(result)
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect()
}

fn structured(result: &CallToolResult) -> anyhow::Result<&Value> {
    result
        .structured_content
        .as_ref()
        .context("the result has no structured content")
}

/// The first `limit` characters of a text, on one line.
fn preview(text: &str, limit: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[tokio::main]
#[expect(
    clippy::too_many_lines,
    reason = "the session an example client walks through, top to bottom; the 80-line limit is for src/"
)]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    let binary = server_binary(options.server)?;
    let mut command = Command::new(&binary);
    command.args(["--store", "memory", "--log-level", "warn"]);
    // The default groups, and the chat snapshot tools the chat part of the session uses.
    command.args(["--groups", "default,snapshots"]);
    if let Some(skills) = &options.skills {
        command.arg("--skills").arg(skills);
    }
    let transport = TokioChildProcess::new(command)
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let client = ().serve(transport).await.context("initialize failed")?;
    let server = client
        .peer_info()
        .and_then(|info| info.server_info.clone())
        .context("the server sent no info")?;
    println!("connected to {} {}", server.name, server.version);

    // 1. A long value goes into a variable once.
    let report = "Quarterly report. Revenue grew 12% while costs stayed flat. ".repeat(40);
    call(
        &client,
        "WriteVar",
        json!({"name": "report", "value": report, "desc": "the full report"}),
    )
    .await?;
    println!(
        "1. WriteVar report: {} characters stored",
        report.chars().count()
    );

    // 2. Any tool's arguments may name it; the server resolves the reference before the call.
    call(
        &client,
        "WriteState",
        json!({"path": "draft.opening", "value": "$VAR_REF{{report:0:60}}"}),
    )
    .await?;
    let opening = call(&client, "ReadState", json!({"path": "draft.opening"})).await?;
    println!(
        "2. WriteState with $VAR_REF{{{{report:0:60}}}} stored: {}",
        preview(&text(&opening), 120)
    );

    // 3. Find a skill for the task, then load its instructions.
    let found = call(
        &client,
        "SkillSearch",
        json!({"query": "pass a large value between tools", "maxResults": 3}),
    )
    .await?;
    let best = structured(&found)?["matched_skills"][0]["name"]
        .as_str()
        .context("SkillSearch matched no skill")?
        .to_owned();
    println!("3. SkillSearch best match: {best}");
    let loaded = call(&client, "SkillLoad", json!({"name": best})).await?;
    println!("   SkillLoad {best}: {}", preview(&text(&loaded), 100));

    // 4. A plan: steps linked by † references run in dependency order, in one call.
    let plan = json!({
        "input": {"title": "Q3 in one line"},
        "steps": [
            {"_id": "title", "_tool": "WriteState", "path": "article.title", "value": "†input.title"},
            {"_id": "body", "_tool": "WriteState", "path": "article.body", "value": "†var.report"},
            {"_id": "receipt", "_tool": "WriteVar", "name": "article_receipt",
             "value": {"title": "†steps.title", "body": "†steps.body"}}
        ]
    });
    let ran = call(&client, "RunPlan", plan).await?;
    let outcome = structured(&ran)?;
    println!("4. RunPlan ok={} order={}", outcome["ok"], outcome["order"]);
    if outcome["ok"] != json!(true) {
        bail!("the plan failed: {}", text(&ran));
    }

    // 5. A role-play chat: the calls in each AI reply (`@.SUB("角色.金币", 20);` …) update a
    //    state; every AI reply gets its own snapshot, to bind into the message's swipe.
    let chat: Value = serde_json::from_str(include_str!("sillytavern_chat.json"))
        .context("examples/sillytavern_chat.json is not JSON")?;
    let processed = call(&client, "SnapshotProcess", chat).await?;
    let outcome = structured(&processed)?;
    let bindings = outcome["bindings"].as_array().map_or(0, Vec::len);
    println!(
        "5. SnapshotProcess: {bindings} snapshots, errors {}, state {}",
        outcome["errors"], outcome["vs_stat_data"]
    );
    if bindings != 3 || outcome["errors"] != json!([]) {
        bail!(
            "the chat was not processed as expected: {}",
            text(&processed)
        );
    }
    let latest = call(
        &client,
        "SnapshotGet",
        json!({"id": outcome["latestSnapshotId"]}),
    )
    .await?;
    println!("   newest snapshot: {}", preview(&text(&latest), 80));

    let state = call(&client, "ReadState", json!({"path": "article.title"})).await?;
    println!("   state article.title = {}", preview(&text(&state), 80));
    client.cancel().await.context("closing the session")?;
    println!("session complete");
    Ok(())
}
