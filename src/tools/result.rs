//! What a call produced ([`ExecuteResult`]) and what it ends with ([`Outcome`]): a result, or
//! a question that has to reach the user first.

use serde_json::Value;

use super::{ApprovalQuestion, ToolError, ToolOutput};

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecuteStatus {
    Success,
    Error,
    ExecutionRejected,
    ResultRejected,
    NotFound,
}

/// What a call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecuteResult {
    pub status: ExecuteStatus,
    pub data: Option<ToolOutput>,
    pub error: Option<ToolError>,
    pub formatted_text: Option<String>,
    pub final_text: String,
    pub cache_var_result: Option<String>,
    /// Whether the tool declares an output schema, so `data` is sent as structured content.
    pub structured: bool,
    /// The structured content cut to the output limit, sent in place of `data` (which stays
    /// whole for `_outputPath`); `None` when `data` fits.
    pub structured_cut: Option<Value>,
    /// Paths the result was written to (`_outputPath`).
    pub written: Vec<String>,
    /// Which of the tool's outcomes the result is (an index into them), which chooses the
    /// `_outputPath` branch it goes to.
    pub outcome: usize,
}

impl ExecuteResult {
    pub(crate) fn failed(status: ExecuteStatus, error: ToolError) -> Self {
        Self {
            status,
            final_text: error.to_string(),
            error: Some(error),
            data: None,
            formatted_text: None,
            cache_var_result: None,
            structured: false,
            structured_cut: None,
            written: Vec::new(),
            outcome: 0,
        }
    }

    pub(super) fn rejected(status: ExecuteStatus, tool: &str, reason: Option<&str>) -> Self {
        let what = match status {
            ExecuteStatus::ResultRejected => "the result of this call",
            _ => "this call",
        };
        let final_text = match reason {
            Some(reason) => format!("The user rejected {what} of `{tool}`: {reason}"),
            None => format!("The user rejected {what} of `{tool}` without giving a reason"),
        };
        Self::failed(status, ToolError::Invalid(final_text))
    }
}

/// A question that has to reach the user before the call can go on (MRTR).
#[derive(Debug, Clone, PartialEq)]
pub struct PendingInput {
    pub question: ApprovalQuestion,
    /// The `requestState` the client echoes when it retries.
    pub state: String,
}

/// What a call ends with.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "made once per call and moved straight to the wire; boxing would add an allocation per call"
)]
pub enum Outcome {
    Finished(ExecuteResult),
    InputRequired(PendingInput),
}
