//! A plan: steps `{_id, _tool, …arguments, _outputPath?}` whose edges are `†` references to
//! earlier steps' results (`†steps.<id>`), and `†`/`$VAR_REF` references to the state paths and
//! variables earlier steps write (by `_outputPath`, or as `WriteState`/`WriteVar` do). Validation
//! looks at the whole plan before anything runs and reports every problem at once: unknown tools
//! and step ids, references to paths nothing writes, cycles, and literal arguments that break
//! the tool's schema.
//!
//! A step's own fields start with `_`, like the meta-arguments, so that they never collide with
//! a tool's arguments: `SnapshotGet`'s `id` is the snapshot's, the step's is `_id`.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use crate::json::path::Path;
use crate::json::strings;
use crate::refs::Segment;
use crate::refs::dagger::{self, Kind, Piece};
use crate::tools::{OutputPath, OutputTarget, ToolDefinition, Writes, pinned_output_path};

/// One step, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub id: String,
    pub tool: String,
    /// The tool's own arguments (without `_id`, `_tool` and `_outputPath`).
    pub arguments: Map<String, Value>,
    pub output_path: Option<(String, OutputPath)>,
}

/// What validation needs to know about the world outside the plan.
pub trait World {
    /// The definition of an enabled tool: its input schema, and what it writes.
    fn tool(&self, name: &str) -> Option<ToolDefinition>;
    fn state(&self) -> &Value;
    fn variable_exists(&self, name: &str) -> bool;
}

/// Steps in dependency order: each inner list can run together once the ones before it are done.
pub type Order = Vec<Vec<String>>;

/// Parses the steps; every malformed step is reported.
pub fn parse(steps: &[Value]) -> Result<Vec<Step>, Vec<String>> {
    let mut parsed = Vec::new();
    let mut problems = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        match parse_step(step) {
            Ok(step) => parsed.push(step),
            Err(problem) => problems.push(format!("step {}: {problem}", index + 1)),
        }
    }
    let mut seen = BTreeSet::new();
    for step in &parsed {
        if !seen.insert(step.id.as_str()) {
            problems.push(format!(
                "step id `{}` is used twice; ids must be unique",
                step.id
            ));
        }
    }
    if steps.is_empty() {
        problems.push("the plan has no steps".to_owned());
    }
    if problems.is_empty() {
        Ok(parsed)
    } else {
        Err(problems)
    }
}

/// The step fields besides the tool's arguments.
const STEP_FIELDS: [&str; 3] = ["_id", "_tool", "_outputPath"];

/// Meta-arguments a step passes on to the executor with the tool's arguments.
const PASSED_ON: [&str; 1] = ["_outputLimit"];

fn parse_step(step: &Value) -> Result<Step, String> {
    let Value::Object(members) = step else {
        return Err("a step must be an object {\"_id\": …, \"_tool\": …, …arguments}".to_owned());
    };
    let mut arguments = members.clone();
    if let Some(unknown) = arguments.keys().find(|key| {
        key.starts_with('_')
            && !STEP_FIELDS.contains(&key.as_str())
            && !PASSED_ON.contains(&key.as_str())
    }) {
        return Err(format!(
            "unknown step field `{unknown}`: a step takes `_id`, `_tool`, `_outputPath`, \
             `_outputLimit` and the tool's own arguments"
        ));
    }
    let id = match arguments.shift_remove("_id") {
        Some(Value::String(id)) if !id.is_empty() && !id.contains('.') => id,
        Some(other) => {
            return Err(format!(
                "`_id` must be a non-empty string without dots, not {other}"
            ));
        }
        None if arguments.contains_key("id") => {
            return Err(format!(
                "missing `_id`: a step is named by `_id`, and `id` is passed to the tool as its \
                 own argument (e.g. SnapshotGet's snapshot id); rename the step's \
                 \"id\": {} to \"_id\": {}",
                arguments["id"], arguments["id"]
            ));
        }
        None => return Err("missing `_id` naming the step".to_owned()),
    };
    let Some(Value::String(tool)) = arguments.shift_remove("_tool") else {
        return Err(format!(
            "step `{id}` has no `_tool` naming the tool to call"
        ));
    };
    let output_path = match arguments.shift_remove("_outputPath") {
        None => None,
        Some(Value::String(text)) => {
            let parsed =
                OutputPath::parse(&text).map_err(|problem| format!("step `{id}`: {problem}"))?;
            Some((text, parsed))
        }
        Some(other) => {
            return Err(format!(
                "step `{id}`: `_outputPath` must be a string, not {other}"
            ));
        }
    };
    Ok(Step {
        id,
        tool,
        arguments,
        output_path,
    })
}

