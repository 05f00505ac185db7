//! One call of a script tool: the arguments checked against the manifest's input schema, passed
//! as JSON on stdin or as words on the command line, the script run in its group folder (with
//! `TOOL_DIR` naming it) by [`crate::runner`], and its output read: stdout as text, or, when the
//! manifest declares an output schema, as one JSON object checked against it. A non-zero exit
//! (unless it chooses a declared outcome), a signal or the timeout is an error quoting stderr
//! and stdout.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{Error, Passing, Script, Word, compile};
use crate::json::nesting;
use crate::runner::{self, DEFAULT_TIMEOUT, OUTPUT_CAP};
use crate::text::Framed;

/// How many schema violations an error lists.
const LISTED_PROBLEMS: usize = 5;

/// What a successful run gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// stdout, when the manifest declares no output schema, with a note after it (not part of
    /// the value) when it was cut.
    Text(Framed),
    /// stdout read as JSON, which matched the output schema.
    Json(Value),
}

/// A tool's schemas, compiled: the input schema as the manifest gives it, and the output schema
/// as clients see it (what they will check the result against).
pub struct Schemas {
    input: jsonschema::Validator,
    output: Option<jsonschema::Validator>,
}

impl Schemas {
    pub fn compile(script: &Script, output: Option<&Map<String, Value>>) -> Result<Self, String> {
        let input = compile(&Value::Object(script.manifest.input_schema.clone()))?;
        let output = output
            .map(|schema| compile(&Value::Object(schema.clone())))
            .transpose()?;
        Ok(Self { input, output })
    }
}

/// Runs the tool with these arguments to its end, its timeout or the cancellation; with the
/// outcome the run chose (an index into the manifest's `outcomes`; 0 when it declares none).
pub async fn run(
    script: &Script,
    schemas: &Schemas,
    arguments: &Value,
    cancellation: &CancellationToken,
) -> Result<(Output, usize), Error> {
    check_arguments(script, schemas, arguments)?;
    let runnable = runner::Script {
        relative: script.manifest.script.clone(),
        folder: script.folder.clone(),
        path: script.path(),
    };
    let ran = runner::run(&runnable, request(script, arguments), cancellation).await?;
    read_output(script, schemas, ran)
}

/// Refuses arguments that break the manifest's input schema, naming each violation.
pub fn check_arguments(script: &Script, schemas: &Schemas, arguments: &Value) -> Result<(), Error> {
    let problems = violations(&schemas.input, arguments);
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::Arguments {
        tool: script.name.clone(),
        problems,
    })
}

/// How long the script may run.
pub fn timeout(script: &Script) -> Duration {
    script
        .manifest
        .timeout_seconds
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs)
}

fn request(script: &Script, arguments: &Value) -> runner::Request {
    let (args, stdin) = match &script.manifest.arguments {
        Passing::Stdin => (Vec::new(), Some(arguments.to_string())),
        Passing::Argv(words) => (command_line(words, arguments), None),
    };
    runner::Request {
        args,
        stdin,
        timeout: Some(timeout(script)),
        environment: vec![("TOOL_DIR", script.folder.clone().into_os_string())],
    }
}

/// The command line the words make of the arguments.
fn command_line(words: &[Word], arguments: &Value) -> Vec<String> {
    let mut line = Vec::new();
    for word in words {
        match word {
            Word::Literal(literal) => line.push(literal.clone()),
            Word::Value { argument } => line.extend(values(arguments.get(argument))),
            Word::Option { argument, option } => {
                for value in values(arguments.get(argument)) {
                    line.push(option.clone());
                    line.push(value);
                }
            }
            Word::Flag { argument, flag } => {
                if arguments.get(argument) == Some(&Value::Bool(true)) {
                    line.push(flag.clone());
                }
            }
        }
    }
    line
}

/// An argument as words: none when absent or null, one per item of an array, strings as they
/// are and anything else as JSON.
fn values(value: Option<&Value>) -> Vec<String> {
    let word = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(word).collect(),
        Some(value) => vec![word(value)],
    }
}

