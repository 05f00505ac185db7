//! Applying one AI message to a snapshot: passive functions before the active
//! calls (by `order`), the active calls (by position in the text), passive functions after. A
//! call that fails is skipped and recorded; the others still apply, and so does a call of an
//! enabled syntax that names no function ([`super::unknown`]), which is recorded too. The same
//! snapshot, text and library always give the same result. A dry run ([`apply_traced`]) also
//! records every step and the state after it. A user function's result may not nest deeper than
//! [`nesting::MAX_DEPTH`], like any other write. The calls of one text share a time budget
//! (`Limits::text_time`) and stop when the caller's call is cancelled, between two calls and
//! inside one; what did not run is listed as one error.

use std::cell::OnceCell;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use super::builtins::Builtin;
use super::calls::{self, Action, Syntaxes};
use super::functions::{Active, VarFunction, split_pattern};
use super::javascript::{Engine, Invocation};
use super::literal::decode_capture;
use super::unknown::{self, Unknown};
use crate::json::nesting;
use crate::store::tree::Changed;

/// The `function` of the error that lists the calls a halted text did not run.
const NOT_RUN: &str = "(not run)";

/// A call that failed, as the result lists it (a client shows it as a warning).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallError {
    /// The function's name.
    pub function: String,
    /// Where the call starts in the message, in characters (absent for passive functions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    pub message: String,
    /// For a call that names no known function: the nearest known name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

impl CallError {
    fn new(function: impl Into<String>, position: Option<usize>, message: String) -> Self {
        Self {
            function: function.into(),
            position,
            message,
            suggestion: None,
        }
    }
}

/// When a step of a dry run ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A passive function before the calls.
    BeforeActive,
    /// A call found in the text.
    Call,
    /// A call of an enabled syntax that named no function the library ran.
    Unknown,
    /// A passive function after the calls.
    AfterActive,
}

/// One step of a dry run: what ran, on what, and the state after it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// The function as the text names it (`SET`, `_.set`, `JSONPatch`) or the passive function's name.
    pub function: String,
    pub kind: StepKind,
    /// Where the call starts in the text, in characters (absent for passive functions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    /// The arguments as parsed (absent for passive functions and calls that could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<Value>>,
    /// Why this step failed or did nothing: indexes into the answer's `errors`; empty if it applied.
    pub errors: Vec<usize>,
    /// The state after this step.
    #[schemars(extend("type" = "object"))]
    pub snapshot: Value,
}

/// What user functions see as `context`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageContext {
    pub chat_file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swipe_id: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub character_id: Option<String>,
    /// The message's send time in milliseconds since 1970, when known: `Date.now()` in user
    /// functions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_date: Option<f64>,
}

/// One call to run.
enum Planned {
    Native {
        name: String,
        position: usize,
        end: usize,
        action: Action,
    },
    Script {
        function: Arc<VarFunction>,
        position: usize,
        end: usize,
        arguments: Vec<Value>,
    },
    Unknown(Unknown),
}

impl Planned {
    fn position(&self) -> usize {
        match self {
            Self::Native { position, .. } | Self::Script { position, .. } => *position,
            Self::Unknown(call) => call.position,
        }
    }

    fn end(&self) -> usize {
        match self {
            Self::Native { end, .. } | Self::Script { end, .. } => *end,
            Self::Unknown(call) => call.position,
        }
    }

    /// The call as a dry run shows it: name, kind and arguments.
    fn describe(&self) -> (String, StepKind, Option<Vec<Value>>) {
        match self {
            Self::Native { name, action, .. } => {
                let arguments = match action {
                    Action::Builtin(_, arguments) => Some(arguments.clone()),
                    Action::Patch(operations) => {
                        Some(operations.iter().map(patch_operation).collect())
                    }
                    Action::Malformed(_) => None,
                };
                (name.clone(), StepKind::Call, arguments)
            }
            Self::Script {
                function,
                arguments,
                ..
            } => (
                function.name.clone(),
                StepKind::Call,
                Some(arguments.clone()),
            ),
            Self::Unknown(call) => (call.name.clone(), StepKind::Unknown, None),
        }
    }
}

fn patch_operation(operation: &super::builtins::PatchOperation) -> Value {
    let mut shown = serde_json::Map::new();
    shown.insert("op".to_owned(), Value::String(operation.op.clone()));
    shown.insert("path".to_owned(), Value::String(operation.path.clone()));
    if let Some(value) = &operation.value {
        shown.insert("value".to_owned(), value.clone());
    }
    if let Some(from) = &operation.from {
        shown.insert("from".to_owned(), Value::String(from.clone()));
    }
    Value::Object(shown)
}

/// What applying one message did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The calls that failed (and were skipped).
    pub errors: Vec<CallError>,
    /// Where the snapshot changed.
    pub changed: Changed,
}

