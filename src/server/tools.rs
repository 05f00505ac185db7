//! `tools/list` and `tools/call`: tool definitions to wire tools, and a call through the
//! executor with the right way to ask the user for this session.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, Tool as WireTool, ToolAnnotations};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use super::approval::{Elicitor, answers_from_responses, is_inline_session};
use super::errors;
use super::relay::ClientRelay;
use super::sampling::ClientSampler;
use super::view;
use crate::tools::{
    Asking, Audience, CallRequest, Executor, OUTPUT_LIMIT_ARGUMENT, OUTPUT_PATH_ARGUMENT, Progress,
    Relay, Sampler, Tool, Truncation,
};

/// Every enabled tool `audience` may reach, as clients see it.
pub(super) fn list(executor: &Executor, audience: Audience) -> Vec<WireTool> {
    executor
        .tools()
        .for_audience(audience)
        .enabled_tools()
        .iter()
        .map(|tool| wire_tool(tool.as_ref()))
        .collect()
}

/// A tool's wire definition. Tools whose output the executor may truncate also advertise the
/// `_outputLimit` meta-argument, so the model knows it can ask for more.
pub(super) fn wire_tool(tool: &dyn Tool) -> WireTool {
    let definition = tool.definition();
    let mut schema = definition.input_schema.as_ref().clone();
    // JSON Schema 2020-12 is what MCP assumes when a schema names no dialect.
    schema.remove("$schema");
    // A tool without parameters still takes the meta-arguments: it gets a `properties` to list
    // them in (its schema forbids other members, so clients would refuse them otherwise).
    if schema.get("type") == Some(&Value::from("object")) && !schema.contains_key("properties") {
        schema.insert("properties".to_owned(), json!({}));
    }
    if definition.truncation != Truncation::Never
        && let Some(Value::Object(properties)) = schema.get_mut("properties")
    {
        properties.insert(
            OUTPUT_LIMIT_ARGUMENT.to_owned(),
            json!({"type": "integer", "description": "Result characters to show (-1: all)."}),
        );
    }
    // Every tool offers `_outputPath`: the executor honours it on every call, and a schema
    // that hides an argument the server accepts misleads the model and the client's validator.
    // Both meta-arguments are explained once, in the instructions.
    if let Some(Value::Object(properties)) = schema.get_mut("properties")
        && !properties.contains_key(OUTPUT_PATH_ARGUMENT)
    {
        properties.insert(
            OUTPUT_PATH_ARGUMENT.to_owned(),
            json!({
                "type": "string",
                "pattern": "^†",
                "description": "Store the result at †state.<path> or †var.<name>."
            }),
        );
    }
    let annotations = ToolAnnotations::new()
        .read_only(definition.annotations.read_only)
        .destructive(definition.annotations.destructive)
        .idempotent(definition.annotations.idempotent)
        .open_world(definition.annotations.open_world);
    let mut wire = WireTool::new(
        definition.name.clone(),
        definition.description.clone(),
        std::sync::Arc::new(schema),
    )
    .with_annotations(annotations);
    if let Some(title) = &definition.title {
        wire = wire.with_title(title.clone());
    }
    if let Some(output) = &definition.output_schema {
        wire = wire.with_raw_output_schema(std::sync::Arc::clone(output));
    }
    wire.meta = view::tool_meta(definition);
    wire
}

/// Runs one `tools/call` through the executor, never letting a panic go unanswered.
pub(super) async fn call(
    executor: &Executor,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    // Cloned by rmcp on each read: read once.
    let capabilities = context.client_capabilities();
    let can_elicit = capabilities
        .as_ref()
        .is_some_and(|capabilities| capabilities.elicitation.is_some());
    let answers: HashMap<_, _> = answers_from_responses(request.input_responses.as_ref());
    let elicitor = Elicitor::new(context.peer.clone());
    let asking = match (is_inline_session(&context), can_elicit) {
        (true, true) => Asking::Deferred(&answers),
        (false, true) => Asking::Direct(&elicitor),
        (_, false) => Asking::Unavailable,
    };
    let progress = context
        .meta
        .get_progress_token()
        .map(|token| ProgressReporter {
            peer: context.peer.clone(),
            token,
        });
    let sampler = ClientSampler::for_request(&context);
    let relay = ClientRelay::for_request(&context);
    let name = request.name.to_string();
    let call = CallRequest {
        tool: &name,
        arguments: request.arguments,
        asking,
        resume: request.request_state,
        cancellation: context.ct.clone(),
        plan: None,
        progress: progress.as_ref().map(|reporter| reporter as &dyn Progress),
        sampler: sampler.as_ref().map(|sampler| sampler as &dyn Sampler),
        relay: relay.as_ref().map(|relay| relay as &dyn Relay),
        approved: None,
        audience: view::audience(capabilities.as_ref()),
    };
    // Boxed: awaited in place, the pipeline's state (kilobytes) was part of every future up to
    // the handler's, each holding it again beside its own, and was copied at every level (8,300
    // instructions of a 54,000-instruction ReadVar); boxed, each holds a pointer.
    let running = Box::pin(AssertUnwindSafe(executor.execute(call)).catch_unwind());
    // On a workspace stored on a database server, once its shared sequence read is answered
    // (`workspace/fence.rs`).
    let outcome = match executor.workspace().fence() {
        None => running.await,
        Some(fence) => fence.around(running).await,
    };
    match outcome {
        Ok(outcome) => errors::tool_response(&name, outcome),
        Err(panic) => Err(errors::panicked(&name, panic.as_ref())),
    }
}

/// Sends `notifications/progress` for the token the client gave.
struct ProgressReporter {
    peer: rmcp::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
}

impl Progress for ProgressReporter {
    fn report(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut params =
                rmcp::model::ProgressNotificationParam::new(self.token.clone(), progress);
            params.total = total;
            params.message = message;
            if let Err(error) = self.peer.notify_progress(params).await {
                tracing::debug!(%error, "cannot send progress");
            }
        })
    }
}
