//! The `plans` group (`docs/state-and-plans.md`): `ReadState` and `WriteState` over the workspace's state
//! document, and `RunPlan`, which validates a whole graph of tool calls and runs it.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::structured;
use crate::json::path::Path;
use crate::plans::plan::{self, World};
use crate::plans::run::{self, StateChange, StepStatus, StepTrace};
use crate::text::{Chunk, window};
use crate::tools::{
    Annotations, Caching, Daggers, Origin, PlanScope, Tool, ToolCall, ToolDefinition, ToolError,
    ToolGroup, ToolOutput, Truncation, WORKSPACE_VIEW,
};

pub const GROUP: &str = "plans";

/// Steps run at once when a plan does not say.
const DEFAULT_PARALLEL: usize = 4;

pub fn group() -> ToolGroup {
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
        tools: vec![
            Arc::new(ReadState::new()),
            Arc::new(WriteState::new()),
            Arc::new(RunPlan::new()),
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
struct ReadState {
    definition: ToolDefinition,
}

impl ReadState {
    fn new() -> Self {
        let definition = ToolDefinition::new::<ReadStateArguments>(
            "ReadState",
            "Read the workspace's state document, whole or at a dot path (`user.summary`, `items.0`). The state is where `_outputPath` writes results and what `†state.<path>` references read. Large values come in windows, like ReadVar.",
            Annotations {
                read_only: true,
                idempotent: true,
                ..Annotations::default()
            },
        )
        .with_title("Read state")
        .with_view(WORKSPACE_VIEW)
        .with_truncation(Truncation::Never)
        .with_caching(Caching::Off);
        Self { definition }
    }
}

impl Tool for ReadState {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let arguments: ReadStateArguments = self.definition.parse(call.arguments)?;
            let path = match arguments.path.as_deref() {
                None | Some("") => Path::root(),
                Some(text) => Path::parse(text)?,
            };
            let value = call.workspace.state_at(&path)?.ok_or_else(|| {
                ToolError::invalid(format!(
                    "the state has nothing at `{path}`; ReadState without a path shows the whole document"
                ))
            })?;
            let length = arguments.length.or(call.output_limit);
            Ok(ToolOutput::Text(state_window(
                &path,
                &value,
                arguments.start,
                length,
            )))
        })
    }
}

/// A window of a value's pretty JSON text, under a line giving the window and the total.
fn state_window(path: &Path, value: &Value, start: Option<usize>, length: Option<usize>) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    let Chunk {
        text: window,
        start,
        end,
        total,
        ..
    } = window(&text, start.unwrap_or(0), length);
    let shown = if path.is_root() {
        "state".to_owned()
    } else {
        format!("state `{path}`")
    };
    let header = if end < total {
        format!(
            "[{shown}: characters {start}–{end} of {total}; more remains: ReadState {{\"path\": \"{path}\", \"start\": {end}}}]"
        )
    } else {
        format!("[{shown}: characters {start}–{end} of {total}]")
    };
    format!("{header}\n{window}")
}

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

/// `WriteState`: a value written into the state document at a dot path; not cached.
struct WriteState {
    definition: ToolDefinition,
}

impl WriteState {
    fn new() -> Self {
        let definition = ToolDefinition::new::<WriteStateArguments>(
            "WriteState",
            "Write a JSON value into the workspace's state document at a dot path. Plans and `_outputPath` write here too; `†state.<path>` in any tool's arguments reads it back.",
            // Writing over an existing path replaces what was there.
            Annotations {
                destructive: true,
                idempotent: true,
                ..Annotations::default()
            },
        )
        .with_title("Write state")
        .with_output::<WriteStateOutput>()
        .with_caching(Caching::Off);
        Self { definition }
    }
}

impl Tool for WriteState {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let arguments: WriteStateArguments = self.definition.parse(call.arguments)?;
            let path = Path::parse(&arguments.path)?;
            let value = arguments.value;
            // The inner error is a value nested too deep for the path: the caller's to fix.
            call.workspace
                .write_state(&path, &value)?
                .map_err(ToolError::Invalid)?;
            structured(&WriteStateOutput {
                path: path.to_string(),
                value,
            })
        })
    }
}

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

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPlanOutput {
    /// Every step succeeded (or, for a dry run, the plan is valid).
    pub ok: bool,
    /// The execution order: each inner list may run at the same time.
    pub order: Vec<Vec<String>>,
    /// Per step: status, timing, written paths, the variable holding its result.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepTrace>,
    /// What the plan changed in the state document.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub state_diff: Vec<StateChange>,
}