/// Applies `text`'s calls and the passive functions to `snapshot`; `cancelled` says when the
/// caller's call was cancelled.
pub fn apply(
    engine: &Engine,
    active: &Active,
    snapshot: &mut Value,
    text: &str,
    (context, cancelled): (&MessageContext, &dyn Fn() -> bool),
) -> Outcome {
    apply_traced(engine, active, snapshot, text, (context, cancelled), None)
}

/// [`apply`], recording each step and the state after it in `trace` when one is given.
pub fn apply_traced(
    engine: &Engine,
    active: &Active,
    snapshot: &mut Value,
    text: &str,
    (context, cancelled): (&MessageContext, &dyn Fn() -> bool),
    mut trace: Option<&mut Vec<Step>>,
) -> Outcome {
    let mut outcome = Outcome::default();
    let context = ScriptContext {
        message: context,
        json: OnceCell::new(),
        until: Instant::now() + engine.limits().text_time,
        budget: engine.limits().text_time,
        cancelled,
    };
    let characters = |position: usize| text[..position].chars().count();
    let run_passive = |functions: &[Arc<VarFunction>],
                       kind: StepKind,
                       snapshot: &mut Value,
                       outcome: &mut Outcome,
                       trace: &mut Option<&mut Vec<Step>>| {
        for (index, function) in functions.iter().enumerate() {
            if context.halted(functions.len() - index, outcome) {
                return;
            }
            let failed_before = outcome.errors.len();
            run_script(engine, function, snapshot, &[], &context, None, outcome);
            if let Some(trace) = trace.as_deref_mut() {
                trace.push(step(
                    &function.name,
                    kind,
                    None,
                    None,
                    outcome,
                    failed_before,
                    snapshot,
                ));
            }
        }
    };
    run_passive(
        &active.before,
        StepKind::BeforeActive,
        snapshot,
        &mut outcome,
        &mut trace,
    );
    let planned = in_text_order(engine, active, text, &mut outcome.errors);
    let count = planned.len();
    for (index, call) in planned.into_iter().enumerate() {
        if context.halted(count - index, &mut outcome) {
            break;
        }
        let failed_before = outcome.errors.len();
        let position = characters(call.position());
        let described = trace.is_some().then(|| call.describe());
        run_planned(engine, call, snapshot, text, &context, &mut outcome);
        if let (Some(trace), Some((name, kind, arguments))) = (trace.as_deref_mut(), described) {
            trace.push(step(
                &name,
                kind,
                Some(position),
                arguments,
                &outcome,
                failed_before,
                snapshot,
            ));
        }
    }
    run_passive(
        &active.after,
        StepKind::AfterActive,
        snapshot,
        &mut outcome,
        &mut trace,
    );
    outcome
}

/// The calls of `text` in text order: the library's, each outermost, then the unknown ones.
fn in_text_order(
    engine: &Engine,
    active: &Active,
    text: &str,
    errors: &mut Vec<CallError>,
) -> Vec<Planned> {
    let mut planned = plan(engine, active, text, errors);
    planned.sort_by_key(Planned::position);
    // A user pattern's match inside a built-in call's string (say) is that call's text.
    calls::keep_outermost(&mut planned, |call| (call.position(), call.end()));
    let claimed: Vec<(usize, usize)> = planned
        .iter()
        .map(|call| (call.position(), call.end()))
        .collect();
    planned.extend(
        unknown::find(text, &claimed, &active.known)
            .into_iter()
            .map(Planned::Unknown),
    );
    planned.sort_by_key(Planned::position);
    planned
}

fn step(
    function: &str,
    kind: StepKind,
    position: Option<usize>,
    arguments: Option<Vec<Value>>,
    outcome: &Outcome,
    failed_before: usize,
    snapshot: &Value,
) -> Step {
    Step {
        function: function.to_owned(),
        kind,
        position,
        arguments,
        errors: (failed_before..outcome.errors.len()).collect(),
        snapshot: snapshot.clone(),
    }
}

fn plan(engine: &Engine, active: &Active, text: &str, errors: &mut Vec<CallError>) -> Vec<Planned> {
    let mut syntaxes = Syntaxes::default();
    let mut planned = Vec::new();
    let mut shared_text: Option<Arc<str>> = None;
    for function in &active.calls {
        match function.builtin {
            Some(Builtin::Mvu) => syntaxes.mvu = true,
            Some(Builtin::JsonPatch) => syntaxes.json_patch = true,
            Some(builtin) => syntaxes.callable.push(builtin),
            None => {
                let Some(pattern) = function.pattern.as_deref() else {
                    continue;
                };
                let (source, flags) = split_pattern(pattern);
                let haystack = shared_text.get_or_insert_with(|| Arc::from(text));
                match engine.find(&Arc::from(source), flags, haystack) {
                    Ok(matches) => planned.extend(matches.into_iter().map(|found| {
                        Planned::Script {
                            function: Arc::clone(function),
                            position: found.position,
                            end: found.position + found.length,
                            arguments: found
                                .groups
                                .iter()
                                .map(|group| group.as_deref().map_or(Value::Null, decode_capture))
                                .collect(),
                        }
                    })),
                    Err(message) => errors.push(CallError::new(
                        function.name.clone(),
                        None,
                        format!("its pattern cannot run: {message}"),
                    )),
                }
            }
        }
    }
    planned.extend(
        calls::find(text, &syntaxes)
            .into_iter()
            .map(|found| Planned::Native {
                name: found.name,
                position: found.position,
                end: found.end,
                action: found.action,
            }),
    );
    planned
}

