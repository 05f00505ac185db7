//! The `execute()` pipeline (`docs/executor.md`), step by step:
//! resolve references → execution gate → execute → format → truncate → cache result and
//! arguments as variables → truncation hint → result gate.
//!
//! `executor/groups.rs` registers tool groups and renders their rules; `executor/approvals.rs`
//! keeps the approval gates' bookkeeping.

mod approvals;
mod cache;
mod groups;
mod shape;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::FutureExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::approval::{execution_question, preview};
use super::output_path::{self, OUTPUT_PATH_ARGUMENT, OutputPath};
use super::result::{ExecuteResult, ExecuteStatus, Outcome, PendingInput};
use super::scope::{PlanScope, ReferenceContext};
use super::truncate::OUTPUT_LIMIT_ARGUMENT;
use super::{
    Answer, ApprovalQuestion, Approved, Asking, Audience, Caching, Consent, Fallback, Permission,
    Policy, Progress, Registry, Relay, Sampler, Stage, Tool, ToolCall, ToolError, ToolOutput,
    Truncation, View,
};
use crate::refs::dagger;
use crate::workspace::Workspace;

/// Pending MRTR questions kept at most; the oldest are dropped first.
const PENDING_LIMIT: usize = 256;

/// Configuration of the pipeline.
#[derive(Debug, Clone)]
pub struct ExecutorSettings {
    pub output_limit: usize,
    pub fallback: Fallback,
    /// Per-tool overrides of the tools' own permissions and limits.
    pub overrides: HashMap<String, ToolOverride>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolOverride {
    pub execution: Option<Policy>,
    pub result: Option<Policy>,
    pub output_limit: Option<usize>,
}

impl Default for ExecutorSettings {
    fn default() -> Self {
        Self {
            output_limit: 10_000,
            fallback: Fallback::Deny,
            overrides: HashMap::new(),
        }
    }
}

/// One `tools/call`.
pub struct CallRequest<'a> {
    pub tool: &'a str,
    pub arguments: Option<Map<String, Value>>,
    pub asking: Asking<'a>,
    /// The MRTR `requestState` of a retried call.
    pub resume: Option<String>,
    pub cancellation: CancellationToken,
    /// The plan this call is a step of, whose inputs and step results `†` references read.
    pub plan: Option<&'a PlanScope>,
    /// Where a long-running tool reports progress, when the client asked for it.
    pub progress: Option<&'a dyn Progress>,
    /// The client's model, when the client declared sampling and this session may ask it.
    pub sampler: Option<&'a dyn Sampler>,
    /// Where an upstream's questions go while the call runs, when the client can answer them.
    pub relay: Option<&'a dyn Relay>,
    /// The user approved this call's execution already (a step of a plan approved whole).
    pub approved: Option<&'a Approved>,
    /// Whose tools the call may reach: a client that renders apps may call the views' own.
    pub audience: Audience,
}

enum Pending {
    /// Waiting for the execution answer; nothing has run yet.
    Execution,
    /// The tool ran; its result waits for the result answer, then goes to its `_outputPath`.
    Result(Box<(ExecuteResult, Option<OutputPath>)>),
}

enum Gate {
    Pass,
    Reject(Option<String>),
    Ask(ApprovalQuestion),
}

/// Who is calling, when the transport knows (`serve --http` with bearer tokens): ask-once
/// approvals are remembered per principal, and a read-only caller may run only the tools whose
/// annotations say they are read-only. The default is the one user of a stdio server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Caller {
    /// The principal a token names; `None` on stdio and on unauthenticated loopback HTTP.
    pub principal: Option<String>,
    /// Only tools annotated `readOnlyHint: true` may run.
    pub read_only: bool,
    /// The tools that change what every workspace of the process shares (the skills shelf:
    /// [`ToolDefinition::changes_shared_state`](super::ToolDefinition)) may not run: a token
    /// without the `skills` grant.
    pub shared_read_only: bool,
    /// Tool groups turned on in the caller's workspace when it has no switch for them (a
    /// front end's token: `token add --groups`).
    pub groups: Vec<String>,
}

