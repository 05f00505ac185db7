//! `_outputPath` (`docs/state-and-plans.md`), the last step of the pipeline: where a call's
//! result is written. `†state.a.b` writes the result there; `A || B || C` writes it to the
//! branch of the outcome the tool chose (a built-in tool's are success and error: a tool error
//! is then data and the call does not fail); `A && B` writes the same result to every path of a
//! branch. Targets are `†state.<path>` or `†var.<name>`.
//!
//! The executor takes the meta-argument out of a call (or the value a tool pins with `const`
//! in its schema), and writes a result, or a caught failure, to its targets.

use std::fmt::Write as _;

use serde_json::Value;

use super::result::{ExecuteResult, ExecuteStatus};
use super::{Outcomes, Tool, ToolDefinition, ToolError, ToolOutput};
use crate::json::path::Path;
use crate::refs::dagger::DAGGER;
use crate::vars::{NewVariable, VarType, encode_value};
use crate::workspace::Workspace;

/// Characters of a caller's `_outputPath` an error quotes: the rest is the caller's own text.
const QUOTED_CHARS: usize = 80;

/// The meta-argument naming where a call's result is written.
pub const OUTPUT_PATH_ARGUMENT: &str = "_outputPath";

/// Takes `_outputPath` out of the arguments; a `const` in the tool's schema wins. A path that
/// targets a rule variable is refused.
pub(super) fn take_output_path(
    workspace: &Workspace,
    tool: &dyn Tool,
    arguments: &mut Value,
) -> Result<Option<OutputPath>, ToolError> {
    let given = arguments
        .as_object_mut()
        .and_then(|object| object.remove(OUTPUT_PATH_ARGUMENT));
    let pinned = pinned(tool.definition()).cloned();
    let Some(text) = pinned.or(given) else {
        return Ok(None);
    };
    let Value::String(text) = text else {
        return Err(ToolError::invalid(format!(
            "{OUTPUT_PATH_ARGUMENT} must be a string such as \"†state.result\", not {}",
            crate::text::shorten(&text.to_string(), QUOTED_CHARS)
        )));
    };
    let output_path = OutputPath::parse(&text).map_err(ToolError::Invalid)?;
    let definition = tool.definition();
    (output_path.check_outcomes(&definition.name, &definition.outcomes))
        .map_err(ToolError::Invalid)?;
    refuse_rule_targets(workspace, &output_path)?;
    Ok(Some(output_path))
}

/// The `_outputPath` a tool pins with `const` in its input schema: where every call's result
/// goes, whatever the call says (a script tool's manifest declares its writes this way).
pub fn pinned(definition: &ToolDefinition) -> Option<&Value> {
    definition
        .input_schema
        .get("properties")
        .and_then(|properties| properties.get(OUTPUT_PATH_ARGUMENT))
        .and_then(|property| property.get("const"))
}

/// Rule variables are read-only, to `_outputPath` as to `WriteVar`: the call is refused before
/// the tool runs, so nothing is done whose result could not be kept.
fn refuse_rule_targets(workspace: &Workspace, output_path: &OutputPath) -> Result<(), ToolError> {
    for target in output_path.targets() {
        if let Target::Variable(name) = target
            && workspace
                .peek(name)
                .is_some_and(|variable| variable.var_type == VarType::Rule)
        {
            return Err(ToolError::invalid(format!(
                "{OUTPUT_PATH_ARGUMENT} target `{target}` is a rule (RULE) and cannot be \
                 changed; write to another name, e.g. {DAGGER}var.{}_copy",
                name.rsplit('/').next().unwrap_or(name)
            )));
        }
    }
    Ok(())
}

/// Writes a result that passed the result gate to its output path and reports the paths.
pub(super) fn deliver(
    workspace: &Workspace,
    mut result: ExecuteResult,
    output_path: Option<OutputPath>,
) -> ExecuteResult {
    let Some(output_path) = output_path else {
        return result;
    };
    let Some(value) = result.data.as_ref().map(ToolOutput::value) else {
        return result;
    };
    let targets = output_path.branch(result.outcome);
    if targets.is_empty() {
        return result;
    }
    match write(workspace, targets, &value) {
        Ok(written) => {
            write!(result.final_text, "\n\n[Written to {}]", written.join(", ")).ok();
            result.written = written;
            result
        }
        Err(message) => {
            result.status = ExecuteStatus::Error;
            let error = ToolError::Invalid(format!(
                "the call succeeded but its result could not be written: {message}"
            ));
            result.final_text = error.to_string();
            result.error = Some(error);
            result
        }
    }
}