fn run_planned(
    engine: &Engine,
    call: Planned,
    snapshot: &mut Value,
    text: &str,
    context: &ScriptContext<'_>,
    outcome: &mut Outcome,
) {
    let characters = |position: usize| Some(text[..position].chars().count());
    match call {
        Planned::Native {
            name,
            position,
            action,
            ..
        } => {
            let errors = &mut outcome.errors;
            let mut fail = |message: String| {
                errors.push(CallError::new(name.clone(), characters(position), message));
            };
            match action {
                Action::Builtin(builtin, arguments) => match builtin.apply(snapshot, &arguments) {
                    Ok(path) => outcome.changed.path(&path),
                    Err(error) => fail(error.to_string()),
                },
                Action::Patch(operations) => {
                    for operation in operations {
                        match operation.apply(snapshot) {
                            Ok(paths) => paths.iter().for_each(|path| outcome.changed.path(path)),
                            Err(error) => fail(error.to_string()),
                        }
                    }
                }
                Action::Malformed(message) => fail(message),
            }
        }
        Planned::Script {
            function,
            position,
            arguments,
            ..
        } => {
            run_script(
                engine,
                &function,
                snapshot,
                &arguments,
                context,
                characters(position),
                outcome,
            );
        }
        Planned::Unknown(call) => outcome.errors.push(CallError {
            function: call.name,
            position: characters(call.position),
            message: call.message,
            suggestion: call.suggestion,
        }),
    }
}

fn run_script(
    engine: &Engine,
    function: &VarFunction,
    snapshot: &mut Value,
    arguments: &[Value],
    context: &ScriptContext<'_>,
    position: Option<usize>,
    outcome: &mut Outcome,
) {
    let context_json = context.json();
    let invocation = Invocation {
        source: Arc::from(function.executor.as_str()),
        snapshot: snapshot.to_string(),
        arguments: Value::Array(arguments.to_vec()).to_string(),
        context: context_json.to_owned(),
        seed: seed(&[
            context_json,
            &function.id,
            &position.unwrap_or(usize::MAX).to_string(),
        ]),
        now_millis: context.message.send_date.unwrap_or(0.0),
    };
    let result = engine
        .run(&invocation, context.until, context.cancelled)
        .and_then(|json| {
            let changed: Value = serde_json::from_str(&json)
                .map_err(|error| format!("returned a snapshot that is not JSON: {error}"))?;
            nesting::check(&changed, 0)
                .map_err(|too_deep| format!("returned a snapshot that {too_deep}"))?;
            Ok(changed)
        });
    match result {
        Ok(changed) => {
            *snapshot = changed;
            outcome.changed.everything();
        }
        Err(message) => {
            outcome
                .errors
                .push(CallError::new(function.name.clone(), position, message));
        }
    }
}

/// The message context with its JSON, made on first use: messages whose calls are all
/// built-ins never serialize it; and when the text's calls must stop.
struct ScriptContext<'a> {
    message: &'a MessageContext,
    json: OnceCell<String>,
    /// The end of the text's time budget, and the budget.
    until: Instant,
    budget: std::time::Duration,
    cancelled: &'a dyn Fn() -> bool,
}

impl ScriptContext<'_> {
    /// Whether the text's calls must stop (its call was cancelled, or its budget is spent); if
    /// so, the `left` calls not run are listed as one error, once.
    fn halted(&self, left: usize, outcome: &mut Outcome) -> bool {
        let reason = if (self.cancelled)() {
            "the call was cancelled".to_owned()
        } else if Instant::now() >= self.until {
            format!(
                "the calls of this text ran past their budget of {} ms together",
                self.budget.as_millis()
            )
        } else {
            return false;
        };
        let already = outcome
            .errors
            .last()
            .is_some_and(|error| error.function == NOT_RUN);
        if !already {
            outcome.errors.push(CallError::new(
                NOT_RUN,
                None,
                format!("{left} calls were not run: {reason}"),
            ));
        }
        true
    }
    fn json(&self) -> &str {
        self.json
            .get_or_init(|| serde_json::to_string(self.message).unwrap_or_else(|_| "{}".to_owned()))
    }
}

/// A stable 32-bit seed (FNV-1a) for `Math.random`.
fn seed(parts: &[&str]) -> i32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in parts.iter().flat_map(|part| part.bytes().chain([0])) {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    i32::from_ne_bytes(hash.to_ne_bytes())
}
