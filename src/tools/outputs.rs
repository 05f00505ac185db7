//! The `_outputPath` step of the pipeline: taking the meta-argument out of a call (or the
//! value a tool pins with `const` in its schema), and writing a result, or a caught failure,
//! to its targets.

use std::fmt::Write as _;

use serde_json::Value;

use super::executor::{ExecuteResult, ExecuteStatus};
use super::{Tool, ToolError, ToolOutput};
use crate::plans::output::{self, OutputPath, Target};
use crate::refs::dagger::DAGGER;
use crate::vars::VarType;
use crate::workspace::Workspace;

/// The meta-argument naming where a call's result is written.
pub(crate) const OUTPUT_PATH_ARGUMENT: &str = "_outputPath";

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
    let pinned = tool
        .definition()
        .input_schema
        .get("properties")
        .and_then(|properties| properties.get(OUTPUT_PATH_ARGUMENT))
        .and_then(|property| property.get("const"))
        .cloned();
    let Some(text) = pinned.or(given) else {
        return Ok(None);
    };
    let Value::String(text) = text else {
        return Err(ToolError::invalid(format!(
            "{OUTPUT_PATH_ARGUMENT} must be a string such as \"†state.result\", not {text}"
        )));
    };
    let output_path = OutputPath::parse(&text).map_err(ToolError::Invalid)?;
    refuse_rule_targets(workspace, &output_path)?;
    Ok(Some(output_path))
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
pub(super) fn deliver(workspace: &Workspace, mut result: ExecuteResult) -> ExecuteResult {
    let Some(output_path) = result.output_path.take() else {
        return result;
    };
    let value = match &result.data {
        Some(ToolOutput::Structured(value)) => value.clone(),
        Some(ToolOutput::Text(text)) => Value::String(text.clone()),
        None => return result,
    };
    match output::write(workspace, &output_path.targets_for(true), &value) {
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

/// A tool error caught by a `||` branch: written as data to the failure path; the call succeeds.
pub(super) fn failure_as_data(
    workspace: &Workspace,
    tool: &str,
    output_path: &OutputPath,
    error: &ToolError,
) -> ExecuteResult {
    let message = match error {
        ToolError::Invalid(message) | ToolError::Internal(message) => message.clone(),
    };
    let mut result = ExecuteResult::failed(ExecuteStatus::Success, error.clone());
    result.error = None;
    result.data = Some(ToolOutput::Text(message.clone()));
    match output::write(
        workspace,
        &output_path.targets_for(false),
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
