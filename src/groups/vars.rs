//! The `vars` group (`docs/variables.md`): `ReadVar`, `ListVars`, `WriteVar`, `RemoveVars`, and
//! the workspace view's own `AppWriteVar` (a person's write). `ReadVar` and `ListVars` are listed
//! whenever any group is enabled.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::{
    Annotations, Answered, Context, Daggers, Declaration, Framed, Origin, ToolError, ToolGroup,
    TypedTool, WORKSPACE_VIEW, Writes, declare, typed,
};
use crate::vars::{ListFilter, RemoveOutcome, ValueKind, VarType, Variable};
use crate::workspace::{Author, OwnWrite, Written};

pub const GROUP: &str = "vars";

/// The group with its five tools and its rule prompt.
pub fn group() -> ToolGroup {
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
        about: None,
        tools: vec![
            typed::<ReadVarArguments, _>(()),
            typed::<ListVarsArguments, _>(()),
            typed::<WriteVarArguments, _>(()),
            typed::<AppWriteVarArguments, _>(()),
            typed::<RemoveVarsArguments, _>(()),
        ],
        rule_prompt: Some(
            include_str!("../../skills/synapse-workspace/rules/vars-group.md").to_owned(),
        ),
        rules: Vec::new(),
    }
}

const READ_ONLY: Annotations = Annotations::READ_ONLY;

/// Writing over an existing name replaces its value; removing deletes.
const OVERWRITES: Annotations = Annotations::OVERWRITES;

const READ_VAR: &str = "Read a variable's value, whole or a window (by characters): the rest of a \
    cut tool result (its hint names the variable and window), or a rule such as \
    `Rule/Agent/VarRef`. The first line gives the window, the total length and whether more \
    remains.";

const LIST_VARS: &str = "List stored variables with their metadata (name, length, type, \
    description, tags, last update), never their values (use ReadVar); cached tool results are \
    only counted unless `cached: true`.";

const WRITE_VAR: &str = "Create or update a variable: notes, intermediate results or a document \
    built across calls, passed to any tool as $VAR_REF{{name}}. Fields left out are kept; RULE \
    variables are read-only; `†` references are stored as written.";

const APP_WRITE_VAR: &str = "Create or update a variable as you, the person in the workspace \
    view: it is typed USER_ADD, as written by you and not by the model. The value is stored as \
    typed, references and all; RULE variables are read-only.";

const REMOVE_VARS: &str = "Delete variables by name (RULE variables cannot be); the answer lists \
    what was removed, refused and not found.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadVarArguments {
    /// The variable, e.g. `WebFetch_1a2b3c4d_result`.
    pub name: String,
    /// First character (0-based). Default 0.
    pub start: Option<usize>,
    /// Characters to read. Default: up to the output limit.
    pub length: Option<usize>,
}

/// `ReadVar`: a window of a variable's value. It pages its own output, so it is never cut; it
/// and the other variable tools are never cached, so reading a variable never creates another
/// one.
impl TypedTool for ReadVarArguments {
    type Output = Framed;
    const TOOL: Declaration = declare! {
        "ReadVar", "Read variable", READ_ONLY, READ_VAR, always_listed, whole, uncached
    };

