//! Running a validated plan: steps in dependency order, independent ones at the same time (at
//! most `max_parallel`), each through the executor's whole pipeline. A failed step stops the
//! steps that depend on it, not its siblings; a step whose `||` branch caught its error counts
//! as done. Cancellation stops the steps not yet started.

use std::collections::BTreeSet;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::Serialize;
use serde_json::{Map, Value};

use super::plan::Step;
use crate::tools::PlanScope;
use crate::tools::{
    Approved, Asking, Audience, CallRequest, ExecuteStatus, Outcome, ToolCall, ToolOutput,
};

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Pending,
    Success,
    Error,
    Rejected,
    Skipped,
    Cancelled,
}

/// What happened to one step.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepTrace {
    pub id: String,
    pub tool: String,
    pub status: StepStatus,
    /// Microseconds from the start of the plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_micros: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_micros: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<String>,
    /// The variable holding the step's full result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_variable: Option<String>,
    /// The error, rejection, or why the step was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Runs the steps; returns one trace per step, in plan order.
/// `approvals`: per step, the approval the user gave the plan for it, if it needed one.
pub async fn run(
    call: &ToolCall<'_>,
    (steps, approvals): (&[Step], &[Option<Approved>]),
    dependencies: &[BTreeSet<usize>],
    scope: &PlanScope,
    max_parallel: usize,
) -> Vec<StepTrace> {
    let started = Instant::now();
    let mut traces: Vec<StepTrace> = steps.iter().map(pending_trace).collect();
    let mut state: Vec<Progress> = vec![Progress::Waiting; steps.len()];
    let mut running = FuturesUnordered::new();
    let mut finished = 0;
    loop {
        skip_blocked(steps, dependencies, &mut state, &mut traces);
        let ready: Vec<usize> = (0..steps.len())
            .filter(|&index| {
                state[index] == Progress::Waiting
                    && dependencies[index]
                        .iter()
                        .all(|&d| state[d] == Progress::Succeeded)
            })
            .collect();
        for index in ready {
            if running.len() >= max_parallel.max(1) {
                break;
            }
            if call.cancellation.is_cancelled() {
                break;
            }
            state[index] = Progress::Running;
            traces[index].started_micros = Some(micros_since(started));
            let approved = approvals.get(index).and_then(Option::as_ref);
            running.push(run_step(call, (&steps[index], approved), scope, index));
        }
        let Some((index, trace)) = running.next().await else {
            break;
        };
        let succeeded = trace.status == StepStatus::Success;
        traces[index] = StepTrace {
            started_micros: traces[index].started_micros,
            finished_micros: Some(micros_since(started)),
            ..trace
        };
        state[index] = if succeeded {
            Progress::Succeeded
        } else {
            Progress::Failed
        };
        finished += 1;
        if let Some(progress) = call.progress {
            #[expect(clippy::cast_precision_loss, reason = "step counts far below 2^52")]
            let (done, total) = (f64::from(finished), steps.len() as f64);
            let message = format!("step `{}` {:?}", steps[index].id, traces[index].status);
            progress.report(done, Some(total), Some(message)).await;
        }
    }
    for (index, trace) in traces.iter_mut().enumerate() {
        if state[index] == Progress::Waiting {
            trace.status = StepStatus::Cancelled;
            trace.message = Some("the plan was cancelled before this step started".to_owned());
        }
    }
    traces
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Progress {
    Waiting,
    Running,
    Succeeded,
    Failed,
    Skipped,
}

fn pending_trace(step: &Step) -> StepTrace {
    StepTrace {
        id: step.id.clone(),
        tool: step.tool.clone(),
        status: StepStatus::Pending,
        started_micros: None,
        finished_micros: None,
        written: Vec::new(),
        result_variable: None,
        message: None,
    }
}

/// Marks as skipped every waiting step that depends on a failed or skipped one.
fn skip_blocked(
    steps: &[Step],
    dependencies: &[BTreeSet<usize>],
    state: &mut [Progress],
    traces: &mut [StepTrace],
) {
    loop {
        let blocked: Vec<(usize, usize)> = (0..steps.len())
            .filter(|&index| state[index] == Progress::Waiting)
            .filter_map(|index| {
                let failed = dependencies[index]
                    .iter()
                    .find(|&&d| matches!(state[d], Progress::Failed | Progress::Skipped))?;
                Some((index, *failed))
            })
            .collect();
        if blocked.is_empty() {
            return;
        }
        for (index, cause) in blocked {
            state[index] = Progress::Skipped;
            traces[index].status = StepStatus::Skipped;
            traces[index].message = Some(format!(
                "step `{}` it depends on did not succeed",
                steps[cause].id
            ));
        }
    }
}

async fn run_step(
    call: &ToolCall<'_>,
    (step, approved): (&Step, Option<&Approved>),
    scope: &PlanScope,
    index: usize,
) -> (usize, StepTrace) {
    let mut arguments: Map<String, Value> = step.arguments.clone();
    if let Some((text, _)) = &step.output_path {
        arguments.insert("_outputPath".to_owned(), Value::String(text.clone()));
    }
    let request = CallRequest {
        tool: &step.tool,
        arguments: Some(arguments),
        asking: call.asker.map_or(Asking::Unavailable, Asking::Direct),
        resume: None,
        cancellation: call.cancellation.child_token(),
        plan: Some(scope),
        progress: None,
        sampler: call.sampler,
        relay: call.relay,
        approved,
        // A plan is the model's: its steps reach only the tools the model sees.
        audience: Audience::Model,
    };
    let mut trace = pending_trace(step);
    match call.executor.execute(request).await {
        Outcome::Finished(result) => {
            trace.status = match result.status {
                ExecuteStatus::Success => StepStatus::Success,
                ExecuteStatus::ExecutionRejected | ExecuteStatus::ResultRejected => {
                    StepStatus::Rejected
                }
                ExecuteStatus::Error | ExecuteStatus::NotFound => StepStatus::Error,
            };
            if result.status == ExecuteStatus::Success {
                let value = result.data.map_or(Value::Null, ToolOutput::into_value);
                scope.record(&step.id, value);
            } else {
                trace.message = Some(result.final_text);
            }
            trace.written = result.written;
            trace.result_variable = result.cache_var_result;
        }
        Outcome::InputRequired(_) => {
            trace.status = StepStatus::Rejected;
            trace.message = Some("the step needs the user's approval, which cannot be asked in the middle of a plan on this session".to_owned());
        }
    }
    (index, trace)
}

fn micros_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// A path-by-path difference between two state documents.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StateChange {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

/// The leaves that differ between two documents (objects are compared member by member).
pub fn state_diff(before: &Value, after: &Value) -> Vec<StateChange> {
    let mut changes = Vec::new();
    diff_into(&mut changes, String::new(), Some(before), Some(after));
    changes
}

fn diff_into(
    changes: &mut Vec<StateChange>,
    path: String,
    before: Option<&Value>,
    after: Option<&Value>,
) {
    if before == after {
        return;
    }
    if let (Some(Value::Object(old)), Some(Value::Object(new))) = (before, after) {
        let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for key in keys {
            let child = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            diff_into(changes, child, old.get(key), new.get(key));
        }
        return;
    }
    changes.push(StateChange {
        path,
        before: before.cloned(),
        after: after.cloned(),
    });
}
