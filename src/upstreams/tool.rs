//! An upstream server's tools as ours: the listing becomes a [`ToolGroup`] of [`UpstreamTool`]s
//! (names namespaced, schemas kept but made portable, approval from the configuration or the
//! server's annotations), and a call becomes a `tools/call` to the server, with its progress
//! and its questions for the client passed on while it runs, and its result turned into a
//! [`ToolOutput`] for the executor, which then treats it as any tool's (truncation, caching,
//! `_outputPath`).

use std::fmt::Write as _;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock,
    ResourceContents, ServerResult, Tool as WireTool,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::{Map, Value};

use super::link::{InFlight, Link};
use super::names::namespaced;
use super::settings::{Limits, Upstream};
use crate::tools::{
    Annotations, Origin, Permission, Policy, Progress, Relay, Tool, ToolCall, ToolDefinition,
    ToolError, ToolGroup, ToolOutput, make_foreign_schema_portable,
};

/// The most characters of the server's `instructions` kept as the group's rule prompt.
const INSTRUCTIONS_LIMIT: usize = 4_000;

/// One tool of an upstream server.
pub(super) struct UpstreamTool {
    definition: ToolDefinition,
    link: Arc<Link>,
    limits: Limits,
}

/// The group for a listing of the server's tools; a tool whose input schema cannot be served is
/// left out, with the reason in the log.
pub(super) fn group(
    upstream: &Upstream,
    link: &Arc<Link>,
    listed: &[WireTool],
    instructions: Option<&str>,
) -> ToolGroup {
    let own_names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
    let names = namespaced(&upstream.name, &own_names);
    let tools = listed
        .iter()
        .zip(names)
        .filter_map(|(tool, name)| match definition(upstream, tool, &name) {
            Ok(definition) => Some(Arc::new(UpstreamTool {
                definition,
                link: Arc::clone(link),
                limits: upstream.limits,
            }) as Arc<dyn Tool>),
            Err(reason) => {
                tracing::warn!(upstream = %upstream.name, tool = %tool.name, "tool not served: {reason}");
                None
            }
        })
        .collect();
    let mut prompt = format!(
        "Tools `{}__*` are those of the MCP server `{}`, served through synapse-mcp.",
        upstream.name, upstream.name
    );
    if let Some(instructions) = instructions.filter(|text| !text.trim().is_empty()) {
        let kept: String = instructions.chars().take(INSTRUCTIONS_LIMIT).collect();
        write!(prompt, " Its instructions:\n\n{}", kept.trim_end()).ok();
    }
    ToolGroup {
        name: upstream.name.clone(),
        origin: Origin::Upstream(upstream.name.clone()),
        about: None,
        tools,
        rule_prompt: Some(prompt),
        rules: upstream.rules.clone(),
    }
}

/// Our definition of one listed tool, or why it cannot be served.
fn definition(upstream: &Upstream, tool: &WireTool, name: &str) -> Result<ToolDefinition, String> {
    let input =
        portable(&tool.input_schema).map_err(|problem| format!("its inputSchema {problem}"))?;
    let hints = tool.annotations.clone().unwrap_or_default();
    let read_only = hints.read_only_hint.unwrap_or(false);
    // Absent hints mean what MCP says they default to.
    let annotations = Annotations {
        read_only,
        destructive: !read_only && hints.destructive_hint.unwrap_or(true),
        idempotent: hints.idempotent_hint.unwrap_or(false),
        open_world: hints.open_world_hint.unwrap_or(true),
    };
    let execution = upstream.execution.unwrap_or(if read_only {
        Policy::Auto
    } else {
        Policy::AskOnce
    });
    let description = tool.description.as_deref().unwrap_or_default();
    let mut definition =
        ToolDefinition::with_input_schema(name, description, Arc::new(input), annotations)
            .with_permission(Permission {
                execution,
                result: upstream.result.unwrap_or(Policy::Auto),
            })
            .with_origin_name(&tool.name);
    definition.title = tool.title.clone().or(hints.title);
    definition.output_schema = match tool.output_schema.as_deref().map(portable) {
        None => None,
        Some(Ok(output)) => Some(Arc::new(output).into()),
        Some(Err(problem)) => {
            tracing::warn!(upstream = %upstream.name, tool = %tool.name, "served without its outputSchema, which {problem}");
            None
        }
    };
    Ok(definition)
}