    async fn run(self, context: Context<'_>) -> Answered<Framed> {
        let length = self.length.or(context.output_limit);
        let start = self.start.unwrap_or(0);
        Ok(context.workspace.read_window(&self.name, start, length)?)
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListVarsArguments {
    /// Filters, combined.
    pub filter: Option<ListVarsFilter>,
    /// List the cached tool results and arguments too (`…_result`, `…_args`), after the
    /// other variables. Default false: they are only counted.
    pub cached: Option<bool>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListVarsFilter {
    /// Only variables of this type.
    #[serde(rename = "type")]
    pub var_type: Option<VarType>,
    /// Only variables carrying this tag.
    pub tag: Option<String>,
    /// Text in names, descriptions or tags.
    pub search: Option<String>,
}

/// One variable's metadata, as `ListVars` reports it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariableInfo {
    pub name: String,
    /// Length of the value in characters.
    pub length: usize,
    #[serde(rename = "type")]
    pub var_type: VarType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Whether the value is JSON text (written as a non-string value).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub json: bool,
    /// Never evicted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub keep: bool,
    /// When the value last changed: ISO 8601, UTC, to the second.
    pub updated: String,
    /// How many times `$VAR_REF` has read it; absent when never.
    #[serde(skip_serializing_if = "is_zero")]
    pub reference_count: u64,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl From<&Variable> for VariableInfo {
    fn from(variable: &Variable) -> Self {
        Self {
            name: variable.name.to_string(),
            length: variable.char_len(),
            var_type: variable.var_type,
            desc: variable.desc.clone(),
            tags: variable.tags.clone(),
            json: variable.kind == ValueKind::Json,
            keep: variable.keep,
            updated: variable.updated.to_readable(),
            reference_count: variable.reference_count,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListVarsOutput {
    /// The variables the model or the user wrote (and rules) first, by name; then, when asked
    /// for with `cached: true` or a cache `type`, the cached tool results and arguments.
    pub variables: Vec<VariableInfo>,
    /// How many variables are listed.
    pub count: usize,
    /// The workspace's capacity (variables kept before the least recently used are evicted).
    pub capacity: usize,
    /// Cached tool results and arguments that match but are not listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_not_listed: Option<usize>,
    /// How to list them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ListVarsOutput {
    /// The listing of `matching` (sorted by name): the cache entries after the others when
    /// `with_cached`, else only counted.
    fn of(matching: Vec<&Variable>, with_cached: bool, capacity: usize) -> Self {
        let (cache, own): (Vec<&Variable>, Vec<&Variable>) = matching
            .into_iter()
            .partition(|variable| variable.var_type.is_cache());
        let hidden = if with_cached { 0 } else { cache.len() };
        let mut variables: Vec<VariableInfo> = own.into_iter().map(Into::into).collect();
        if with_cached {
            variables.extend(cache.into_iter().map(VariableInfo::from));
        }
        Self {
            count: variables.len(),
            variables,
            capacity,
            cached_not_listed: (hidden > 0).then_some(hidden),
            note: (hidden > 0).then(|| {
                format!(
                    "{hidden} cached tool result(s) and argument(s) not listed; ListVars {{\"cached\": true}} lists them"
                )
            }),
        }
    }
}

impl From<ListVarsFilter> for ListFilter {
    fn from(filter: ListVarsFilter) -> Self {
        Self {
            var_type: filter.var_type,
            tag: filter.tag,
            search: filter.search,
        }
    }
}

/// `ListVars`: the variables' metadata, never their values; cached tool results and arguments
/// only when asked for (two are cached per call: they would soon outnumber the rest).
impl TypedTool for ListVarsArguments {
    type Output = ListVarsOutput;
    const TOOL: Declaration = declare! {
        "ListVars", "List variables", READ_ONLY, LIST_VARS,
        view(WORKSPACE_VIEW), always_listed, uncached
    };

    async fn run(self, context: Context<'_>) -> Answered<ListVarsOutput> {
        let filter: ListFilter = self.filter.unwrap_or_default().into();
        // Asking for a cache type is asking for cache entries.
        let with_cached =
            self.cached == Some(true) || filter.var_type.is_some_and(VarType::is_cache);
        Ok(context.workspace.with_variables(|system| {
            ListVarsOutput::of(system.list(&filter), with_cached, system.capacity())
        })?)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteVarArguments {
    /// Up to 256 characters, no `{`, `}` or `:`; `/` may group names.
    pub name: String,
    /// Text or any JSON value; leave out to change only `desc` or `tags`.
    pub value: Option<Value>,
    /// A one-line description.
    pub desc: Option<String>,
    /// Tags (replace the existing ones).
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteVarOutput {
    pub name: String,
    /// `true` when the variable did not exist before.
    pub created: bool,
    /// Length of the stored value in characters.
    pub length: usize,
    /// Variables evicted to stay within capacity.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evicted: Vec<String>,
}

/// `WriteVar`: creates or updates a variable the model owns. Outside a plan it stores `†`
/// references as written, so that a plan template keeps its `†input` and `†steps` references
/// for `RunPlan`.
impl TypedTool for WriteVarArguments {
    type Output = WriteVarOutput;
    const TOOL: Declaration = declare! {
        "WriteVar", "Write variable", OVERWRITES, WRITE_VAR,
        uncached, daggers(Daggers::KeptOutsidePlans), writes(Writes::VariableNamed("name"))
    };

    async fn run(self, context: Context<'_>) -> Answered<WriteVarOutput> {
        write_own(&context, self.into())
    }
}

/// A writer's own write, answered as `WriteVar` and `AppWriteVar` answer it; a rule is refused.
fn write_own(context: &Context<'_>, write: OwnWrite) -> Answered<WriteVarOutput> {
    let written = context.workspace.write_own(write)?;
    Ok(written.map_err(ToolError::invalid)?.into())
}

impl From<WriteVarArguments> for OwnWrite {
    fn from(arguments: WriteVarArguments) -> Self {
        let WriteVarArguments {
            name,
            value,
            desc,
            tags,
        } = arguments;
        Self {
            name,
            value,
            desc,
            tags,
            author: Author::Model,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppWriteVarArguments {
    /// Up to 256 characters, no `{`, `}` or `:`; `/` may group names.
    pub name: String,
    /// The text to store, exactly as typed.
    pub value: String,
    /// A one-line description (left out: an existing one is kept).
    pub desc: Option<String>,
    /// Tags (replace the existing ones; left out: they are kept).
    pub tags: Option<Vec<String>>,
}

/// `AppWriteVar`: `WriteVar` for the person in the workspace view, with the same bounds and
/// errors, typing what it writes `USER_ADD`. Only the view calls it: the model never sees it,
/// and no plan reaches it. Its value is text stored as typed: no reference in it is resolved.
impl TypedTool for AppWriteVarArguments {
    type Output = WriteVarOutput;
    const TOOL: Declaration = declare! {
        "AppWriteVar", "Write a variable (you)", OVERWRITES, APP_WRITE_VAR,
        app_only, uncached, whole, daggers(Daggers::Kept)
    };

    async fn run(self, context: Context<'_>) -> Answered<WriteVarOutput> {
        let write = OwnWrite {
            name: self.name,
            value: Some(Value::String(self.value)),
            desc: self.desc,
            tags: self.tags,
            author: Author::Person,
        };
        write_own(&context, write)
    }
}

impl From<Written> for WriteVarOutput {
    fn from(written: Written) -> Self {
        Self {
            name: written.name,
            created: written.outcome.created,
            length: written.length,
            evicted: written
                .outcome
                .evicted
                .iter()
                .map(ToString::to_string)
                .collect(),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveVarsArguments {
    /// The variables to delete.
    pub names: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RemoveVarsOutput {
    pub removed: Vec<String>,
    /// Rule variables, which cannot be removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// Names that matched no variable.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Says why anything was not removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `RemoveVars`: deletes variables, never rules.
impl TypedTool for RemoveVarsArguments {
    type Output = RemoveVarsOutput;
    const TOOL: Declaration = declare! {
        "RemoveVars", "Remove variables", OVERWRITES, REMOVE_VARS, uncached
    };

    async fn run(self, context: Context<'_>) -> Answered<RemoveVarsOutput> {
        Ok(context.workspace.remove(&self.names)?.into())
    }
}

impl From<RemoveOutcome> for RemoveVarsOutput {
    fn from(outcome: RemoveOutcome) -> Self {
        let mut notes = Vec::new();
        if !outcome.refused.is_empty() {
            notes.push(format!(
                "rule variables cannot be removed: {}",
                outcome.refused.join(", ")
            ));
        }
        if !outcome.missing.is_empty() {
            notes.push(format!("no such variables: {}", outcome.missing.join(", ")));
        }
        Self {
            removed: outcome.removed,
            refused: outcome.refused,
            missing: outcome.missing,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
        }
    }
}
