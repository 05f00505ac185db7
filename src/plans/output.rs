//! `_outputPath` (`docs/state-and-plans.md`): where a call's result is written. `†state.a.b` writes the result
//! there; `A || B` writes a success to `A` and a tool error to `B` (the error is then data and
//! the call does not fail); `A && B` writes the same result to every path. Targets are
//! `†state.<path>` or `†var.<name>`.

use serde_json::Value;

use crate::json::path::Path;
use crate::refs::dagger::DAGGER;
use crate::vars::{NewVariable, VarType, encode_value};
use crate::workspace::Workspace;

/// Where one result goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    State(Path),
    Variable(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::State(path) => write!(formatter, "{DAGGER}state.{path}"),
            Self::Variable(name) => write!(formatter, "{DAGGER}var.{name}"),
        }
    }
}

/// A parsed `_outputPath`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputPath {
    /// One or more targets (`A && B`) for a success; a failure stays a failure.
    All(Vec<Target>),
    /// `A || B`: success to the first, a tool error (as data) to the second.
    Branch { success: Target, failure: Target },
}

impl OutputPath {
    pub fn parse(text: &str) -> Result<Self, String> {
        let has_or = text.contains("||");
        let has_and = text.contains("&&");
        if has_or && has_and {
            return Err(format!(
                "_outputPath `{text}` mixes `||` and `&&`; use one of them"
            ));
        }
        if has_or {
            let parts: Vec<&str> = text.split("||").collect();
            let [success, failure] = parts.as_slice() else {
                return Err(format!(
                    "_outputPath `{text}`: `||` takes exactly two paths, success then failure"
                ));
            };
            return Ok(Self::Branch {
                success: target(success)?,
                failure: target(failure)?,
            });
        }
        let targets = text
            .split("&&")
            .map(target)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::All(targets))
    }

    /// Every target this output path may write, for plan validation.
    pub fn targets(&self) -> Vec<&Target> {
        match self {
            Self::All(targets) => targets.iter().collect(),
            Self::Branch { success, failure } => vec![success, failure],
        }
    }

    /// Whether a tool error is written as data instead of failing the call.
    pub fn catches_failure(&self) -> bool {
        matches!(self, Self::Branch { .. })
    }

    /// The targets for an outcome.
    pub fn targets_for(&self, succeeded: bool) -> Vec<&Target> {
        match self {
            Self::All(targets) if succeeded => targets.iter().collect(),
            Self::All(_) => Vec::new(),
            Self::Branch { success, failure } => vec![if succeeded { success } else { failure }],
        }
    }
}

fn target(text: &str) -> Result<Target, String> {
    let text = text.trim();
    let body = text.strip_prefix(DAGGER).ok_or_else(|| {
        format!("_outputPath target `{text}` must start with {DAGGER}, e.g. {DAGGER}state.result")
    })?;
    if let Some(path) = body.strip_prefix("state.") {
        return Path::parse(path)
            .map(Target::State)
            .map_err(|error| format!("_outputPath `{text}`: {error}"));
    }
    if let Some(name) = body.strip_prefix("var.") {
        crate::vars::validate_name(name)
            .map_err(|error| format!("_outputPath `{text}`: {error}"))?;
        return Ok(Target::Variable(name.to_owned()));
    }
    Err(format!(
        "_outputPath target `{text}` must be {DAGGER}state.<path> or {DAGGER}var.<name>"
    ))
}

/// Writes `value` to every target; returns the targets written, as text.
pub fn write(
    workspace: &Workspace,
    targets: &[&Target],
    value: &Value,
) -> Result<Vec<String>, String> {
    let mut written = Vec::new();
    for target in targets {
        match target {
            Target::State(path) => {
                workspace
                    .write_state(path, value)
                    .map_err(|error| error.to_string())??;
            }
            Target::Variable(name) => {
                let (text, kind) = encode_value(value.clone());
                let mut variable = NewVariable::text(name.clone(), text, VarType::LlmAdd);
                variable.kind = kind;
                workspace
                    .insert(variable)
                    .map_err(|error| error.to_string())?;
            }
        }
        written.push(target.to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn parses_single_branch_and_fan_out() {
        let state = |path: &str| Target::State(Path::parse(path).unwrap());
        assert_eq!(
            OutputPath::parse("†state.a.b"),
            Ok(OutputPath::All(vec![state("a.b")]))
        );
        assert_eq!(
            OutputPath::parse("†state.ok || †state.failed"),
            Ok(OutputPath::Branch {
                success: state("ok"),
                failure: state("failed")
            })
        );
        assert_eq!(
            OutputPath::parse("†state.user.summary && †var.summary"),
            Ok(OutputPath::All(vec![
                state("user.summary"),
                Target::Variable("summary".into())
            ]))
        );
    }

    #[test]
    fn refuses_what_it_cannot_write() {
        assert!(
            OutputPath::parse("state.a")
                .unwrap_err()
                .contains("must start with †")
        );
        assert!(
            OutputPath::parse("†input.a")
                .unwrap_err()
                .contains("†state.<path> or †var.<name>")
        );
        assert!(
            OutputPath::parse("†state.a || †state.b && †state.c")
                .unwrap_err()
                .contains("mixes")
        );
        assert!(
            OutputPath::parse("†state.a || †state.b || †state.c")
                .unwrap_err()
                .contains("exactly two")
        );
    }
}