/// The server's schema made portable, or what makes it unusable: the root of a tool schema must
/// be an object schema, and clients fetch no schema from elsewhere.
fn portable(schema: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut schema = schema.clone();
    make_foreign_schema_portable(&mut schema);
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("is not of `type: \"object\"`".to_owned());
    }
    if let Some(reference) = remote_reference(&Value::Object(schema.clone())) {
        return Err(format!(
            "refers to `{reference}`, outside the schema, which clients cannot fetch"
        ));
    }
    Ok(schema)
}

/// A `$ref` that points outside the schema, if there is one.
fn remote_reference(schema: &Value) -> Option<String> {
    match schema {
        Value::Object(object) => object.iter().find_map(|(key, value)| match value {
            Value::String(reference) if key == "$ref" && !reference.starts_with('#') => {
                Some(reference.clone())
            }
            _ => remote_reference(value),
        }),
        Value::Array(items) => items.iter().find_map(remote_reference),
        _ => None,
    }
}

impl Tool for UpstreamTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ToolCall {
                arguments,
                progress,
                relay,
                ..
            } = call;
            let Value::Object(arguments) = arguments else {
                return Err(ToolError::invalid(format!(
                    "the arguments of {} must be an object",
                    self.definition.name
                )));
            };
            let peer = self.link.peer().map_err(ToolError::Invalid)?;
            let own_name = self.definition.origin_name.clone().unwrap_or_default();
            let params = CallToolRequestParams::new(own_name).with_arguments(arguments);
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            let mut flight = self.link.begin(progress.is_some(), relay.is_some());
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await
                .map_err(|error| self.lost(&error))?;
            flight.sent(&peer, handle.id.clone(), handle.progress_token.clone());
            let answer = relaying(handle.await_response(), &mut flight, progress, relay);
            // Past the timeout, dropping the flight cancels the request on the server.
            let timeout = self.limits.call_timeout;
            let Ok(response) = tokio::time::timeout(timeout, answer).await else {
                return Err(ToolError::invalid(format!(
                    "the MCP server `{}` did not answer the call of `{}` within {} s \
                     (`call_timeout_seconds`); the call was cancelled on the server",
                    self.link.name,
                    self.definition.origin_name.as_deref().unwrap_or_default(),
                    timeout.as_secs()
                )));
            };
            flight.answered();
            match response.map_err(|error| self.lost(&error))? {
                ServerResult::CallToolResult(result) => output(result, &self.definition),
                _ => Err(ToolError::invalid(format!(
                    "the MCP server `{}` answered the call of `{}` with something other than a \
                     tool result (it may have asked for input the way of protocol 2026-07-28, \
                     which synapse-mcp does not pass on)",
                    self.link.name,
                    self.definition.origin_name.as_deref().unwrap_or_default()
                ))),
            }
        })
    }
}

impl UpstreamTool {
    /// The call's request could not be answered: the connection broke.
    fn lost(&self, error: &ServiceError) -> ToolError {
        if let ServiceError::McpError(error) = error {
            return ToolError::invalid(format!(
                "the MCP server `{}` answered the call of `{}` with an error: {}",
                self.link.name,
                self.definition.origin_name.as_deref().unwrap_or_default(),
                error.message
            ));
        }
        ToolError::invalid(format!(
            "the MCP server `{}` did not answer the call of `{}` ({error}); if it exited, \
             synapse-mcp restarts it: call again shortly",
            self.link.name,
            self.definition.origin_name.as_deref().unwrap_or_default()
        ))
    }
}

