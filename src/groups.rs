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

/// Structured output from a serializable value.
fn structured(value: &impl serde::Serialize) -> Result<ToolOutput, ToolError> {
    serde_json::to_value(value)
        .map(ToolOutput::Structured)
        .map_err(|error| ToolError::Internal(format!("cannot serialize a result: {error}")))
}