/// A plan that passed validation: the order to run it in, and each step's dependencies (by
/// index), which the runner schedules by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    pub order: Order,
    pub dependencies: Vec<BTreeSet<usize>>,
}

/// Checks the whole plan; returns what the runner needs, or every problem found.
pub fn validate(
    steps: &[Step],
    input: &Value,
    world: &dyn World,
) -> Result<Validated, Vec<String>> {
    let mut problems = Vec::new();
    let index_of: HashMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(index, step)| (step.id.as_str(), index))
        .collect();
    let definitions: Vec<Option<ToolDefinition>> =
        steps.iter().map(|step| world.tool(&step.tool)).collect();
    let targets: Vec<Vec<OutputTarget>> = steps
        .iter()
        .zip(&definitions)
        .map(|(step, definition)| step_writes(step, definition.as_ref()))
        .collect();
    let mut dependencies: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); steps.len()];
    for (index, step) in steps.iter().enumerate() {
        match &definitions[index] {
            None => problems.push(format!(
                "step `{}`: unknown tool `{}`; tools/list shows the available tools",
                step.id, step.tool
            )),
            Some(definition) => {
                check_arguments(step, &definition.input_schema, &mut problems);
                if let Some((_, output)) = &step.output_path
                    && let Err(problem) = output.check_outcomes(&step.tool, &definition.outcomes)
                {
                    problems.push(format!("step `{}`: {problem}", step.id));
                }
            }
        }
        for reference in references(&step.arguments, &step.id, &mut problems) {
            let found = dependencies_of(&reference, &index_of, &targets, input, world);
            match found {
                // A step that writes what it reads (an update) waits for the writers listed
                // before it, so that updates of one target run in the plan's order.
                Ok(mut writers) if writers.contains(&index) => {
                    writers.retain(|&writer| writer < index);
                    dependencies[index].extend(writers);
                }
                Ok(writers) => dependencies[index].extend(writers),
                Err(problem) => problems.push(format!("step `{}`: {problem}", step.id)),
            }
        }
    }
    match order(steps, &dependencies) {
        Ok(order) if problems.is_empty() => Ok(Validated {
            order,
            dependencies,
        }),
        Ok(_) => Err(problems),
        Err(cycle) => {
            problems.push(format!("steps {cycle} depend on each other in a cycle; break it so one of them can run first"));
            Err(problems)
        }
    }
}

/// Everything a step writes into the workspace: its `_outputPath` (the one its tool pins, else
/// the step's), every branch of it, and what the tool itself writes where a literal argument
/// says (`WriteState`'s `path`, `WriteVar`'s `name`).
fn step_writes(step: &Step, definition: Option<&ToolDefinition>) -> Vec<OutputTarget> {
    let pinned = definition
        .and_then(pinned_output_path)
        .and_then(Value::as_str)
        .and_then(|text| OutputPath::parse(text).ok());
    let given = step.output_path.as_ref().map(|(_, output)| output);
    let mut writes: Vec<OutputTarget> = pinned
        .as_ref()
        .or(given)
        .map(|output| output.targets().into_iter().cloned().collect())
        .unwrap_or_default();
    let literal = |argument: &str| {
        step.arguments
            .get(argument)
            .and_then(Value::as_str)
            .filter(|text| !holds_reference(text))
    };
    match definition.map_or(Writes::Nothing, |definition| definition.writes) {
        Writes::Nothing => {}
        Writes::StateAt(argument) => {
            if let Some(path) = literal(argument).and_then(|text| Path::parse(text).ok()) {
                writes.push(OutputTarget::State(path));
            }
        }
        Writes::VariableNamed(argument) => {
            if let Some(name) = literal(argument) {
                writes.push(OutputTarget::Variable(name.to_owned()));
            }
        }
    }
    writes
}