/// Runs tool calls through the pipeline.
pub struct Executor {
    registry: Arc<Registry>,
    workspace: Arc<Workspace>,
    settings: ExecutorSettings,
    caller: Caller,
    pending: Mutex<Vec<(String, Pending)>>,
}

impl Executor {
    pub fn new(
        registry: Arc<Registry>,
        workspace: Arc<Workspace>,
        settings: ExecutorSettings,
    ) -> Self {
        Self {
            registry,
            workspace,
            settings,
            caller: Caller::default(),
            pending: Mutex::default(),
        }
    }

    /// This executor for `caller`: its approvals and its read-only flag.
    #[must_use]
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The registry as this executor's workspace sees it, through its switches.
    pub fn tools(&self) -> View<'_> {
        self.registry.view(&self.workspace)
    }

    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    pub fn settings(&self) -> &ExecutorSettings {
        &self.settings
    }

    /// Runs one call through the whole pipeline.
    pub async fn execute(&self, request: CallRequest<'_>) -> Outcome {
        // A tool the caller's audience may not reach is unknown to it, like any other.
        let found = self
            .tools()
            .for_audience(request.audience)
            .find(request.tool);
        let Some(tool) = found else {
            let error = ToolError::invalid(match self.tools().unavailable_for(request.tool) {
                Some(reason) => format!("`{}` cannot be called now: {reason}", request.tool),
                None => format!(
                    "unknown tool `{}`; tools/list shows the available tools",
                    request.tool
                ),
            });
            return Outcome::Finished(ExecuteResult::failed(ExecuteStatus::NotFound, error));
        };
        let pending = request
            .resume
            .as_deref()
            .and_then(|state| self.take_pending(state));
        if let Some(Pending::Result(finished)) = pending {
            let (result, output_path) = *finished;
            return self
                .result_gate(tool.as_ref(), result, output_path, &request.asking)
                .await;
        }
        match self.run(tool.as_ref(), request).await {
            Ok(outcome) => outcome,
            Err(error) => Outcome::Finished(ExecuteResult::failed(ExecuteStatus::Error, error)),
        }
    }

    async fn run(
        &self,
        tool: &dyn Tool,
        mut request: CallRequest<'_>,
    ) -> Result<Outcome, ToolError> {
        let name = tool.definition().name.as_str();
        let (arguments, as_written, limit, output_path) = self.prepare(tool, &mut request)?;
        let permission = self.permission(tool);
        let (policy, scope) = match permission.execution {
            Policy::Auto => (Policy::Auto, None),
            Policy::AskOnce | Policy::AskAlways => match tool.consent(&arguments)? {
                Consent::NotNeeded => (Policy::Auto, None),
                Consent::Asked { scope } => (permission.execution, scope),
            },
        };
        let question = || {
            let asked = tool.question(&arguments);
            execution_question(name, &arguments, policy, scope.as_deref(), asked)
        };
        let approved = policy != Policy::Auto
            && (request.approved).is_some_and(|approved| approved.covers(scope.as_deref()));
        let policy = if approved { Policy::Auto } else { policy };
        let gate = self.gate(
            name,
            Stage::Execution,
            policy,
            (&arguments, scope.as_deref()),
            question,
            &request.asking,
        );
        // A call cancelled while the user is being asked stops waiting for the answer.
        let gate = tokio::select! {
            biased;
            () = request.cancellation.cancelled() => return Err(cancelled(name)),
            gate = gate => gate,
        };
        match gate {
            Gate::Pass => {}
            Gate::Reject(reason) => {
                let result = ExecuteResult::rejected(
                    ExecuteStatus::ExecutionRejected,
                    name,
                    reason.as_deref(),
                );
                return Ok(Outcome::Finished(result));
            }
            Gate::Ask(question) => return Ok(self.defer(question, Pending::Execution)),
        }
        // A call cancelled while the user was being asked never runs, whatever the answer.
        if request.cancellation.is_cancelled() {
            return Err(cancelled(name));
        }
        let asker = match request.asking {
            Asking::Direct(asker) => Some(asker),
            Asking::Deferred(_) | Asking::Unavailable => None,
        };
        let call = ToolCall {
            arguments: arguments.clone(),
            workspace: &self.workspace,
            cancellation: request.cancellation.clone(),
            output_limit: limit,
            executor: self,
            asker,
            progress: request.progress,
            sampler: request.sampler,
            relay: request.relay,
        };
        let (output, outcome) = match run_guarded(tool, call, &request.cancellation).await {
            Ok(ran) => ran,
            Err(error) => return self.failed(tool, error.bounded(limit), output_path),
        };
        let cached_arguments = as_written.as_ref().unwrap_or(&arguments);
        let mut result = self.shape_result(tool, output, (&arguments, cached_arguments), limit);
        result.outcome = outcome;
        Ok(self
            .result_gate(tool, result, output_path, &request.asking)
            .await)
    }

    /// The call's arguments ready for the tool: `_outputLimit` and `_outputPath` taken out
    /// (and returned), the caller authorized, `$VAR_REF` and (unless the tool keeps them) `†`
    /// references resolved; with the arguments as written, when they are cached and held
    /// references.
    #[expect(clippy::type_complexity, reason = "four parts of one call, used once")]
    fn prepare(
        &self,
        tool: &dyn Tool,
        request: &mut CallRequest<'_>,
    ) -> Result<(Value, Option<Value>, Option<usize>, Option<OutputPath>), ToolError> {
        let mut arguments = Value::Object(request.arguments.take().unwrap_or_default());
        let limit = self.output_limit(tool, &mut arguments)?;
        let output_path = output_path::take_output_path(&self.workspace, tool, &mut arguments)?;
        self.authorize(tool, output_path.as_ref())?;
        // The cached `_args` keep the arguments as written, references and all: the expansion
        // may be far larger, and it is in the variables already.
        let as_written = (tool.definition().caching != Caching::Off
            && crate::workspace::contains_any_reference(&arguments))
        .then(|| arguments.clone());
        let own_budget = crate::refs::Budget::default();
        let budget = request.plan.map_or(&own_budget, |plan| &plan.budget);
        let daggers = tool.definition().daggers;
        if !daggers.keeps_variable_references() {
            self.workspace.resolve_references(&mut arguments, budget)?;
        }
        if !daggers.kept(request.plan.is_some()) {
            let mut context = ReferenceContext {
                workspace: &self.workspace,
                plan: request.plan,
            };
            dagger::resolve_value(&mut arguments, &mut context)?;
        }
        Ok((arguments, as_written, limit, output_path))
    }

    /// A failed call (its error already cut to the output limit: the one place a failed
    /// call's text is cut, before the model, a caught `_outputPath` or the log sees it): the
    /// error, or, when the call's `_outputPath` has a branch for the tool's `error` outcome,
    /// the error written there as data.
    fn failed(
        &self,
        tool: &dyn Tool,
        error: ToolError,
        output_path: Option<OutputPath>,
    ) -> Result<Outcome, ToolError> {
        let definition = tool.definition();
        let catching = (definition.outcomes.error()).and_then(|outcome| {
            output_path
                .filter(|path| path.catches(outcome))
                .zip(Some(outcome))
        });
        let Some((output_path, outcome)) = catching else {
            return Err(error);
        };
        let name = definition.name.as_str();
        let mut caught =
            output_path::failure_as_data(&self.workspace, name, (&output_path, outcome), &error);
        // The caught error is not of the declared output shape: the wire says so.
        caught.structured = tool.definition().output_schema.is_some();
        Ok(Outcome::Finished(caught))
    }

    /// The one place that decides what a caller may run (`docs/http.md` has the table). A
    /// read-only caller: a tool annotated `readOnlyHint`, with no `_outputPath` (given, or
    /// pinned by the tool's schema), since that writes the result, or a caught error, to the
    /// workspace; its cached result is stored only where it displaces nothing ([`Room::Free`],
    /// in [`Executor::cache`]). A caller without the skills grant: no tool that changes what
    /// every workspace shares. Costs two flag tests for a caller that may do everything.
    fn authorize(
        &self,
        tool: &dyn Tool,
        output_path: Option<&OutputPath>,
    ) -> Result<(), ToolError> {
        if !self.caller.read_only && !self.caller.shared_read_only {
            return Ok(());
        }
        let name = tool.definition().name.as_str();
        let principal = self.caller.principal.as_deref().unwrap_or("this client");
        if !self.caller.read_only {
            if tool.definition().changes_shared_state {
                return Err(ToolError::invalid(format!(
                    "`{name}` changes the skills that every workspace of this server shares, \
                     and this token of `{principal}` may change its own workspaces only; ask \
                     for a token with the skills grant (`token add --write-skills`, or the OAuth \
                     scope `synapse:skills`)"
                )));
            }
            return Ok(());
        }
        if !tool.definition().annotations.read_only {
            return Err(ToolError::invalid(format!(
                "`{name}` changes the workspace and this token of `{principal}` is read-only; \
                 only tools annotated readOnlyHint may run (ask for a token that may write)"
            )));
        }
        if let Some(output_path) = output_path {
            let targets: Vec<String> = output_path
                .targets()
                .iter()
                .map(ToString::to_string)
                .collect();
            return Err(ToolError::invalid(format!(
                "{OUTPUT_PATH_ARGUMENT} writes to {} and this token \
                 of `{principal}` is read-only; call `{name}` without {OUTPUT_PATH_ARGUMENT} \
                 (ask for a token that may write to keep its result)",
                targets.join(", ")
            )));
        }
        Ok(())
    }

    async fn result_gate(
        &self,
        tool: &dyn Tool,
        result: ExecuteResult,
        output_path: Option<OutputPath>,
        asking: &Asking<'_>,
    ) -> Outcome {
        let name = tool.definition().name.as_str();
        let policy = self.permission(tool).result;
        let shape = Value::Null;
        let question = || ApprovalQuestion {
            tool: name.to_owned(),
            stage: Stage::Result,
            message: format!(
                "Release this result of `{name}` to the model?\n\n{}",
                preview(result.formatted_text.as_deref().unwrap_or_default())
            ),
        };
        match self
            .gate(
                name,
                Stage::Result,
                policy,
                (&shape, None),
                question,
                asking,
            )
            .await
        {
            Gate::Pass => {
                Outcome::Finished(output_path::deliver(&self.workspace, result, output_path))
            }
            Gate::Reject(reason) => {
                // A rejected result must not stay readable through ReadVar or $VAR_REF.
                if let Some(variable) = &result.cache_var_result
                    && let Err(error) = self.workspace.remove(std::slice::from_ref(variable))
                {
                    tracing::error!(%error, %variable, "cannot drop a rejected result");
                }
                let rejected =
                    ExecuteResult::rejected(ExecuteStatus::ResultRejected, name, reason.as_deref());
                Outcome::Finished(rejected)
            }
            Gate::Ask(question) => {
                self.defer(question, Pending::Result(Box::new((result, output_path))))
            }
        }
    }

    async fn gate(
        &self,
        tool: &str,
        stage: Stage,
        policy: Policy,
        (arguments, scope): (&Value, Option<&str>),
        question: impl FnOnce() -> ApprovalQuestion,
        asking: &Asking<'_>,
    ) -> Gate {
        if policy == Policy::Auto {
            return Gate::Pass;
        }
        let remember_key = self.remember_key(tool, stage, arguments, scope);
        if policy == Policy::AskOnce && self.workspace.is_approved(&remember_key) {
            return Gate::Pass;
        }
        let answer = match asking {
            Asking::Direct(asker) => asker.ask(&question()).await,
            Asking::Deferred(answers) => match answers.get(&stage) {
                Some(answer) => Some(answer.clone()),
                None => return Gate::Ask(question()),
            },
            Asking::Unavailable => None,
        };
        match answer {
            Some(Answer::Approved { remember }) => {
                if policy == Policy::AskOnce && remember {
                    self.workspace.remember_approval(remember_key);
                }
                Gate::Pass
            }
            Some(Answer::Rejected { reason }) => Gate::Reject(reason),
            None => self.fallback(tool, stage, policy),
        }
    }

    fn defer(&self, question: ApprovalQuestion, pending: Pending) -> Outcome {
        let state = uuid::Uuid::new_v4().simple().to_string();
        let mut all = self.pending();
        if all.len() >= PENDING_LIMIT {
            all.remove(0);
        }
        all.push((state.clone(), pending));
        Outcome::InputRequired(PendingInput { question, state })
    }

    fn take_pending(&self, state: &str) -> Option<Pending> {
        let mut all = self.pending();
        let index = all.iter().position(|(key, _)| key == state)?;
        Some(all.remove(index).1)
    }

    fn pending(&self) -> MutexGuard<'_, Vec<(String, Pending)>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn permission(&self, tool: &dyn Tool) -> Permission {
        let own = tool.definition().permission;
        match self.settings.overrides.get(&tool.definition().name) {
            None => own,
            Some(over) => Permission {
                execution: over.execution.unwrap_or(own.execution),
                result: over.result.unwrap_or(own.result),
            },
        }
    }

    /// Takes `_outputLimit` out of the arguments and decides the limit: the argument, then the
    /// configuration for this tool, then the tool's own default, then the global default.
    fn output_limit(
        &self,
        tool: &dyn Tool,
        arguments: &mut Value,
    ) -> Result<Option<usize>, ToolError> {
        let requested = arguments
            .as_object_mut()
            .and_then(|object| object.remove(OUTPUT_LIMIT_ARGUMENT));
        if let Some(value) = requested {
            return match value.as_i64() {
                Some(0 | -1) => Ok(None),
                Some(limit) if limit > 0 => Ok(usize::try_from(limit).ok()),
                _ => Err(ToolError::invalid(format!(
                    "invalid {OUTPUT_LIMIT_ARGUMENT} {value}: give a positive number of characters, \
                     or 0 or -1 for the whole output"
                ))),
            };
        }
        let configured = self
            .settings
            .overrides
            .get(&tool.definition().name)
            .and_then(|over| over.output_limit);
        Ok(Some(
            configured
                .or(match tool.definition().truncation {
                    Truncation::Default(limit) => Some(limit),
                    Truncation::Configured | Truncation::Never => None,
                })
                .unwrap_or(self.settings.output_limit),
        ))
    }
}

/// Runs the tool, turning a panic or a cancellation into an error instead of a lost answer;
/// with the outcome the tool chose.
async fn run_guarded(
    tool: &dyn Tool,
    call: ToolCall<'_>,
    cancellation: &CancellationToken,
) -> Result<(ToolOutput, usize), ToolError> {
    let name = tool.definition().name.clone();
    let running = AssertUnwindSafe(tool.execute_to_outcome(call)).catch_unwind();
    tokio::select! {
        // Cancellation first: a call already cancelled is never started.
        biased;
        () = cancellation.cancelled() => Err(cancelled(&name)),
        outcome = running => outcome.unwrap_or_else(|panic| {
            let message = panic_message(panic.as_ref());
            tracing::error!(tool = %name, %message, "tool panicked");
            Err(ToolError::Internal(format!("tool `{name}` panicked: {message}")))
        }),
    }
}

fn cancelled(tool: &str) -> ToolError {
    ToolError::invalid(format!("the call of `{tool}` was cancelled"))
}

/// The text of a panic payload.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}
