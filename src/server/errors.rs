//! The one place where domain results and errors become wire results or JSON-RPC errors
//! (the error contract of `docs/executor.md`):
//! - a mistake the model can fix, or a rejection → a tool result with `isError: true`;
//! - an unroutable request (unknown tool, URI, prompt) → `-32602` / `-32002`;
//! - a bug or an I/O failure → `-32603`, with the details in the log.

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, InputRequiredResult};
use serde_json::json;

use super::approval::input_requests;
use crate::tools::{ExecuteResult, ExecuteStatus, Outcome, ToolError, ToolOutput};

/// The answer to a `tools/call`.
pub(super) fn tool_response(tool: &str, outcome: Outcome) -> Result<CallToolResponse, ErrorData> {
    match outcome {
        Outcome::Finished(result) => finished(tool, result).map(Into::into),
        Outcome::InputRequired(pending) => {
            let requests = input_requests(&pending.question).ok_or_else(|| {
                ErrorData::internal_error("cannot build the approval request", None)
            })?;
            Ok(InputRequiredResult::new(Some(requests), Some(pending.state)).into())
        }
    }
}

fn finished(tool: &str, result: ExecuteResult) -> Result<CallToolResult, ErrorData> {
    match (result.status, &result.error) {
        (ExecuteStatus::Success, _) => match (result.structured, result.data) {
            (true, Some(ToolOutput::Structured(value))) => {
                let mut wire = CallToolResult::success(vec![ContentBlock::text(result.final_text)]);
                wire.structured_content = Some(result.structured_cut.unwrap_or(value));
                Ok(wire)
            }
            // A failure an `_outputPath` `||` branch caught, of a tool that declares an output
            // schema: the call went on (a plan continues), but there is no result of that shape,
            // and clients reject a success without one. The text says the error was stored.
            (true, _) => Ok(CallToolResult::error(vec![ContentBlock::text(
                result.final_text,
            )])),
            (false, _) => Ok(CallToolResult::success(vec![ContentBlock::text(
                result.final_text,
            )])),
        },
        (ExecuteStatus::NotFound, _) => Err(ErrorData::invalid_params(
            result.final_text,
            Some(json!({ "tool": tool })),
        )),
        (ExecuteStatus::Error, Some(ToolError::Internal(message))) => {
            tracing::error!(%tool, %message, "tool failed");
            Err(ErrorData::internal_error(
                format!("`{tool}` failed: {message}"),
                None,
            ))
        }
        (
            ExecuteStatus::Error | ExecuteStatus::ExecutionRejected | ExecuteStatus::ResultRejected,
            _,
        ) => Ok(CallToolResult::error(vec![ContentBlock::text(
            result.final_text,
        )])),
    }
}

/// A panic that escaped the executor: logged, and answered so the client does not wait.
pub(super) fn panicked(tool: &str, panic: &(dyn std::any::Any + Send)) -> ErrorData {
    let message = crate::tools::panic_message(panic);
    tracing::error!(%tool, %message, "tools/call panicked");
    ErrorData::internal_error(format!("`{tool}` failed unexpectedly: {message}"), None)
}

/// An unknown resource URI.
pub(super) fn resource_not_found(uri: &str, hint: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!("no resource at `{uri}`: {hint}"),
        Some(json!({ "uri": uri })),
    )
}

/// An unknown prompt.
pub(super) fn prompt_not_found(name: &str, known: &[&str]) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "unknown prompt `{name}`; known prompts: {}",
            known.join(", ")
        ),
        Some(json!({ "prompt": name })),
    )
}

/// A prompt argument that names no skill (`skill {name}`): invalid params naming it and the
/// closest names; a failure to read the library is internal (logged).
pub(super) fn prompt_skill_error(prompt: &str, error: crate::skills::Error) -> ErrorData {
    match ToolError::from(error) {
        ToolError::Invalid(message) => {
            ErrorData::invalid_params(format!("prompt `{prompt}`: {message}"), None)
        }
        ToolError::Internal(message) => {
            tracing::error!(%prompt, error = %message, "cannot serve a skill prompt");
            ErrorData::internal_error(format!("cannot serve prompt `{prompt}`"), None)
        }
    }
}

/// The workspace a request names could not be opened (the store failed): logged, and reported
/// as an internal error.
pub(super) fn app_failed(error: &crate::app::Error) -> ErrorData {
    tracing::error!(%error, "cannot open the workspace");
    ErrorData::internal_error(error.to_string(), None)
}

/// The store failed while serving a resource: logged, and reported as an internal error.
pub(super) fn workspace_failed(error: &crate::workspace::Error) -> ErrorData {
    tracing::error!(%error, "workspace failed");
    ErrorData::internal_error(error.to_string(), None)
}

/// A snapshot request outside a tool call (a prompt or a resource) that failed: a request
/// mistake becomes invalid params, a store failure an internal error (logged). Which is which
/// is `tools/errors.rs`'s decision, the same a tool call's result follows.
pub(super) fn snapshots_failed(error: crate::snapshots::Error) -> ErrorData {
    match ToolError::from(error) {
        ToolError::Invalid(message) => ErrorData::invalid_params(message, None),
        ToolError::Internal(message) => {
            tracing::error!(error = %message, "snapshot store failed");
            ErrorData::internal_error(message, None)
        }
    }
}

/// A `snapshot://` resource that cannot be served: the caller's mistake (by `tools/errors.rs`)
/// is an unknown resource, said with `hint` or else the domain's message; a store failure is
/// internal (logged).
pub(super) fn snapshot_resource_error(
    uri: &str,
    error: crate::snapshots::Error,
    hint: Option<&str>,
) -> ErrorData {
    match ToolError::from(error) {
        ToolError::Invalid(message) => resource_not_found(uri, hint.unwrap_or(&message)),
        ToolError::Internal(message) => {
            tracing::error!(%uri, error = %message, "snapshot store failed");
            ErrorData::internal_error(message, None)
        }
    }
}

/// A skill resource that cannot be served: unknown skill, file or refused path (the client can
/// fix the URI), or an I/O failure (logged). Which is which is `tools/errors.rs`'s decision.
pub(super) fn skill_resource_error(uri: &str, error: crate::skills::Error) -> ErrorData {
    match ToolError::from(error) {
        ToolError::Invalid(message) => resource_not_found(uri, &message),
        ToolError::Internal(message) => {
            tracing::error!(%uri, error = %message, "cannot serve a skill file");
            ErrorData::internal_error(format!("cannot read `{uri}`"), None)
        }
    }
}

/// A `skills/get` or `resources/directory/read` URI that names no served skill or folder.
pub(super) fn unknown_skill_uri(uri: &str, hint: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("no skill at `{uri}`: {hint}"),
        Some(json!({ "uri": uri })),
    )
}

/// A pagination cursor this server did not hand out.
pub(super) fn bad_cursor(cursor: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("invalid cursor `{cursor}`: pass the nextCursor of the previous page"),
        None,
    )
}