/// A tool error caught by the `||` branch of the tool's `error` outcome: written there as data;
/// the call succeeds.
pub(super) fn failure_as_data(
    workspace: &Workspace,
    tool: &str,
    (output_path, outcome): (&OutputPath, usize),
    error: &ToolError,
) -> ExecuteResult {
    let message = match error {
        ToolError::Invalid(message) | ToolError::Internal(message) => message.clone(),
    };
    let mut result = ExecuteResult::failed(ExecuteStatus::Success, error.clone());
    result.error = None;
    result.outcome = outcome;
    result.data = Some(ToolOutput::Text(message.clone()));
    match write(
        workspace,
        output_path.branch(outcome),
        &Value::String(message.clone()),
    ) {
        Ok(written) => {
            result.final_text = format!(
                "`{tool}` failed and its error was written to {} as data: {message}",
                written.join(", ")
            );
            result.written = written;
        }
        Err(problem) => {
            result.status = ExecuteStatus::Error;
            result.final_text = format!(
                "`{tool}` failed ({message}) and the error could not be written: {problem}"
            );
            result.error = Some(ToolError::Invalid(result.final_text.clone()));
        }
    }
    result
}

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

/// A parsed `_outputPath`: branches separated by `||`, one per outcome of the tool in order,
/// each one target or more joined by `&&`, which all receive that outcome's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPath {
    branches: Vec<Vec<Target>>,
}

impl OutputPath {
    pub fn parse(text: &str) -> Result<Self, String> {
        let branches = text
            .split("||")
            .map(|branch| branch.split("&&").map(target).collect())
            .collect::<Result<Vec<Vec<Target>>, String>>()?;
        Ok(Self { branches })
    }

    /// Every target this output path may write, for plan validation and authorization.
    pub fn targets(&self) -> Vec<&Target> {
        self.branches.iter().flatten().collect()
    }

    /// The targets of an outcome (by its index among the tool's outcomes); none when the path
    /// names fewer branches.
    pub fn branch(&self, outcome: usize) -> &[Target] {
        self.branches.get(outcome).map_or(&[], Vec::as_slice)
    }

    /// Whether an outcome has a branch to go to: a tool error with one is data, not a failure.
    pub fn catches(&self, outcome: usize) -> bool {
        !self.branch(outcome).is_empty()
    }

    /// More branches than the tool has outcomes is a mistake; fewer leaves the others unwritten.
    pub fn check_outcomes(&self, tool: &str, outcomes: &Outcomes) -> Result<(), String> {
        let (given, declared) = (self.branches.len(), outcomes.len());
        if given <= declared {
            return Ok(());
        }
        Err(format!(
            "{OUTPUT_PATH_ARGUMENT} has {given} branches (separated by `||`) but `{tool}` has \
             {declared} outcomes: {}; give at most {declared} paths, one per outcome in that order",
            outcomes.names().join(", ")
        ))
    }
}

fn target(text: &str) -> Result<Target, String> {
    let text = text.trim();
    let quoted = || crate::text::shorten(text, QUOTED_CHARS);
    let body = text.strip_prefix(DAGGER).ok_or_else(|| {
        format!(
            "_outputPath target `{}` must start with {DAGGER}, e.g. {DAGGER}state.result",
            quoted()
        )
    })?;
    if let Some(path) = body.strip_prefix("state.") {
        return Path::parse(path)
            .map(Target::State)
            .map_err(|error| format!("_outputPath `{}`: {error}", quoted()));
    }
    if let Some(name) = body.strip_prefix("var.") {
        crate::vars::validate_name(name)
            .map_err(|error| format!("_outputPath `{}`: {error}", quoted()))?;
        return Ok(Target::Variable(name.to_owned()));
    }
    Err(format!(
        "_outputPath target `{}` must be {DAGGER}state.<path> or {DAGGER}var.<name>",
        quoted()
    ))
}

/// Writes `value` to every target; returns the targets written, as text.
fn write(workspace: &Workspace, targets: &[Target], value: &Value) -> Result<Vec<String>, String> {
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
    fn parses_branches_of_fanned_out_targets() {
        let state = |path: &str| Target::State(Path::parse(path).unwrap());
        let parsed = |text: &str| OutputPath::parse(text).unwrap();
        assert_eq!(parsed("†state.a.b").branches, [vec![state("a.b")]]);
        assert_eq!(
            parsed("†state.ok || †state.failed").branches,
            [vec![state("ok")], vec![state("failed")]]
        );
        assert_eq!(
            parsed("†state.user.summary && †var.summary").branches,
            [vec![
                state("user.summary"),
                Target::Variable("summary".into())
            ]]
        );
        let three = parsed("†state.a && †state.b || †state.c || †var.d");
        assert_eq!(
            three.branches,
            [
                vec![state("a"), state("b")],
                vec![state("c")],
                vec![Target::Variable("d".into())]
            ]
        );
        assert_eq!(three.branch(3), []);
        let error = three
            .check_outcomes("Echo", &Outcomes::default())
            .unwrap_err();
        assert_eq!(
            error,
            "_outputPath has 3 branches (separated by `||`) but `Echo` has 2 outcomes: success, \
             error; give at most 2 paths, one per outcome in that order"
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
            OutputPath::parse("†state.a || ")
                .unwrap_err()
                .contains("must start with †")
        );
    }
}
