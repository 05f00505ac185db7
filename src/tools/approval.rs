//! Approval policies (`docs/executor.md#approvals`): whether a call needs the user's consent
//! before it runs, and separately before its result reaches the model.
//!
//! Asking is abstract here: the executor poses an [`ApprovalQuestion`] through [`Asking`], which
//! the MCP adapter backs with elicitation (the question is awaited), with MRTR `input_required`
//! (the question is returned and the call retried with the answer), or with nothing (the
//! configured [`Fallback`] decides).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::Value;

use super::truncate_content;

// The approval words are the config file's own: one definition serves the file and the executor.
pub use crate::config::{Fallback, Policy};

/// A tool's approval policies for running it and for showing its result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Permission {
    pub execution: Policy,
    pub result: Policy,
}

/// Which gate is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    Execution,
    Result,
}

impl Stage {
    /// The key of this question in an MRTR `inputRequests` map.
    pub fn input_key(self) -> &'static str {
        match self {
            Self::Execution => "approve-execution",
            Self::Result => "approve-result",
        }
    }

    pub fn config_key(self) -> &'static str {
        match self {
            Self::Execution => "execution",
            Self::Result => "result",
        }
    }
}

/// A question for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalQuestion {
    pub tool: String,
    pub stage: Stage,
    /// What the user is shown: the tool and its arguments, or the result to release.
    pub message: String,
}

/// The user's decision. A rejection's reason is passed back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// `remember`: the user chose "from now on" (an `ask-once` approval is kept for later
    /// calls it covers) rather than "just this call".
    Approved {
        remember: bool,
    },
    Rejected {
        reason: Option<String>,
    },
}

/// Asks the user and waits for the answer (elicitation). `None` means the client could not be
/// asked after all; the fallback then applies.
pub trait Asker: Send + Sync {
    fn ask<'a>(&'a self, question: &'a ApprovalQuestion) -> BoxFuture<'a, Option<Answer>>;
}

/// How the current request can reach the user.
pub enum Asking<'a> {
    /// Ask and wait (initialize-era sessions whose client declared elicitation).
    Direct(&'a dyn Asker),
    /// Answers arrive with a retried request (2026-07-28 MRTR); a missing answer makes the
    /// executor return the question instead of a result.
    Deferred(&'a HashMap<Stage, Answer>),
    /// The client cannot be asked.
    Unavailable,
}

/// How much of a question's payload the user is shown.
const QUESTION_PREVIEW_CHARS: usize = 2_000;

/// The one wording of the question asked before a call runs: a line a person can approve at a
/// glance — the tool's own (`asked`), or whether to run the tool with its arguments summarised
/// ([`summary`]: never a dump of their JSON) — and, for `ask-once`, a line saying what
/// `remember` allows.
pub(super) fn execution_question(
    tool: &str,
    arguments: &Value,
    policy: Policy,
    scope: Option<&str>,
    asked: Option<String>,
) -> ApprovalQuestion {
    let mut message = asked.unwrap_or_else(|| {
        let summary = summary(arguments);
        if summary.is_empty() {
            format!("Allow `{tool}` to run?")
        } else {
            format!("Allow `{tool}` to run with {summary}?")
        }
    });
    if policy == Policy::AskOnce {
        let covered = scope.map_or_else(String::new, |scope| format!(", for {scope}"));
        write!(
            message,
            "\nTick `remember` to also allow, without asking, every later `{tool}` call with \
             arguments {}{covered}.",
            argument_shape(arguments)
        )
        .ok();
    }
    ApprovalQuestion {
        tool: tool.to_owned(),
        stage: Stage::Execution,
        message,
    }
}

/// An execution the user approved before the call: a step of a plan approved as a whole. The
/// execution gate lets the call run without asking when its consent names the same scope as
/// when the plan was approved (a script whose files changed since asks again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    /// The scope the step's consent named when the plan was approved; `None` covers any.
    pub scope: Option<String>,
}

impl Approved {
    pub(super) fn covers(&self, scope: Option<&str>) -> bool {
        self.scope.is_none() || self.scope.as_deref() == scope
    }
}

/// One step of a plan, as the plan's approval shows it: its arguments as written.
pub struct PlannedCall<'a> {
    pub step: &'a str,
    pub tool: &'a str,
    pub arguments: &'a Value,
    /// The `†` and `$VAR_REF` references in the arguments, as written.
    pub references: Vec<String>,
}

/// Characters of a step's arguments a plan's question shows.
const SHOWN_STEP_CHARS: usize = 300;

