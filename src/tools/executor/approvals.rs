//! The approval gates' bookkeeping: whether a call would ask before it runs (so that a plan
//! asks once for all its steps), the key an `ask-once` approval is remembered under, and the
//! configured fallback for a client that cannot be asked.

use serde_json::{Map, Value};

use super::{Executor, Gate};
use crate::tools::approval::{argument_shape, policy_name};
use crate::tools::truncate::OUTPUT_LIMIT_ARGUMENT;
use crate::tools::{Approved, Consent, Fallback, Policy, Stage};

impl Executor {
    /// Whether a call of `name` with these arguments, as written (references unresolved),
    /// would ask the user before it runs, and with what scope: a plan asks once for all its
    /// steps that would. An `ask-once` call already approved for this argument shape would not;
    /// one whose shape a reference may change is counted as asking.
    pub fn would_ask(&self, name: &str, arguments: &Map<String, Value>) -> Option<Approved> {
        let tool = self.tools().find(name)?;
        let policy = self.permission(tool.as_ref()).execution;
        if policy == Policy::Auto {
            return None;
        }
        let mut arguments = arguments.clone();
        arguments.remove(OUTPUT_LIMIT_ARGUMENT);
        let arguments = Value::Object(arguments);
        let scope = match tool.consent(&arguments) {
            Ok(Consent::NotNeeded) => return None,
            Ok(Consent::Asked { scope }) => scope,
            // The step fails when it runs, before anyone is asked.
            Err(_) => None,
        };
        let remembered = policy == Policy::AskOnce
            && !crate::workspace::contains_any_reference(&arguments)
            && self.workspace.is_approved(&self.remember_key(
                name,
                Stage::Execution,
                &arguments,
                scope.as_deref(),
            ));
        (!remembered).then_some(Approved { scope })
    }

    /// The key an `ask-once` approval is remembered under: the tool, the stage, the argument
    /// shape, the principal and the tool's scope.
    pub(super) fn remember_key(
        &self,
        tool: &str,
        stage: Stage,
        arguments: &Value,
        scope: Option<&str>,
    ) -> String {
        let mut remember_key = format!(
            "{tool}\u{1f}{}\u{1f}{}",
            stage.config_key(),
            argument_shape(arguments)
        );
        // Each principal answers for itself: its approvals are its own, under a key that a
        // stdio user's (no principal) cannot collide with.
        if let Some(principal) = &self.caller.principal {
            remember_key = format!("principal\u{1f}{principal}\u{1f}{remember_key}");
        }
        // A tool's approval scope (a skill's digest set) is part of what was approved.
        if let Some(scope) = scope {
            remember_key.push('\u{1f}');
            remember_key.push_str(scope);
        }
        remember_key
    }

    pub(super) fn fallback(&self, tool: &str, stage: Stage, policy: Policy) -> Gate {
        match self.settings.fallback {
            Fallback::Allow => Gate::Pass,
            Fallback::Deny => Gate::Reject(Some(format!(
                "the {stage} policy of `{tool}` is {policy} but this client can neither show an \
                 approval form (elicitation) nor retry with input (MRTR), so the call was denied; \
                 to allow it, set `[tools.{tool}] {stage} = \"auto\"` or `approval_fallback = \
                 \"allow\"` in the config file",
                stage = stage.config_key(),
                policy = policy_name(policy),
            ))),
        }
    }
}
