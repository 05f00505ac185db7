//! What `†` references read during a call: the workspace's state and variables, and, inside a
//! plan, its inputs and the results of finished steps.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use super::path::Path;
use crate::refs;
use crate::refs::dagger::{Context, Kind};
use crate::vars::ValueKind;
use crate::workspace::Workspace;

/// A running plan's inputs and step results.
#[derive(Debug, Default)]
pub struct PlanScope {
    pub input: Value,
    results: Mutex<HashMap<String, Value>>,
    /// What `$VAR_REF` expansions in the steps' arguments may still cost: one budget for the
    /// whole plan, as for one call.
    pub budget: refs::Budget,
}

impl PlanScope {
    pub fn new(input: Value) -> Self {
        Self {
            input,
            results: Mutex::default(),
            budget: refs::Budget::default(),
        }
    }

    pub fn record(&self, step: &str, result: Value) {
        self.results
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(step.to_owned(), result);
    }

    pub fn result(&self, step: &str) -> Option<Value> {
        self.results
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(step)
            .cloned()
    }
}

/// The reading side of one call.
pub struct ReferenceContext<'a> {
    pub workspace: &'a Workspace,
    pub plan: Option<&'a PlanScope>,
}

impl Context for ReferenceContext<'_> {
    fn read(&mut self, kind: Kind, path: &[String]) -> Result<Option<Value>, String> {
        match kind {
            Kind::State => {
                let path = if path.is_empty() {
                    Path::root()
                } else {
                    Path::parse(&path.join(".")).map_err(|error| error.to_string())?
                };
                self.workspace
                    .state_at(&path)
                    .map_err(|error| error.to_string())
            }
            Kind::Input => {
                let plan = self.plan.ok_or("†input is only available inside RunPlan")?;
                Ok(follow(&plan.input, path))
            }
            Kind::Steps => {
                let plan = self.plan.ok_or("†steps is only available inside RunPlan")?;
                let (step, rest) = path.split_first().ok_or("name a step: †steps.<id>")?;
                let result = plan
                    .result(step)
                    .ok_or_else(|| format!("step `{step}` has no result (yet)"))?;
                Ok(follow(&result, rest))
            }
            Kind::Var => {
                let (name, rest) = path.split_first().ok_or("name a variable: †var.<name>")?;
                let variable = self
                    .workspace
                    .get(name)
                    .map_err(|error| error.to_string())?;
                let Some(variable) = variable else {
                    return Ok(None);
                };
                let value = match variable.kind {
                    ValueKind::Text if rest.is_empty() => Value::String(variable.value.to_string()),
                    ValueKind::Text => {
                        return Err(format!(
                            "variable `{name}` holds text; a path needs a JSON value"
                        ));
                    }
                    ValueKind::Json => {
                        serde_json::from_str(&variable.value).map_err(|error| error.to_string())?
                    }
                };
                Ok(follow(&value, rest))
            }
        }
    }
}

fn follow(document: &Value, segments: &[String]) -> Option<Value> {
    if segments.is_empty() {
        return Some(document.clone());
    }
    Path::parse(&segments.join("."))
        .ok()?
        .get(document)
        .cloned()
}