/// A reference in a step's arguments: `†…`, or `$VAR_REF{{name…}}` (resolved when the step
/// runs, so it may read a variable an earlier step writes).
enum Reference {
    Dagger(dagger::DaggerReference),
    Variable { name: String, source: String },
}

impl Step {
    /// The references in the step's arguments as written (`†…`, `$VAR_REF{{…}}`), first seen
    /// first, each once: what a plan's approval names as resolved only when the step runs.
    pub fn references(&self) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        let mut ignored = Vec::new();
        for reference in references(&self.arguments, &self.id, &mut ignored)
            .into_iter()
            .rev()
        {
            let source = match reference {
                Reference::Dagger(reference) => reference.source,
                Reference::Variable { source, .. } => source,
            };
            if !found.contains(&source) {
                found.push(source);
            }
        }
        found
    }
}

/// Every reference in a step's arguments.
fn references(
    arguments: &Map<String, Value>,
    step: &str,
    problems: &mut Vec<String>,
) -> Vec<Reference> {
    let mut found = Vec::new();
    let texts: Vec<&str> = arguments.values().flat_map(strings::iter).collect();
    // Last string first: the order in which validation has always reported problems.
    for text in texts.into_iter().rev() {
        if dagger::contains_reference(text) {
            match dagger::parse(text) {
                Ok(pieces) => found.extend(pieces.into_iter().filter_map(|piece| match piece {
                    Piece::Reference(reference) => Some(Reference::Dagger(reference)),
                    Piece::Text(_) => None,
                })),
                Err(error) => problems.push(format!("step `{step}`: {error}")),
            }
        }
        if crate::refs::contains_reference(text) {
            match crate::refs::parse(text) {
                Ok(segments) => {
                    found.extend(segments.into_iter().filter_map(|segment| match segment {
                        Segment::Variable { reference, source } => Some(Reference::Variable {
                            name: reference.name,
                            source: source.to_owned(),
                        }),
                        Segment::Literal(_) => None,
                    }));
                }
                Err(error) => problems.push(format!("step `{step}`: {error}")),
            }
        }
    }
    found
}

/// The steps a reference waits for, or why it can never be satisfied.
fn dependencies_of(
    reference: &Reference,
    index_of: &HashMap<&str, usize>,
    targets: &[Vec<OutputTarget>],
    input: &Value,
    world: &dyn World,
) -> Result<Vec<usize>, String> {
    let reference = match reference {
        Reference::Variable { name, source } => {
            return variable_writers(source, name, targets, world);
        }
        Reference::Dagger(reference) => reference,
    };
    let source = &reference.source;
    match reference.kind {
        Kind::Steps => {
            let id = reference
                .path
                .segments()
                .first()
                .ok_or_else(|| format!("{source} names no step; write †steps.<id>"))?;
            index_of
                .get(id.as_str())
                .map(|index| vec![*index])
                .ok_or_else(|| format!("{source} refers to unknown step `{id}`"))
        }
        Kind::Input => {
            let path = &reference.path;
            path.get(input).map(|_| Vec::new()).ok_or_else(|| {
                format!("{source}: the plan's input has no `{path}`; pass it in `input`")
            })
        }
        Kind::State => {
            let path = &reference.path;
            let writers = writers_of(
                targets,
                |target| matches!(target, OutputTarget::State(written) if written.overlaps(path)),
            );
            if writers.is_empty() && path.get(world.state()).is_none() {
                return Err(format!(
                    "{source}: no step writes it and the state has nothing there (a dangling reference)"
                ));
            }
            Ok(writers)
        }
        Kind::Var => {
            let name = reference
                .path
                .segments()
                .first()
                .ok_or_else(|| format!("{source} names no variable; write †var.<name>"))?;
            variable_writers(source, name, targets, world)
        }
    }
}