fn read_output(
    script: &Script,
    schemas: &Schemas,
    ran: runner::Ran,
) -> Result<(Output, usize), Error> {
    let tool = script.name.clone();
    let (stdout, stderr) = (ran.stdout, ran.stderr);
    if ran.timed_out {
        let seconds = timeout(script).as_secs();
        return Err(Error::TimedOut {
            tool,
            seconds,
            stdout,
            stderr,
        });
    }
    let outcome = match ran.exit_code {
        Some(code) if let Some(outcome) = exit_outcome(script, code) => outcome,
        Some(code) => {
            return Err(Error::Exited {
                tool,
                code,
                stdout,
                stderr,
            });
        }
        None => {
            return Err(Error::Killed {
                tool,
                stdout,
                stderr,
            });
        }
    };
    let Some(validator) = &schemas.output else {
        let mut text = Framed::new(String::new(), stdout);
        if ran.stdout_cut {
            text.footer = format!("\n[stdout was cut at {OUTPUT_CAP} bytes]");
        }
        return Ok((Output::Text(text), outcome));
    };
    let not_json = |problem: String, stdout: String, stderr: String| Error::NotJson {
        tool: script.name.clone(),
        problem,
        stdout,
        stderr,
    };
    if ran.stdout_cut {
        let problem = format!("it printed more than {OUTPUT_CAP} bytes, which were cut");
        return Err(not_json(problem, stdout, stderr));
    }
    let value = match serde_json::from_str::<Value>(stdout.trim()) {
        Ok(value) => value,
        Err(error) => {
            return Err(not_json(
                format!("its stdout is not JSON ({error})"),
                stdout,
                stderr,
            ));
        }
    };
    if !value.is_object() {
        let problem = format!(
            "it printed {}, not an object",
            crate::json::path::describe(&value)
        );
        return Err(not_json(problem, stdout, stderr));
    }
    if let Err(too_deep) = nesting::check(&value, 0) {
        return Err(not_json(format!("its JSON {too_deep}"), stdout, stderr));
    }
    let chosen = checked_output(script, validator, &value).map_err(|problems| Error::Mismatch {
        tool,
        problems,
        stdout,
    })?;
    Ok((Output::Json(value), chosen.unwrap_or(outcome)))
}

/// JSON output against the output schema, then the outcome its member names when the manifest
/// says one chooses; what is wrong with it otherwise.
fn checked_output(
    script: &Script,
    validator: &jsonschema::Validator,
    value: &Value,
) -> Result<Option<usize>, String> {
    let problems = violations(validator, value);
    if !problems.is_empty() {
        return Err(problems);
    }
    let manifest = &script.manifest;
    let (Some(outcomes), Some(member)) = (&manifest.outcomes, &manifest.outcome_member) else {
        return Ok(None);
    };
    chosen(outcomes, member, value).map(Some)
}

/// The outcome an exit code chooses: 0 the first; with declared outcomes and no member that
/// chooses, code *i* the *i*-th; any other code none (the run failed).
fn exit_outcome(script: &Script, code: i32) -> Option<usize> {
    let manifest = &script.manifest;
    let by_exit_code = match (&manifest.outcomes, &manifest.outcome_member) {
        (Some(outcomes), None) => outcomes.len(),
        _ => 1,
    };
    usize::try_from(code)
        .ok()
        .filter(|&code| code < by_exit_code)
}

/// The outcome the output's `member` names.
fn chosen(outcomes: &[String], member: &str, value: &Value) -> Result<usize, String> {
    let named = value.get(member);
    named
        .and_then(Value::as_str)
        .and_then(|name| outcomes.iter().position(|outcome| outcome == name))
        .ok_or_else(|| {
            format!(
                "its `{member}` is {}, not one of the outcomes its manifest declares: {}",
                named.map_or_else(|| "missing".to_owned(), ToString::to_string),
                outcomes.join(", ")
            )
        })
}

/// What makes `value` fail the schema, the first few, each at its place; empty when it passes.
fn violations(validator: &jsonschema::Validator, value: &Value) -> String {
    let mut found: Vec<String> = validator
        .iter_errors(value)
        .take(LISTED_PROBLEMS + 1)
        .map(|error| {
            let path = error.instance_path().to_string();
            let place = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            format!("at `{place}`: {error}")
        })
        .collect();
    if found.len() > LISTED_PROBLEMS {
        found.truncate(LISTED_PROBLEMS);
        found.push("and more".to_owned());
    }
    found.join("; ")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn words_take_arguments_as_the_manifest_says() {
        let words: Vec<Word> = serde_json::from_value(json!([
            "count",
            {"arg": "paths"},
            {"arg": "lines", "option": "--lines"},
            {"arg": "tags", "option": "-t"},
            {"arg": "verbose", "flag": "-v"},
            {"arg": "quiet", "flag": "-q"},
            {"arg": "missing", "option": "--missing"}
        ]))
        .unwrap();
        let arguments = json!({"paths": ["a b.txt", "c"], "lines": 3, "tags": ["x", "y"],
            "verbose": true, "quiet": false});
        assert_eq!(
            command_line(&words, &arguments),
            [
                "count", "a b.txt", "c", "--lines", "3", "-t", "x", "-t", "y", "-v"
            ]
        );
    }
}
