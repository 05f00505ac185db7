//! The floor workflow of a role-play frontend, with rmcp's own client over the server's stdio,
//! on `examples/sillytavern_chat.json`:
//!
//! 1. process the chat: one snapshot per AI reply, each bound into its swipe (`SnapshotProcess`);
//! 2. list the floors, with what each reply changed (`SnapshotList`);
//! 3. jump to floor 2 and read its state (`SnapshotList {messageIndex}`, `SnapshotGet`);
//! 4. regenerate floor 2 (the user picks its other swipe) and recompute every floor from there
//!    on in one call (`SnapshotReprocess`), writing the new ids back and clearing the old ones;
//! 5. see what the regeneration changed at the newest floor, against the old newest floor kept
//!    as a global snapshot (`SnapshotGlobalSave`, `SnapshotDiff`).
//!
//! ```sh
//! cargo run --example floor_walkthrough
//! cargo run --example floor_walkthrough -- --server target/release/synapse-mcp
//! ```
//! The server runs with `--store memory`. `SnapshotReprocess` deletes the old snapshots, so the
//! server asks the user first: this client answers its approval form with "yes, from now on".
#![allow(
    clippy::print_stdout,
    reason = "an example shows its session on stdout"
)]

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorData, Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

/// A client that approves what the server asks it to.
#[derive(Clone)]
struct Approving;

impl ClientHandler for Approving {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("floor-walkthrough", "1.0.0"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        println!("   (the server asks before deleting snapshots: approved from now on)");
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"approve": true, "remember": true})))
    }
}

type Client = RunningService<RoleClient, Approving>;