/// Waits for the answer, passing the server's progress and questions on to the call's client
/// meanwhile.
async fn relaying(
    response: impl Future<Output = Result<ServerResult, ServiceError>>,
    flight: &mut InFlight,
    progress: Option<&dyn Progress>,
    relay: Option<&dyn Relay>,
) -> Result<ServerResult, ServiceError> {
    let mut response = std::pin::pin!(response);
    loop {
        tokio::select! {
            biased;
            update = next_progress(flight.progress.as_deref()) => {
                if let Some(progress) = progress {
                    progress.report(update.progress, update.total, update.message).await;
                }
            }
            answer = &mut response => {
                // rmcp hands each notification to a task of its own, so progress the server
                // sent before its answer may still be on its way: let those tasks run, then
                // pass on what they delivered, before the answer.
                tokio::task::yield_now().await;
                if let Some(slot) = flight.progress.as_deref() {
                    if let (Some(update), Some(progress)) = (slot.take(), progress) {
                        progress.report(update.progress, update.total, update.message).await;
                    }
                    if slot.replaced() > 0 {
                        tracing::debug!(replaced = slot.replaced(), "progress updates of an upstream call were replaced by newer ones before the client read them");
                    }
                }
                return answer;
            }
            Some(question) = next(flight.questions.as_mut()) => {
                let answer = match relay {
                    Some(relay) => relay.relay(question.request).await,
                    None => continue,
                };
                // The server may have given up waiting; its request then has no one to answer.
                question.answer.send(answer).ok();
            }
        }
    }
}

/// The next progress update of a call that may not want them (then never).
async fn next_progress(
    slot: Option<&super::link::ProgressSlot>,
) -> rmcp::model::ProgressNotificationParam {
    match slot {
        Some(slot) => slot.next().await,
        None => std::future::pending().await,
    }
}

/// The next message of a receiver that may not exist (then never).
async fn next<T>(receiver: Option<&mut tokio::sync::mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// The server's result as a tool output: its structured content when the tool declares an
/// output schema, else its content as text; an error result is a tool error with its text.
fn output(result: CallToolResult, definition: &ToolDefinition) -> Result<ToolOutput, ToolError> {
    let text = content_text(&result.content);
    if result.is_error == Some(true) {
        let message = if text.is_empty() {
            result
                .structured_content
                .map(|value| value.to_string())
                .unwrap_or_default()
        } else {
            text
        };
        return Err(ToolError::Invalid(message));
    }
    match result.structured_content {
        Some(structured) if definition.output_schema.is_some() || text.is_empty() => {
            Ok(ToolOutput::Structured(structured))
        }
        _ => Ok(ToolOutput::Text(text)),
    }
}

/// The content blocks as text for the model: text as it is, embedded text resources with their
/// URI, and a line saying what each other block was (synapse-mcp passes text on, not media).
fn content_text(blocks: &[ContentBlock]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!(
                "[an image ({}, {} bytes of base64) is not shown: synapse-mcp passes text only]",
                image.mime_type,
                image.data.len()
            ),
            ContentBlock::Audio(audio) => format!(
                "[audio ({}, {} bytes of base64) is not played: synapse-mcp passes text only]",
                audio.mime_type,
                audio.data.len()
            ),
            ContentBlock::ResourceLink(resource) => {
                let mut line = format!("[resource `{}`: {}", resource.name, resource.uri);
                if let Some(description) = &resource.description {
                    write!(line, " — {description}").ok();
                }
                line.push(']');
                line
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}]\n{text}")
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => format!(
                    "[resource {uri} ({}, {} bytes of base64) is not shown: synapse-mcp passes \
                     text only]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                ),
                _ => format!("[resource {embedded:?} is not shown]"),
            },
            _ => "[content of a kind synapse-mcp does not know is not shown]".to_owned(),
        })
        .collect();
    parts.join("\n")
}
