//! The tool groups synapse-mcp offers. Each tool is a thin adapter: decode the arguments, call
//! the domain module, shape the answer. The executor in `tools` does everything around it.

pub mod plans;
pub mod scripts;
pub mod skills;
pub mod snapshots;
pub mod vars;

use futures::future::BoxFuture;

use crate::tools::{ToolError, ToolOutput};

/// A finished future, for tools whose work is synchronous.
fn ready<'a>(
    result: Result<ToolOutput, ToolError>,
) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
    Box::pin(std::future::ready(result))
}

/// Runs synchronous work that may take long (a rescan of every skill root, a whole chat) on
/// tokio's blocking pool: the server's runtime is single-threaded (`main.rs` says why), and
/// a long call on it would hold up every other request of the session.
fn off_thread<'a>(
    work: impl FnOnce() -> Result<ToolOutput, ToolError> + Send + 'static,
) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
    Box::pin(async move {
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|error| ToolError::Internal(format!("the tool's task failed: {error}")))?
    })
}

/// Structured output from a serializable value.
fn structured(value: &impl serde::Serialize) -> Result<ToolOutput, ToolError> {
    serde_json::to_value(value)
        .map(ToolOutput::Structured)
        .map_err(|error| ToolError::Internal(format!("cannot serialize a result: {error}")))
}
