//! A hostile MCP server over stdio, for the tests that bound what an upstream may cost
//! synapse-mcp. It speaks raw JSON-RPC lines, answers `initialize` and `tools/list` (one tool,
//! `act`), and then does what its first argument says:
//!
//! - `ping-flood`: writes `ping` requests as fast as it can and never reads again;
//! - `huge BYTES`: answers `act` with a text of BYTES characters;
//! - `error CHARS`: answers `act` with an `isError` result of CHARS characters;
//! - `hang`: never answers `act`;
//! - `progress COUNT`: sends COUNT progress notifications for `act`, then answers it;
//! - `stderr BYTES`: writes BYTES bytes on stderr without a newline, then exits.
//!
//! ```sh
//! cargo run --example hostile_upstream -- ping-flood
//! ```
#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "stdout is this server's protocol, stderr its log"
)]

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn send(out: &mut impl Write, message: &Value) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

fn answer(out: &mut impl Write, id: &Value, result: &Value) -> std::io::Result<()> {
    send(out, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn main() -> std::io::Result<()> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let mode = arguments.first().map_or("hang", String::as_str);
    let size: usize = arguments
        .get(1)
        .and_then(|size| size.parse().ok())
        .unwrap_or(0);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let request: Value = serde_json::from_str(&line?).unwrap_or_default();
        let id = request["id"].clone();
        match request["method"].as_str().unwrap_or_default() {
            "initialize" => answer(
                &mut out,
                &id,
                &json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "1"}}),
            )?,
            "tools/list" => {
                let tool = json!({"name": "act", "description": "Acts.",
                    "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
                answer(&mut out, &id, &json!({"tools": [tool]}))?;
                if mode == "ping-flood" {
                    for number in 0u64.. {
                        let ping =
                            json!({"jsonrpc": "2.0", "id": format!("p{number}"), "method": "ping"});
                        send(&mut out, &ping)?;
                    }
                }
            }
            "tools/call" => match mode {
                "huge" => answer(
                    &mut out,
                    &id,
                    &json!({"content": [{"type": "text", "text": "h".repeat(size)}]}),
                )?,
                "error" => answer(
                    &mut out,
                    &id,
                    &json!({"content": [{"type": "text", "text": "e".repeat(size)}], "isError": true}),
                )?,
                "progress" => {
                    // As fast as a pipe takes it: one line, written again and again.
                    let token = request["params"]["_meta"]["progressToken"].clone();
                    let mut line = serde_json::to_vec(&json!({"jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": 1, "total": size}}))?;
                    line.push(b'\n');
                    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut out);
                    for _ in 0..size {
                        buffered.write_all(&line)?;
                    }
                    buffered.flush()?;
                    drop(buffered);
                    answer(
                        &mut out,
                        &id,
                        &json!({"content": [{"type": "text", "text": "done"}]}),
                    )?;
                }
                "stderr" => {
                    let mut err = std::io::stderr().lock();
                    let chunk = vec![b'w'; 64 * 1024];
                    let mut left = size;
                    while left > 0 {
                        let take = left.min(chunk.len());
                        err.write_all(&chunk[..take])?;
                        left -= take;
                    }
                    err.flush()?;
                    std::process::exit(4);
                }
                _ => {}
            },
            _ => {}
        }
    }
    Ok(())
}