/// `RunPlan`: validates a whole graph of tool calls and runs it. It resolves the steps' `†`
/// references itself, as their results come in.
struct RunPlan {
    definition: ToolDefinition,
}

impl RunPlan {
    fn new() -> Self {
        let definition = ToolDefinition::new::<RunPlanArguments>(
            "RunPlan",
            "Run several tool calls as one declarative plan: steps linked by `†steps.<id>` / `†state.<path>` references are validated together (unknown tools or steps, dangling references, cycles and bad arguments are all reported at once), then run in dependency order with independent steps in parallel. Use it when a task needs three or more calls whose outputs feed each other; `dryRun` shows the order without running. Returns a trace per step and the state changes.",
            // A plan runs any enabled tool, destructive ones included.
            Annotations {
                destructive: true,
                ..Annotations::default()
            },
        )
        .with_title("Run plan")
        .with_output::<RunPlanOutput>()
        .with_view(WORKSPACE_VIEW)
        .with_daggers(Daggers::Kept);
        Self { definition }
    }
}

impl Tool for RunPlan {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let arguments: RunPlanArguments = self.definition.parse(call.arguments.clone())?;
            let (steps, input) = plan_parts(arguments.steps, arguments.plan, arguments.input)?;
            let dry_run = arguments.dry_run.unwrap_or(false);
            let parallel = arguments.max_parallel.unwrap_or(DEFAULT_PARALLEL);
            run_plan(&call, (&steps, input), dry_run, parallel).await
        })
    }
}

/// Validates the plan, then runs it (`dry_run`: only returns the order).
async fn run_plan(
    call: &ToolCall<'_>,
    (steps, input): (&[Value], Value),
    dry_run: bool,
    parallel: usize,
) -> Result<ToolOutput, ToolError> {
    let steps = plan::parse(steps).map_err(|problems| invalid_plan(&problems))?;
    let state_before = call.workspace.state()?;
    let world = Catalog {
        call,
        state: state_before.clone(),
    };
    let validated =
        plan::validate(&steps, &input, &world).map_err(|problems| invalid_plan(&problems))?;
    if dry_run {
        return structured(&RunPlanOutput {
            ok: true,
            order: validated.order,
            steps: Vec::new(),
            state_diff: Vec::new(),
        });
    }
    let scope = PlanScope::new(input);
    let traces = run::run(call, &steps, &validated.dependencies, &scope, parallel).await;
    let state_after = call.workspace.state()?;
    structured(&RunPlanOutput {
        ok: traces
            .iter()
            .all(|trace| trace.status == StepStatus::Success),
        order: validated.order,
        steps: traces,
        state_diff: run::state_diff(&state_before, &state_after),
    })
}

/// The steps and input, from `steps`/`input` or from a whole `plan` (object or JSON text).
fn plan_parts(
    steps: Option<Vec<Value>>,
    plan: Option<Value>,
    input: Option<Value>,
) -> Result<(Vec<Value>, Value), ToolError> {
    let empty = || Value::Object(Map::new());
    let Some(plan) = plan else {
        let steps =
            steps.ok_or_else(|| ToolError::invalid("RunPlan needs `steps` (or a whole `plan`)"))?;
        return Ok((steps, input.unwrap_or_else(empty)));
    };
    let plan = match plan {
        Value::String(text) => serde_json::from_str(&text)
            .map_err(|error| ToolError::invalid(format!("`plan` is text but not JSON: {error}")))?,
        other => other,
    };
    let steps = match plan.get("steps") {
        Some(Value::Array(steps)) => steps.clone(),
        _ => return Err(ToolError::invalid("`plan` must hold a `steps` array")),
    };
    let input = input
        .or_else(|| plan.get("input").cloned())
        .unwrap_or_else(empty);
    Ok((steps, input))
}

fn invalid_plan(problems: &[String]) -> ToolError {
    ToolError::Invalid(format!(
        "the plan is not valid ({} problems):\n- {}",
        problems.len(),
        problems.join("\n- ")
    ))
}

/// Validation's view of the server: enabled tools, the state, the variables.
struct Catalog<'a> {
    call: &'a ToolCall<'a>,
    state: Value,
}

impl World for Catalog<'_> {
    fn tool_schema(&self, name: &str) -> Option<Map<String, Value>> {
        let tool = self.call.executor.tools().find(name)?;
        Some(tool.definition().input_schema.as_ref().clone())
    }

    fn state(&self) -> &Value {
        &self.state
    }

    fn variable_exists(&self, name: &str) -> bool {
        self.call.workspace.peek(name).is_some()
    }
}
