//! The tool executor (`docs/executor.md`): what a tool is, how tools are grouped, and the pipeline every
//! call goes through.
//!
//! A [`Tool`] is a [`ToolDefinition`] and an `execute` function. The definition is data: what
//! clients see (name, description for the model, input and output schemas, annotations) and
//! how the executor treats the calls (default permission, [`Caching`], [`Truncation`],
//! [`Daggers`], always listed or not). Hooks remain only for what a tool does with code of its
//! own: [`Tool::consent`] and [`Tool::format_for_llm`]. Tools come in [`ToolGroup`]s
//! that carry a rule prompt for the model and declared skill rules.
//!
//! Domain errors become [`ToolError`]s in one place, `tools/errors.rs`: a caller's mistake is
//! [`ToolError::Invalid`], a store or I/O failure [`ToolError::Internal`].
//!
//! The [`Executor`] runs the pipeline for every call; the MCP adapter in `server` only
//! translates its [`Outcome`] to the wire. Nothing here knows JSON-RPC.

mod approval;
mod decode;
mod definition;
mod errors;
mod executor;
mod output_path;
mod registry;
mod result;
mod schema;
mod scope;
mod switch;
mod truncate;
mod typed;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::rules::SkillRule;
use crate::workspace::Workspace;

pub use approval::{
    Answer, ApprovalQuestion, Approved, Asked, Asker, Asking, Fallback, Permission, PlannedCall,
    Policy, Stage, plan_question,
};
pub use decode::parse_arguments;
pub use definition::{
    Annotations, Audience, Caching, Daggers, Outcomes, ToolDefinition, Truncation, Visibility,
    WORKSPACE_VIEW, Writes,
};
pub use executor::{CallRequest, Caller, Executor, ExecutorSettings, ToolOverride, panic_message};
pub use output_path::{
    OUTPUT_PATH_ARGUMENT, OutputPath, Target as OutputTarget, pinned as pinned_output_path,
};
pub use registry::{GroupOverview, GroupState, Held, Registry, RegistryError, ToolOverview, View};
pub use result::{ExecuteResult, ExecuteStatus, Outcome, PendingInput};
pub use schema::{Schema, input_schema, make_foreign_schema_portable, output_schema};
pub use scope::{PlanScope, ReferenceContext};
pub use switch::{Switch, Switched};
pub use truncate::OUTPUT_LIMIT_ARGUMENT;
pub(crate) use typed::declare;
pub use typed::{
    Answered, Context, Declaration, Reply, Runs, Steps, Text, Typed, TypedTool, structured, typed,
};

/// Why a group could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("cannot store the rules of group `{group}`: {source}")]
    Rules {
        group: String,
        source: crate::workspace::Error,
    },
}
pub use crate::text::{Framed, truncate_content};

/// What a tool returns: text for the model, structured data (formatted as compact JSON unless
/// the tool formats it itself), or a value framed by lines for the model's reading only.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    Text(String),
    Structured(Value),
    Framed(Framed),
}

impl ToolOutput {
    /// The result as data: what `_outputPath` writes and `†steps` hands on. Text is a string,
    /// structured content its value, a framed value without its frame.
    pub fn value(&self) -> Value {
        self.clone().into_value()
    }

    /// [`ToolOutput::value`], taking the output.
    pub fn into_value(self) -> Value {
        match self {
            Self::Text(text) => Value::String(text),
            Self::Structured(value) => value,
            Self::Framed(framed) => framed.value(),
        }
    }
}

/// Why a tool failed. `Invalid` is a mistake the model can fix by calling again; `Internal` is a
/// bug or an I/O failure, reported to the client as a protocol error with details in the log.
/// Domain errors convert with `?` (`tools/errors.rs` decides which is which).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    Invalid(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl ToolError {
    pub fn invalid(message: impl std::fmt::Display) -> Self {
        Self::Invalid(message.to_string())
    }

    /// The error with its message cut to `limit` characters (`None`: whole): a tool's error may
    /// carry another program's text (an upstream server's, a script's, a user function's).
    #[must_use]
    pub fn bounded(self, limit: Option<usize>) -> Self {
        let Some(limit) = limit else {
            return self;
        };
        match self {
            Self::Invalid(message) => Self::Invalid(crate::text::bounded(message, limit)),
            Self::Internal(message) => Self::Internal(crate::text::bounded(message, limit)),
        }
    }
}

/// What a running tool may use: its (resolved) arguments, the workspace and a cancellation token.
pub struct ToolCall<'a> {
    pub arguments: Value,
    pub workspace: &'a Arc<Workspace>,
    pub cancellation: CancellationToken,
    /// The output limit in force for this call (`None`: no truncation). Tools that page their
    /// own output (`ReadVar`) use it as their default page size.
    pub output_limit: Option<usize>,
    /// The executor, for tools that run other tools (`RunPlan`).
    pub executor: &'a Executor,
    /// How to ask the user, when the session can be asked while the call runs.
    pub asker: Option<&'a dyn Asker>,
    /// Where to report progress, when the client asked for it.
    pub progress: Option<&'a dyn Progress>,
    /// The client's model, when the client declared sampling and this session may ask it.
    pub sampler: Option<&'a dyn Sampler>,
    /// Where questions of another MCP server this call reaches go (an upstream's elicitation
    /// and sampling requests), when the client can answer them while the call runs.
    pub relay: Option<&'a dyn Relay>,
}

