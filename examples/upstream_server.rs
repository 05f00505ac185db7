//! A small MCP server over stdio (rmcp's server side) that synapse-mcp serves as an upstream in
//! its tests and its proxy benchmark. Its tools:
//!
//! - `echo {text}` returns the text; `big {size}` returns `size` characters of numbered lines;
//! - `slow {steps, delayMs}` reports progress after each step and, when cancelled, writes
//!   `cancelled slow` to the file named by `UPSTREAM_LOG`;
//! - `ask {question}` asks the user through elicitation; `sample {prompt}` asks the client's
//!   model through sampling;
//! - `grow` adds the tool `grown` and sends `notifications/tools/list_changed`;
//! - `pid` gives the server's process id; `structured` returns structured content of its
//!   output schema;
//! - `dotted.name`, a tool with a 70-character name, `loose` (an input schema with a `type`
//!   list and a `true` subschema) and `not-an-object` (an input schema of `type: "string"`,
//!   which synapse-mcp cannot serve) exercise the name mapping and the schema checks.
//!
//! On start it writes one line to stderr; when the file named by `UPSTREAM_BLOCK` exists, it
//! says so on stderr and exits with status 3 instead (a server that cannot start).
//!
//! ```sh
//! cargo run --example upstream_server     # then speak MCP on stdin
//! ```
//! With synapse-mcp, in its config file:
//! ```toml
//! [[upstream]]
//! name = "test"
//! command = "target/debug/examples/upstream_server"
//! ```
#![allow(
    clippy::print_stderr,
    reason = "the server's stderr is where synapse-mcp reads its log"
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

#[derive(Clone)]
struct UpstreamServer {
    /// Whether `grow` was called.
    grown: Arc<Mutex<bool>>,
}

fn object(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(object) => Arc::new(object),
        _ => Arc::new(Map::new()),
    }
}

fn tool(name: &str, description: &str, schema: Value, read_only: bool) -> Tool {
    Tool::new(name.to_owned(), description.to_owned(), object(schema))
        .with_annotations(ToolAnnotations::new().read_only(read_only))
}

fn text_argument(name: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string"}}, "required": [name]})
}

/// The 70-character name.
fn long_name() -> String {
    format!(
        "a_tool_with_a_name_far_longer_than_clients_accept_{}",
        "x".repeat(20)
    )
}

fn tools(grown: bool) -> Vec<Tool> {
    let mut tools = vec![
        tool("echo", "Returns `text`.", text_argument("text"), true),
        tool(
            "big",
            "Returns `size` characters of numbered lines.",
            json!({"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}, "required": ["size"]}),
            true,
        ),
        tool(
            "slow",
            "Reports progress for `steps` steps of `delayMs` each.",
            json!({"type": "object", "properties": {"steps": {"type": "integer"}, "delayMs": {"type": "integer"}}, "required": ["steps", "delayMs"]}),
            true,
        ),
        tool("ask", "Asks the user `question`.", text_argument("question"), false),
        tool("sample", "Asks the client's model `prompt`.", text_argument("prompt"), true),
        tool("grow", "Adds the tool `grown`.", json!({"type": "object"}), false),
        tool("pid", "Gives the server's process id.", json!({"type": "object"}), true),
        tool("structured", "Returns a count and items.", json!({"type": "object"}), true)
            .with_raw_output_schema(object(json!({
                "type": "object",
                "properties": {"count": {"type": "integer"}, "items": {"type": "array", "items": {"type": "string"}}},
                "required": ["count", "items"]
            }))),
        tool("dotted.name", "Has a dot in its name.", json!({"type": "object"}), true),
        tool(&long_name(), "Has a long name.", json!({"type": "object"}), true),
        tool(
            "loose",
            "Has a loose schema.",
            json!({"type": "object", "properties": {"value": {"type": ["string", "null"]}, "anything": true}}),
            true,
        ),
        tool("not-an-object", "Has a schema clients refuse.", json!({"type": "string"}), true),
    ];
    if grown {
        tools.push(tool(
            "grown",
            "Exists after `grow`.",
            json!({"type": "object"}),
            true,
        ));
    }
    tools
}

#[expect(
    clippy::unnecessary_wraps,
    reason = "every arm of call_tool answers a Result; this keeps them alike"
)]
fn text(text: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(text.into())]).into())
}

fn argument<'a>(arguments: &'a Map<String, Value>, name: &str) -> &'a Value {
    arguments.get(name).unwrap_or(&Value::Null)
}