/// The server binary: `--server PATH`, or the package's own, built now by the running cargo.
fn server_binary() -> anyhow::Result<PathBuf> {
    let mut arguments = std::env::args().skip(1);
    match (arguments.next().as_deref(), arguments.next()) {
        (Some("--server"), Some(path)) => return Ok(path.into()),
        (None, _) => {}
        _ => bail!("the only option is --server PATH"),
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
    let examples = std::env::current_exe()?;
    let profile = examples
        .parent()
        .and_then(std::path::Path::parent)
        .context("no target folder above examples/")?;
    Ok(profile.join("synapse-mcp"))
}

/// Calls a tool and returns its structured result; a tool error ends the walk with its text.
async fn call(client: &Client, tool: &str, arguments: Value) -> anyhow::Result<Value> {
    let Value::Object(arguments) = arguments else {
        bail!("the arguments of {tool} must be a JSON object");
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .with_context(|| format!("{tool} failed at the protocol level"))?;
    if result.is_error == Some(true) {
        let text: String = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
            .collect();
        bail!("{tool} returned a tool error: {text}");
    }
    result
        .structured_content
        .with_context(|| format!("{tool} returned no structured content"))
}

/// Writes new bindings into their swipes and clears the cleared ones, as a frontend does.
fn write_back(messages: &mut [Value], result: &Value) {
    let place = |binding: &Value| {
        let index = binding["messageIndex"].as_u64().unwrap_or(0);
        let swipe = binding["swipeId"].as_u64().unwrap_or(0);
        (
            usize::try_from(index).unwrap_or(0),
            usize::try_from(swipe).unwrap_or(0),
        )
    };
    for binding in result["cleared"].as_array().into_iter().flatten() {
        let (index, swipe) = place(binding);
        if let Some(info) = messages[index]["swipes_info"][swipe].as_object_mut() {
            info.remove("st_var_system_snapshot_id");
        }
    }
    for binding in result["bindings"].as_array().into_iter().flatten() {
        let (index, swipe) = place(binding);
        messages[index]["swipes_info"][swipe]["st_var_system_snapshot_id"] =
            binding["snapshotId"].clone();
    }
}

#[tokio::main]
#[expect(
    clippy::too_many_lines,
    reason = "a walkthrough read top to bottom; the 80-line limit is for src/"
)]
async fn main() -> anyhow::Result<()> {
    let binary = server_binary()?;
    let mut command = Command::new(&binary);
    command.args(["--store", "memory", "--log-level", "warn"]);
    // The default groups, and the chat snapshot tools this walkthrough is about.
    command.args(["--groups", "default,snapshots"]);
    let transport = TokioChildProcess::new(command)
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let client = Approving
        .serve(transport)
        .await
        .context("initialize failed")?;

    // 1. The chat, processed and bound.
    let mut chat: Value = serde_json::from_str(include_str!("sillytavern_chat.json"))
        .context("examples/sillytavern_chat.json is not JSON")?;
    let chat_file = chat["chatFile"].clone();
    let processed = call(&client, "SnapshotProcess", chat.clone()).await?;
    let messages = chat["messages"]
        .as_array_mut()
        .context("the chat has no messages")?;
    write_back(messages, &processed);
    println!(
        "1. SnapshotProcess: {} floors bound, state {}",
        processed["bindings"].as_array().map_or(0, Vec::len),
        processed["vs_stat_data"]
    );

    // 2. The floors, with what each reply changed.
    let listed = call(&client, "SnapshotList", json!({"chatFile": chat_file})).await?;
    println!("2. SnapshotList:");
    for floor in listed["floors"].as_array().into_iter().flatten() {
        println!(
            "   floor {} swipe {}: {}",
            floor["messageIndex"], floor["swipeId"], floor["summary"]
        );
    }

    // 3. Jump to floor 2.
    let jumped = call(
        &client,
        "SnapshotList",
        json!({"chatFile": chat_file, "messageIndex": 2}),
    )
    .await?;
    let floor_two = jumped["floors"][0]["snapshotId"].clone();
    let state = call(&client, "SnapshotGet", json!({"id": floor_two})).await?;
    println!(
        "3. floor 2 (swipe {}): 金币 {}, 背包 {}",
        jumped["floors"][0]["swipeId"],
        state["snapshot"]["角色"]["金币"],
        state["snapshot"]["背包"]
    );
    // Reprocessing deletes the old floors: keep the newest one as a global snapshot.
    call(
        &client,
        "SnapshotGlobalSave",
        json!({"label": "before-regeneration", "description": "the newest floor before floor 2 was regenerated", "from": processed["latestSnapshotId"]}),
    )
    .await?;

    // 4. The user regenerates floor 2 (its other swipe), and everything from it is recomputed.
    messages[2]["swipe_id"] = json!(0);
    let reprocessed = call(
        &client,
        "SnapshotReprocess",
        json!({"chatFile": chat_file, "fromIndex": 2, "messages": messages, "characterId": chat["characterId"]}),
    )
    .await?;
    let messages = chat["messages"]
        .as_array_mut()
        .context("the chat has no messages")?;
    write_back(messages, &reprocessed);
    println!(
        "4. SnapshotReprocess from floor 2: {} new floors, {} cleared, {} old snapshots deleted, state {}",
        reprocessed["bindings"].as_array().map_or(0, Vec::len),
        reprocessed["cleared"].as_array().map_or(0, Vec::len),
        reprocessed["deleted"],
        reprocessed["vs_stat_data"]
    );

    // 5. What the regeneration changed at the newest floor, as a JSON Patch.
    let listed = call(&client, "SnapshotList", json!({"chatFile": chat_file})).await?;
    let newest = listed["floors"]
        .as_array()
        .and_then(|floors| floors.last())
        .map(|floor| floor["snapshotId"].clone())
        .context("no floors after reprocessing")?;
    let diff = call(
        &client,
        "SnapshotDiff",
        json!({"from": "before-regeneration", "to": newest}),
    )
    .await?;
    println!(
        "5. SnapshotDiff, the newest floor before → after: {}",
        diff["patch"]
    );
    client.cancel().await.context("closing the session")?;
    println!("walkthrough complete");
    Ok(())
}
