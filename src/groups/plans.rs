//! The `plans` group (`docs/state-and-plans.md`): `ReadState` and `WriteState` over the workspace's state
//! document, and `RunPlan`, which validates a whole graph of tool calls and runs it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::path::Path;
use crate::plans::whole::{self, RunPlanOutput};
use crate::tools::{
    Annotations, Answered, Context, Daggers, Declaration, Framed, Origin, ToolError, ToolGroup,
    TypedTool, WORKSPACE_VIEW, Writes, declare, typed,
};

pub const GROUP: &str = "plans";

pub fn group() -> ToolGroup {
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
        about: None,
        tools: vec![
            typed::<ReadStateArguments, _>(()),
            typed::<WriteStateArguments, _>(()),
            typed::<RunPlanArguments, _>(()),
        ],
        rule_prompt: Some(
            include_str!("../../skills/synapse-workspace/rules/plans-group.md").to_owned(),
        ),
        rules: Vec::new(),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadStateArguments {
    /// Dot path (`items.0.name`); left out: the whole document.
    pub path: Option<String>,
    /// First character of the value's JSON text. Default 0.
    pub start: Option<usize>,
    /// Characters to read. Default: up to the output limit.
    pub length: Option<usize>,
}

/// `ReadState`: a window of the state document. It pages its own output, so it is never cut,
/// and, like a variable read, never cached.
impl TypedTool for ReadStateArguments {
    type Output = Framed;
    const TOOL: Declaration = declare! {
        "ReadState", "Read state", READ_ONLY, READ_STATE, view(WORKSPACE_VIEW), whole, uncached
    };

    async fn run(self, context: Context<'_>) -> Answered<Framed> {
        let path = Path::parse_or_root(self.path.as_deref())?;
        let length = self.length.or(context.output_limit);
        let window = (context.workspace).state_window(&path, self.start.unwrap_or(0), length)?;
        window.ok_or_else(|| {
            ToolError::invalid(format!(
                "the state has nothing at `{path}`; ReadState without a path shows the whole document"
            ))
        })
    }
}

const READ_ONLY: Annotations = Annotations::READ_ONLY;

const READ_STATE: &str = "Read the workspace's state document, whole or at a dot path \
    (`user.summary`, `items.0`): what `_outputPath` writes and `†state.<path>` reads. Large values \
    come in windows, like ReadVar.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteStateArguments {
    /// Dot path (`items.2`); missing objects are made, an index may append.
    pub path: String,
    /// Any JSON value.
    pub value: Value,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteStateOutput {
    pub path: String,
    /// The value now at the path.
    pub value: Value,
}

impl WriteStateOutput {
    fn new(path: &Path, value: Value) -> Self {
        Self {
            path: path.to_string(),
            value,
        }
    }
}

/// `WriteState`: a value written into the state document at a dot path; not cached.
impl TypedTool for WriteStateArguments {
    type Output = WriteStateOutput;
    // Writing over an existing path replaces what was there.
    const TOOL: Declaration = declare! {
        "WriteState", "Write state", OVERWRITES, WRITE_STATE, uncached, writes(Writes::StateAt("path"))
    };

    async fn run(self, context: Context<'_>) -> Answered<WriteStateOutput> {
        let path = Path::parse(&self.path)?;
        // The inner error is a value nested too deep for the path: the caller's to fix.
        let written = context.workspace.write_state(&path, &self.value)?;
        written.map_err(ToolError::Invalid)?;
        Ok(WriteStateOutput::new(&path, self.value))
    }
}

const OVERWRITES: Annotations = Annotations::OVERWRITES;

const WRITE_STATE: &str = "Write a JSON value into the state document at a dot path; \
    `†state.<path>` in any tool's arguments reads it back.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunPlanArguments {
    /// Steps `{"_id", "_tool", …the tool's arguments, "_outputPath"?}`; arguments may hold
    /// `†steps.<id>.<path>`, `†state.<path>`, `†input.<path>` or `†var.<name>`.
    #[schemars(with = "Option<Vec<Map<String, Value>>>")]
    pub steps: Option<Vec<Value>>,
    /// A whole plan `{"steps", "input"}`, or its JSON text (`"$VAR_REF{{myPlan}}"` runs a stored
    /// one).
    #[schemars(extend("anyOf" = [{"type": "object"}, {"type": "string"}]))]
    pub plan: Option<Value>,
    /// What `†input.<path>` reads.
    pub input: Option<Value>,
    /// Only check and give the order.
    #[serde(rename = "dryRun")]
    pub dry_run: Option<bool>,
    /// Most steps at once (default 4).
    #[serde(rename = "maxParallel")]
    pub max_parallel: Option<usize>,
}

/// `RunPlan`: validates a whole graph of tool calls and runs it. It resolves the steps' `†`
/// references itself, as their results come in.
impl TypedTool for RunPlanArguments {
    type Output = RunPlanOutput;
    // A plan runs any enabled tool, destructive ones included.
    const TOOL: Declaration = declare! {
        "RunPlan", "Run plan", RUNS_ANY_TOOL, RUN_PLAN, view(WORKSPACE_VIEW), daggers(Daggers::Kept)
    };

    async fn run(self, context: Context<'_>) -> Answered<RunPlanOutput> {
        let (steps, input) = whole::parts(context.workspace, self.steps, self.plan, self.input)?;
        let (dry_run, parallel) = (self.dry_run, self.max_parallel);
        whole::run(context.session()?, (&steps, input), dry_run, parallel).await
    }
}

const RUNS_ANY_TOOL: Annotations = Annotations::DESTRUCTIVE;

const RUN_PLAN: &str = "Run tool calls as one plan: steps linked by `†steps.<id>` / \
    `†state.<path>` references are checked together (every error at once), then run in dependency \
    order, independent ones in parallel. For three or more calls feeding each other; `dryRun` \
    shows the order. Returns a trace per step and the state changes.";