impl UpstreamServer {
    async fn slow(
        arguments: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let steps = argument(arguments, "steps").as_u64().unwrap_or(1);
        let delay = argument(arguments, "delayMs").as_u64().unwrap_or(10);
        let token = context.meta.get_progress_token();
        for step in 1..=steps {
            tokio::select! {
                () = context.ct.cancelled() => {
                    if let Ok(path) = std::env::var("UPSTREAM_LOG") {
                        std::fs::write(path, "cancelled slow").ok();
                    }
                    return text("cancelled");
                }
                () = tokio::time::sleep(Duration::from_millis(delay)) => {}
            }
            if let Some(token) = &token {
                #[expect(clippy::cast_precision_loss, reason = "small step counts")]
                let params = ProgressNotificationParam::new(token.clone(), step as f64)
                    .with_total(steps as f64)
                    .with_message(format!("step {step}"));
                context.peer.notify_progress(params).await.ok();
            }
        }
        text(format!("{steps} steps done"))
    }

    async fn ask(
        arguments: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let question = argument(arguments, "question").as_str().unwrap_or("?");
        let schema = ElicitationSchema::builder()
            .required_string("answer")
            .build()
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question.to_owned(),
            requested_schema: schema,
        };
        match context.peer.create_elicitation(params).await {
            Ok(result) if result.action == ElicitationAction::Accept => {
                let answer = result
                    .content
                    .as_ref()
                    .and_then(|content| content.get("answer"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                text(format!("the user answered: {answer}"))
            }
            Ok(result) => text(format!("the user did not answer: {:?}", result.action)),
            Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "cannot ask: {error}"
            ))])
            .into()),
        }
    }

    #[expect(
        deprecated,
        reason = "sampling is deprecated by SEP-2577 but clients offer it"
    )]
    async fn sample(
        arguments: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let prompt = argument(arguments, "prompt").as_str().unwrap_or("?");
        let params = rmcp::model::CreateMessageRequestParams::new(
            vec![rmcp::model::SamplingMessage::user_text(prompt)],
            100,
        );
        match context.peer.create_message(params).await {
            Ok(result) => {
                let said: String = result
                    .message
                    .content
                    .iter()
                    .filter_map(|block| block.as_text().map(|text| text.text.clone()))
                    .collect();
                text(format!("the model said: {said}"))
            }
            Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "cannot sample: {error}"
            ))])
            .into()),
        }
    }
}

impl ServerHandler for UpstreamServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("upstream-test-server", "1.0.0"))
        .with_instructions("Test tools for synapse-mcp's upstream tests.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let grown = *self
            .grown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(ListToolsResult::with_all_items(tools(grown)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "echo" => text(argument(&arguments, "text").as_str().unwrap_or_default()),
            "big" => {
                let size = usize::try_from(argument(&arguments, "size").as_u64().unwrap_or(0))
                    .unwrap_or(0);
                let lines: String = (0..)
                    .map(|line| format!("line {line:05}\n"))
                    .take(size / 11 + 1)
                    .collect();
                text(lines.chars().take(size).collect::<String>())
            }
            "slow" => Self::slow(&arguments, &context).await,
            "ask" => Self::ask(&arguments, &context).await,
            "sample" => Self::sample(&arguments, &context).await,
            "grow" => {
                *self
                    .grown
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
                context.peer.notify_tool_list_changed().await.ok();
                text("grown")
            }
            "pid" => text(std::process::id().to_string()),
            "structured" => {
                let mut result =
                    CallToolResult::structured(json!({"count": 2, "items": ["a", "b"]}));
                result.content = vec![ContentBlock::text(r#"{"count":2,"items":["a","b"]}"#)];
                Ok(result.into())
            }
            "grown" | "dotted.name" | "loose" | "not-an-object" => {
                text(format!("{} ran", request.name))
            }
            name if name == long_name() => text("the long one ran"),
            name => Err(ErrorData::invalid_params(format!("no tool {name}"), None)),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    if let Ok(block) = std::env::var("UPSTREAM_BLOCK")
        && std::path::Path::new(&block).exists()
    {
        eprintln!("upstream_server: blocked by {block}");
        return std::process::ExitCode::from(3);
    }
    eprintln!("upstream_server ready (pid {})", std::process::id());
    let server = UpstreamServer {
        grown: Arc::default(),
    };
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(error) => {
            eprintln!("upstream_server: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if let Err(error) = running.waiting().await {
        eprintln!("upstream_server: {error}");
    }
    std::process::ExitCode::SUCCESS
}