/// The steps that write variable `name`, or why `source` can never read it.
fn variable_writers(
    source: &str,
    name: &str,
    targets: &[Vec<OutputTarget>],
    world: &dyn World,
) -> Result<Vec<usize>, String> {
    let writers = writers_of(
        targets,
        |target| matches!(target, OutputTarget::Variable(written) if written == name),
    );
    if writers.is_empty() && !world.variable_exists(name) {
        return Err(format!(
            "{source}: no variable `{name}` and no step writes one"
        ));
    }
    Ok(writers)
}

fn writers_of(
    targets: &[Vec<OutputTarget>],
    matches: impl Fn(&OutputTarget) -> bool,
) -> Vec<usize> {
    targets
        .iter()
        .enumerate()
        .filter(|(_, targets)| targets.iter().any(&matches))
        .map(|(index, _)| index)
        .collect()
}

/// Literal arguments against the tool's schema: required properties present, no unknown ones
/// where the schema forbids them, and the declared JSON types of literal (non-reference) values.
/// An optional argument given as `null` means "left out", as in a direct call.
fn check_arguments(step: &Step, schema: &Map<String, Value>, problems: &mut Vec<String>) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for &required in &required {
        if !step.arguments.contains_key(required) {
            problems.push(format!(
                "step `{}`: `{}` needs argument `{required}`",
                step.id, step.tool
            ));
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (name, value) in &step.arguments {
        let declared = properties.and_then(|properties| properties.get(name));
        match declared {
            None if closed && !name.starts_with('_') => {
                problems.push(format!(
                    "step `{}`: `{}` has no argument `{name}`",
                    step.id, step.tool
                ));
            }
            Some(_) if value.is_null() && !required.contains(&name.as_str()) => {}
            Some(property) if !is_reference(value) && !type_matches(property, value) => {
                problems.push(format!(
                    "step `{}`: argument `{name}` of `{}` must be {}, not {}",
                    step.id,
                    step.tool,
                    property
                        .get("type")
                        .map_or_else(|| "?".to_owned(), ToString::to_string),
                    crate::json::path::describe(value)
                ));
            }
            _ => {}
        }
    }
}

fn is_reference(value: &Value) -> bool {
    value.as_str().is_some_and(holds_reference)
}

fn holds_reference(text: &str) -> bool {
    dagger::contains_reference(text) || crate::refs::contains_reference(text)
}

fn type_matches(property: &Value, value: &Value) -> bool {
    let accepts = |kind: &str| match kind {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    };
    match property.get("type") {
        Some(Value::String(kind)) => accepts(kind),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).any(accepts),
        _ => true,
    }
}

/// Kahn's algorithm by levels; on a cycle, the ids left over.
fn order(steps: &[Step], dependencies: &[BTreeSet<usize>]) -> Result<Order, String> {
    let mut remaining: Vec<BTreeSet<usize>> = dependencies.to_vec();
    let mut done = vec![false; steps.len()];
    let mut levels = Vec::new();
    loop {
        let ready: Vec<usize> = (0..steps.len())
            .filter(|&index| !done[index] && remaining[index].is_empty())
            .collect();
        if ready.is_empty() {
            break;
        }
        for &index in &ready {
            done[index] = true;
        }
        for waiting in &mut remaining {
            waiting.retain(|dependency| !ready.contains(dependency));
        }
        levels.push(ready.iter().map(|&index| steps[index].id.clone()).collect());
    }
    let stuck: Vec<&str> = (0..steps.len())
        .filter(|&index| !done[index])
        .map(|index| steps[index].id.as_str())
        .collect();
    if stuck.is_empty() {
        Ok(levels)
    } else {
        Err(stuck
            .iter()
            .map(|id| format!("`{id}`"))
            .collect::<Vec<_>>()
            .join(", "))
    }
}