/// The one question asked before a plan runs: every step that needs approval with its tool and
/// its arguments as written, the references in them named as such (resolved only when the step
/// runs), and what the answer covers.
pub fn plan_question(tool: &str, asked: &[PlannedCall<'_>], steps: usize) -> ApprovalQuestion {
    let mut message = format!(
        "Run this plan? {} of its {steps} steps need your approval; approving runs exactly these \
         steps of this plan without asking again (a result that needs approval is still asked \
         about when it arrives):",
        asked.len()
    );
    for call in asked {
        let arguments = crate::text::shorten(&call.arguments.to_string(), SHOWN_STEP_CHARS);
        write!(
            message,
            "\n- step `{}`: `{}` with {arguments}",
            call.step, call.tool
        )
        .ok();
        if !call.references.is_empty() {
            write!(
                message,
                " (references, resolved when the step runs: {})",
                call.references.join(", ")
            )
            .ok();
        }
    }
    ApprovalQuestion {
        tool: tool.to_owned(),
        stage: Stage::Execution,
        message: preview(&message),
    }
}

/// How many characters of a string argument a question shows.
const SHOWN_STRING_CHARS: usize = 80;

/// A call's arguments in a few words: `name "runner", messages (40 items), template {2 keys}`;
/// strings past [`SHOWN_STRING_CHARS`] are cut, saying how long they are.
pub(super) fn summary(arguments: &Value) -> String {
    let Value::Object(object) = arguments else {
        return brief(arguments);
    };
    object
        .iter()
        .map(|(key, value)| format!("{key} {}", brief(value)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn brief(value: &Value) -> String {
    match value {
        Value::String(text) => {
            let length = text.chars().count();
            if length <= SHOWN_STRING_CHARS {
                Value::String(text.clone()).to_string()
            } else {
                let shown: String = text.chars().take(SHOWN_STRING_CHARS).collect();
                format!("{}… ({length} characters)", Value::String(shown))
            }
        }
        Value::Array(items) => format!("({} item{})", items.len(), plural(items.len())),
        Value::Object(members) => format!("{{{} key{}}}", members.len(), plural(members.len())),
        other => other.to_string(),
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

pub(super) fn preview(text: &str) -> String {
    match truncate_content(text, QUESTION_PREVIEW_CHARS) {
        Some(cut) => cut.text,
        None => text.to_owned(),
    }
}

pub(super) fn policy_name(policy: Policy) -> &'static str {
    match policy {
        Policy::Auto => "auto",
        Policy::AskOnce => "ask-once",
        Policy::AskAlways => "ask-always",
    }
}

/// The shape of a call's arguments: top-level keys with the JSON type of each value. An
/// `ask-once` approval is remembered per tool and shape, so a tool approved for
/// `{path: string}` asks again when called with `{path: string, force: boolean}`.
pub(super) fn argument_shape(arguments: &Value) -> String {
    let Value::Object(object) = arguments else {
        return json_type(arguments).to_owned();
    };
    let mut keys: Vec<_> = object
        .iter()
        .map(|(key, value)| format!("{key}:{}", json_type(value)))
        .collect();
    keys.sort();
    format!("{{{}}}", keys.join(","))
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// How many calls may wait for an answer at once before the oldest digests are forgotten.
const ASKED_LIMIT: usize = 64;

/// What each call of a script-running tool was asked about: the digest of the files its
/// approval is bound to, by the call's arguments, from the consent hook until the call runs, so
/// that a file changed while the user was being asked is not run on the strength of that
/// approval (`SkillRunScript`, script tools).
#[derive(Default)]
pub struct Asked(Mutex<HashMap<String, String>>);

impl Asked {
    /// Remembers the digest a call's consent is asked with, by a key of its arguments.
    pub fn remember(&self, key: String, digest: String) {
        let mut asked = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if asked.len() >= ASKED_LIMIT {
            asked.clear();
        }
        asked.insert(key, digest);
    }

    /// The digest the call was asked with, if it was asked.
    pub fn take(&self, key: &str) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn shape_lists_sorted_keys_with_value_types() {
        assert_eq!(
            argument_shape(&json!({"path": "a", "force": true, "n": 1, "x": null})),
            "{force:boolean,n:number,path:string,x:null}"
        );
        assert_eq!(argument_shape(&json!({})), "{}");
    }

    #[test]
    fn policies_parse_from_config_words() {
        let parsed: Vec<Policy> =
            serde_json::from_value(json!(["auto", "ask-once", "ask-always", "never"])).unwrap();
        assert_eq!(
            parsed,
            [
                Policy::Auto,
                Policy::AskOnce,
                Policy::AskAlways,
                Policy::Auto
            ]
        );
    }
}
