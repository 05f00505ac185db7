//! The `plans` group (`docs/state-and-plans.md`): `ReadState` and `WriteState` over the workspace's state
//! document, and `RunPlan`, which validates a whole graph of tool calls and runs it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::path::Path;
use crate::plans::whole::{self, RunPlanOutput};
use crate::tools::{
    Annotations, Answered, Context, Daggers, Declaration, Origin, Text, ToolError, ToolGroup,
    TypedTool, WORKSPACE_VIEW, declare, typed,
};

pub const GROUP: &str = "plans";

pub fn group() -> ToolGroup {
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
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
    /// Dot path into the state document (`user.summary`, `items.0.name`); leave it out for the whole document.
    pub path: Option<String>,
    /// First character of the value's JSON text to read (for large values). Default 0.
    pub start: Option<usize>,
    /// How many characters to read. Default: up to the output limit.
    pub length: Option<usize>,
}

/// `ReadState`: a window of the state document. It pages its own output, so it is never cut,
/// and, like a variable read, never cached.
impl TypedTool for ReadStateArguments {
    type Output = Text;
    const TOOL: Declaration = declare! {
        "ReadState", "Read state", READ_ONLY, READ_STATE, view(WORKSPACE_VIEW), whole, uncached
    };

    async fn run(self, context: Context<'_>) -> Answered<Text> {
        let path = Path::parse_or_root(self.path.as_deref())?;
        let length = self.length.or(context.output_limit);
        let window = (context.workspace).state_window(&path, self.start.unwrap_or(0), length)?;
        Ok(Text(window.ok_or_else(|| {
            ToolError::invalid(format!(
                "the state has nothing at `{path}`; ReadState without a path shows the whole document"
            ))
        })?))
    }
}

const READ_ONLY: Annotations = Annotations::READ_ONLY;

const READ_STATE: &str = "Read the workspace's state document, whole or at a dot path (`user.summary`, `items.0`). The state is where `_outputPath` writes results and what `†state.<path>` references read. Large values come in windows, like ReadVar.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteStateArguments {
    /// Dot path to write (`user.summary`, `items.2`); missing objects on the way are created, an array index may append at the end.
    pub path: String,
    /// The value: any JSON.
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
        "WriteState", "Write state", OVERWRITES, WRITE_STATE, uncached
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

const WRITE_STATE: &str = "Write a JSON value into the workspace's state document at a dot path. Plans and `_outputPath` write here too; `†state.<path>` in any tool's arguments reads it back.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunPlanArguments {
    /// The steps: objects `{"_id": "…", "_tool": "ToolName", …the tool's arguments, "_outputPath": "†state.…"}` (step fields start with `_`, so a tool's own `id` argument is free). Arguments may refer to earlier results with `†steps.<id>.<path>`, `†state.<path>`, `†input.<path>` or `†var.<name>`.
    #[schemars(with = "Option<Vec<Map<String, Value>>>")]
    pub steps: Option<Vec<Value>>,
    /// A whole plan `{"steps": […], "input": {…}}`, as an object or as JSON text — for example `"$VAR_REF{{myPlan}}"` to run a plan stored with `WriteVar`.
    #[schemars(extend("anyOf" = [{"type": "object"}, {"type": "string"}]))]
    pub plan: Option<Value>,
    /// Inputs the steps read with `†input.<path>`.
    pub input: Option<Value>,
    /// Only validate and return the execution order; run nothing.
    #[serde(rename = "dryRun")]
    pub dry_run: Option<bool>,
    /// Most steps running at once (default 4).
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
        let (steps, input) = whole::parts(self.steps, self.plan, self.input)?;
        let (dry_run, parallel) = (self.dry_run, self.max_parallel);
        whole::run(context.session()?, (&steps, input), dry_run, parallel).await
    }
}

const RUNS_ANY_TOOL: Annotations = Annotations::DESTRUCTIVE;

const RUN_PLAN: &str = "Run several tool calls as one declarative plan: steps linked by `†steps.<id>` / `†state.<path>` references are validated together (unknown tools or steps, dangling references, cycles and bad arguments are all reported at once), then run in dependency order with independent steps in parallel. Use it when a task needs three or more calls whose outputs feed each other; `dryRun` shows the order without running. Returns a trace per step and the state changes.";
