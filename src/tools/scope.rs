//! What `†` references read during a call: the workspace's state and variables, and, inside a
//! plan, its inputs and the results of finished steps.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use crate::json::nesting;
use crate::json::path::{Path, value_at};
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
    /// Reads a value; one nesting deeper than the limit is refused, so a reference never
    /// carries into a call what could not be stored or read back.
    fn read(&mut self, kind: Kind, path: &Path) -> Result<Option<Value>, String> {
        let found = self.read_any(kind, path)?;
        if let Some(value) = &found {
            nesting::check(value, 0).map_err(|too_deep| format!("the value there {too_deep}"))?;
        }
        Ok(found)
    }
}

impl ReferenceContext<'_> {
    fn read_any(&mut self, kind: Kind, path: &Path) -> Result<Option<Value>, String> {
        match kind {
            Kind::State => self
                .workspace
                .state_at(path)
                .map_err(|error| error.to_string()),
            Kind::Input => {
                let plan = self.plan.ok_or("†input is only available inside RunPlan")?;
                Ok(path.get(&plan.input).cloned())
            }
            Kind::Steps => {
                let plan = self.plan.ok_or("†steps is only available inside RunPlan")?;
                let (step, rest) = path.split_first().ok_or("name a step: †steps.<id>")?;
                let result = plan
                    .result(step)
                    .ok_or_else(|| format!("step `{step}` has no result (yet)"))?;
                Ok(value_at(&result, rest).cloned())
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
                    ValueKind::Json => serde_json::from_str(&variable.value).map_err(|error| {
                        format!("variable `{name}` does not hold readable JSON: {error}")
                    })?,
                };
                Ok(value_at(&value, rest).cloned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::vars::SystemClock;

    #[test]
    fn a_reference_never_carries_a_value_deeper_than_the_limit() {
        let mut deep = json!(1);
        for _ in 0..nesting::MAX_DEPTH {
            deep = json!([deep]);
        }
        let workspace = Workspace::in_memory("test", 10, Arc::new(SystemClock::new()));
        let plan = PlanScope::new(json!({"fits": deep.clone(), "deep": [deep]}));
        let mut context = ReferenceContext {
            workspace: &workspace,
            plan: Some(&plan),
        };
        let path = |text: &str| Path::parse(text).unwrap();
        assert!(context.read(Kind::Input, &path("fits")).is_ok());
        let refused = context.read(Kind::Input, &path("deep")).unwrap_err();
        assert_eq!(
            refused,
            "the value there nests 65 levels deep, deeper than the limit of 64; store it flatter"
        );
        let long_reference = format!("†input{}", ".a".repeat(100));
        assert!(
            crate::refs::dagger::parse(&long_reference)
                .unwrap_err()
                .to_string()
                .contains("deeper than the limit of 64")
        );
    }
}