/// Receives progress of a long-running tool (`notifications/progress`): how far it is, of how
/// much when it knows, and what it is doing.
pub trait Progress: Send + Sync {
    fn report(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> BoxFuture<'_, ()>;
}

/// A request another MCP server (an upstream) sends while a call of one of its tools runs, for
/// the client that made the call: a question for the user or for the client's model. The
/// parameters and the answer are MCP's own, as JSON; the server adapter sends them on.
#[derive(Debug, Clone, PartialEq)]
pub enum Relayed {
    /// `elicitation/create`: a form (or a link) for the user.
    Elicitation(Value),
    /// `sampling/createMessage`: a question for the client's model.
    Sampling(Value),
}

/// Why a relayed request got no answer: the client cannot be asked this, or it failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RelayError(pub String);

/// Passes an upstream's requests on to the client of the call, and its answers back.
pub trait Relay: Send + Sync {
    fn relay(&self, request: Relayed) -> BoxFuture<'_, Result<Value, RelayError>>;
}

/// One question for the client's model: a system prompt and a user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingRequest {
    pub system: String,
    pub message: String,
    pub max_tokens: u32,
}

/// What the client's model answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sampled {
    pub text: String,
    /// The model the client says answered.
    pub model: String,
}

/// Why the client's model gave no answer (the client refused, failed or timed out).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SamplingError(pub String);

/// Asks the client's model (MCP sampling). Tools use it only as an optional extra: every
/// caller has a local answer that stands when sampling fails.
pub trait Sampler: Send + Sync {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<Sampled, SamplingError>>;
}

/// The client's model, asked through MCP sampling.
impl crate::skills::find::Model for &dyn Sampler {
    fn ask<'a>(
        &'a self,
        system: &'a str,
        message: String,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<crate::skills::find::Answer, String>> {
        Box::pin(async move {
            let system = system.to_owned();
            let request = SamplingRequest {
                system,
                message,
                max_tokens,
            };
            let sampled = self.sample(&request).await.map_err(|error| error.0)?;
            Ok(crate::skills::find::Answer {
                text: sampled.text,
                model: sampled.model,
            })
        })
    }
}

/// One tool: its definition (which also says how the executor treats its calls) and an
/// `execute`, plus the few hooks a tool implements with code of its own.
pub trait Tool: Send + Sync {
    fn definition(&self) -> &ToolDefinition;

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// Runs the call and says which of the tool's [`Outcomes`] its result is (an index into
    /// them): the first, unless the tool declares outcomes of its own and chooses another (a
    /// script tool, by its exit code or a member of its output).
    fn execute_to_outcome<'a>(
        &'a self,
        call: ToolCall<'a>,
    ) -> BoxFuture<'a, Result<(ToolOutput, usize), ToolError>> {
        Box::pin(async move { self.execute(call).await.map(|output| (output, 0)) })
    }

    /// Whether a call needs the user's consent when the tool's execution policy asks, and what
    /// an `ask-once` approval is bound to besides the tool and the argument shape.
    /// `SkillRunScript` binds it to the skill's name and a digest of its files, so a changed
    /// file voids the approval; `ToolGroups` needs none to list. An error refuses the call
    /// before anyone is asked.
    fn consent(&self, _arguments: &Value) -> Result<Consent, ToolError> {
        Ok(Consent::Asked { scope: None })
    }

    /// The question the user is asked before a call runs, in one line, when the tool words it
    /// itself ("Reprocess chat `x` from message 3: …?"); `None` asks whether to run the tool
    /// with its arguments, summarised (see `tools/approval.rs`). Called only when asking.
    fn question(&self, _arguments: &Value) -> Option<String> {
        None
    }

    /// Turns the output into the text the model reads. The default passes text through and
    /// writes structured data as compact JSON, as `JSON.stringify` would.
    fn format_for_llm(&self, output: &ToolOutput, _arguments: &Value) -> String {
        plain_text(output)
    }
}

/// Text passed through, structured data as compact JSON, as `JSON.stringify` would write it.
pub fn plain_text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Text(text) => text.clone(),
        ToolOutput::Structured(value) => value.to_string(),
        ToolOutput::Framed(framed) => framed.shown(),
    }
}

/// Whether one call needs the user's consent (see [`Tool::consent`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consent {
    /// The call changes nothing, or only adds, so it runs without asking, whatever the policy
    /// says.
    NotNeeded,
    /// Asked as the policy says; an approval is bound to the tool, the argument shape and,
    /// when given, this scope.
    Asked { scope: Option<String> },
}

impl Consent {
    /// Asked (without a scope of its own) only when the call destroys something: a call that
    /// replaces what is stored is asked, one that adds destroys nothing.
    pub fn asked_when(destroys: bool) -> Self {
        if destroys {
            Self::Asked { scope: None }
        } else {
            Self::NotNeeded
        }
    }
}

/// A named set of tools with its rule prompt and declared skill rules.
#[derive(Clone)]
pub struct ToolGroup {
    pub name: String,
    /// Where the tools come from.
    pub origin: Origin,
    pub tools: Vec<Arc<dyn Tool>>,
    /// The text the model reads about the group's tools, if any.
    pub rule_prompt: Option<String>,
    pub rules: Vec<SkillRule>,
    /// What the group offers, in one line: the instructions name the groups that are off with
    /// it, so the model can turn one on (`ToolGroups`) when a task needs it.
    pub about: Option<&'static str>,
}

/// Where a group's tools come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Built into synapse-mcp.
    BuiltIn,
    /// A folder of scripts, each a tool.
    Scripts(std::path::PathBuf),
    /// Another MCP server, by the name the configuration gives it.
    Upstream(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BuiltIn => formatter.write_str("built-in"),
            Self::Scripts(folder) => write!(formatter, "scripts in {}", folder.display()),
            Self::Upstream(name) => write!(formatter, "the MCP server `{name}`"),
        }
    }
}
