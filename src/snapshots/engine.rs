//! Applying one AI message to a snapshot (seed 002 §3.3): passive functions before the active
//! calls (by `order`), the active calls (by position in the text), passive functions after. A
//! call that fails is skipped and recorded; the others still apply. The same snapshot, text
//! and library always give the same result.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::builtins::Builtin;
use super::calls::{self, Action, Syntaxes};
use super::functions::{Active, VarFunction, split_pattern};
use super::javascript::{Engine, Invocation};
use super::literal::decode_capture;

/// A call that failed, as the result lists it (the seed's warning toast).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallError {
    /// The function's name.
    pub function: String,
    /// Where the call starts in the message, in characters (absent for passive functions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    pub message: String,
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
}

impl Planned {
    fn position(&self) -> usize {
        match self {
            Self::Native { position, .. } | Self::Script { position, .. } => *position,
        }
    }

    fn end(&self) -> usize {
        match self {
            Self::Native { end, .. } | Self::Script { end, .. } => *end,
        }
    }
}

/// Applies `text`'s calls and the passive functions to `snapshot`; returns the failures.
pub fn apply(
    engine: &Engine,
    active: &Active,
    snapshot: &mut Value,
    text: &str,
    context: &MessageContext,
) -> Vec<CallError> {
    let mut errors = Vec::new();
    let mut context_json: Option<String> = None;
    let mut context_text = || {
        context_json
            .get_or_insert_with(|| {
                serde_json::to_string(context).unwrap_or_else(|_| "{}".to_owned())
            })
            .clone()
    };
    for function in &active.before {
        run_script(
            engine,
            function,
            snapshot,
            &[],
            &context_text(),
            context,
            None,
            &mut errors,
        );
    }
    let mut planned = plan(engine, active, text, &mut errors);
    if !planned.is_empty() {
        let context_json = context_text();
        planned.sort_by_key(Planned::position);
        // A call that starts inside another (a user pattern's match inside a built-in call's
        // string, say) is part of that call's text.
        let mut claimed = 0;
        planned.retain(|call| {
            if call.position() < claimed {
                return false;
            }
            claimed = claimed.max(call.end());
            true
        });
        for call in planned {
            run_planned(
                engine,
                call,
                snapshot,
                text,
                (&context_json, context),
                &mut errors,
            );
        }
    }
    for function in &active.after {
        run_script(
            engine,
            function,
            snapshot,
            &[],
            &context_text(),
            context,
            None,
            &mut errors,
        );
    }
    errors
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
                    Err(message) => errors.push(CallError {
                        function: function.name.clone(),
                        position: None,
                        message: format!("its pattern cannot run: {message}"),
                    }),
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
    (context_json, context): (&str, &MessageContext),
    errors: &mut Vec<CallError>,
) {
    let characters = |position: usize| Some(text[..position].chars().count());
    match call {
        Planned::Native {
            name,
            position,
            action,
            ..
        } => {
            let mut fail = |message: String| {
                errors.push(CallError {
                    function: name.clone(),
                    position: characters(position),
                    message,
                });
            };
            match action {
                Action::Builtin(builtin, arguments) => {
                    if let Err(message) = builtin.apply(snapshot, &arguments) {
                        fail(message);
                    }
                }
                Action::Patch(operations) => {
                    for operation in operations {
                        if let Err(message) = operation.apply(snapshot) {
                            fail(message);
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
                context_json,
                context,
                characters(position),
                errors,
            );
        }
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "one call site each; a struct would only rename them"
)]
fn run_script(
    engine: &Engine,
    function: &VarFunction,
    snapshot: &mut Value,
    arguments: &[Value],
    context_json: &str,
    context: &MessageContext,
    position: Option<usize>,
    errors: &mut Vec<CallError>,
) {
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
        now_millis: context.send_date.unwrap_or(0.0),
    };
    let outcome = engine.run(&invocation).and_then(|json| {
        serde_json::from_str(&json)
            .map_err(|error| format!("returned a snapshot that is not JSON: {error}"))
    });
    match outcome {
        Ok(changed) => *snapshot = changed,
        Err(message) => errors.push(CallError {
            function: function.name.clone(),
            position,
            message,
        }),
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
