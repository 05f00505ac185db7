//! A whole plan run as one tool call (`RunPlan`): its parts taken from the call, validated
//! against the enabled tools, the state and the variables, then run, and the answer.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::plan::{self, Step, World};
use super::run::{StateChange, StepStatus, StepTrace};
use crate::refs::{self, Budget, Segment};
use crate::tools::{
    Answer, Approved, PlanScope, PlannedCall, ToolCall, ToolDefinition, ToolError, plan_question,
};
use crate::workspace::Workspace;

/// Steps run at once when a plan does not say.
pub const DEFAULT_PARALLEL: usize = 4;

/// What `RunPlan` answers.
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

/// Validates the plan, then runs it (`dry_run`: only returns the order; `parallel`: most steps
/// at once), both as the call gives them (defaults: run, [`DEFAULT_PARALLEL`]).
pub async fn run(
    call: &ToolCall<'_>,
    (steps, input): (&[Value], Value),
    dry_run: Option<bool>,
    parallel: Option<usize>,
) -> Result<RunPlanOutput, ToolError> {
    let (dry_run, parallel) = (
        dry_run.unwrap_or(false),
        parallel.unwrap_or(DEFAULT_PARALLEL),
    );
    let steps = plan::parse(steps).map_err(|problems| invalid_plan(&problems))?;
    let state_before = call.workspace.state()?;
    let world = Catalog {
        call,
        state: state_before.clone(),
    };
    let validated =
        plan::validate(&steps, &input, &world).map_err(|problems| invalid_plan(&problems))?;
    if dry_run {
        return Ok(RunPlanOutput {
            ok: true,
            order: validated.order,
            steps: Vec::new(),
            state_diff: Vec::new(),
        });
    }
    let approvals = approve(call, &steps).await?;
    let scope = PlanScope::new(input);
    let traces = super::run::run(
        call,
        (&steps, &approvals),
        &validated.dependencies,
        &scope,
        parallel,
    )
    .await;
    let state_after = call.workspace.state()?;
    Ok(RunPlanOutput {
        ok: traces
            .iter()
            .all(|trace| trace.status == StepStatus::Success),
        order: validated.order,
        steps: traces,
        state_diff: super::run::state_diff(&state_before, &state_after),
    })
}

/// Asks the user once for every step that would ask before it runs, showing each with its
/// arguments as written; the approval covers exactly those steps of this plan (a result gate
/// still asks when the result arrives). A rejection runs nothing. A session that cannot be
/// asked while the call runs leaves each step to its own gate (and the configured fallback).
async fn approve(call: &ToolCall<'_>, steps: &[Step]) -> Result<Vec<Option<Approved>>, ToolError> {
    let approvals: Vec<Option<Approved>> = steps
        .iter()
        .map(|step| call.executor.would_ask(&step.tool, &step.arguments))
        .collect();
    let Some(user) = call.asker.filter(|_| approvals.iter().any(Option::is_some)) else {
        return Ok(approvals);
    };
    let arguments: Vec<Value> = steps
        .iter()
        .map(|step| Value::Object(step.arguments.clone()))
        .collect();
    let asked: Vec<PlannedCall<'_>> = steps
        .iter()
        .zip(&arguments)
        .zip(&approvals)
        .filter(|(_, approval)| approval.is_some())
        .map(|((step, arguments), _)| PlannedCall {
            step: &step.id,
            tool: &step.tool,
            arguments,
            references: step.references(),
        })
        .collect();
    let question = plan_question(TOOL, &asked, steps.len());
    let answer = tokio::select! {
        biased;
        () = call.cancellation.cancelled() => {
            return Err(ToolError::invalid(format!("the call of `{TOOL}` was cancelled")));
        }
        answer = user.ask(&question) => answer,
    };
    match answer {
        Some(Answer::Approved { .. }) => Ok(approvals),
        Some(Answer::Rejected { reason }) => {
            let named: Vec<String> = asked
                .iter()
                .map(|call| format!("`{}`", call.step))
                .collect();
            let reason = reason.map_or_else(
                || " without giving a reason".to_owned(),
                |reason| format!(": {reason}"),
            );
            Err(ToolError::invalid(format!(
                "The user rejected this plan (steps {} needed approval){reason}; no step ran",
                named.join(", ")
            )))
        }
        None => Ok(vec![None; steps.len()]),
    }
}

/// The tool that runs plans, as the user's question names it.
const TOOL: &str = "RunPlan";

/// The steps and input, from `steps`/`input` or from a whole `plan` (object or JSON text).
/// `$VAR_REF` references in the input are resolved now, as in any call; those in the steps
/// when each step runs, so that a step may read a variable an earlier step writes. A `plan`
/// that is one whole reference (`"$VAR_REF{{myPlan}}"`) is the variable's text as stored.
pub fn parts(
    workspace: &Workspace,
    steps: Option<Vec<Value>>,
    plan: Option<Value>,
    input: Option<Value>,
) -> Result<(Vec<Value>, Value), ToolError> {
    let budget = Budget::default();
    let mut input = input;
    if let Some(input) = &mut input {
        workspace.resolve_references(input, &budget)?;
    }
    let empty = || Value::Object(Map::new());
    let Some(plan) = plan else {
        let steps =
            steps.ok_or_else(|| ToolError::invalid("RunPlan needs `steps` (or a whole `plan`)"))?;
        return Ok((steps, input.unwrap_or_else(empty)));
    };
    let plan = match plan {
        Value::String(text) => {
            let text = stored_plan(workspace, text, &budget)?;
            serde_json::from_str(&text).map_err(|error| {
                ToolError::invalid(format!("`plan` is text but not JSON: {error}"))
            })?
        }
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

/// The text of a `plan` given as text: a whole `$VAR_REF{{name}}` is the variable as stored
/// (its steps' own references stay for the steps), any other text with its references resolved.
fn stored_plan(workspace: &Workspace, text: String, budget: &Budget) -> Result<String, ToolError> {
    if let Ok(segments) = refs::parse(&text)
        && let [Segment::Variable { reference, source }] = segments.as_slice()
        && reference.slice.is_none()
    {
        let variable = workspace
            .get(&reference.name)?
            .ok_or_else(|| refs::Error::NotFound {
                reference: (*source).to_owned(),
                name: reference.name.clone(),
            })?;
        return Ok(variable.value.to_string());
    }
    let mut text = Value::String(text);
    workspace.resolve_references(&mut text, budget)?;
    Ok(match text {
        Value::String(text) => text,
        other => other.to_string(),
    })
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
    fn tool(&self, name: &str) -> Option<ToolDefinition> {
        let tool = self.call.executor.tools().find(name)?;
        Some(tool.definition().clone())
    }

    fn state(&self) -> &Value {
        &self.state
    }

    fn variable_exists(&self, name: &str) -> bool {
        self.call.workspace.peek(name).is_some()
    }
}
