//! Tool definitions: names, descriptions, JSON Schemas (`schema.rs`), annotations, how the
//! executor treats a tool's calls (permission, caching, truncation, `†` references), and the one
//! place a tool's arguments are decoded (`decode.rs`) is called from here.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::schema::{Schema, input_schema, output_schema, portable};
use super::{Permission, ToolError, parse_arguments};

/// Hints for clients about what a tool does (MCP `ToolAnnotations`).
#[expect(
    clippy::struct_excessive_bools,
    reason = "mirrors MCP's four independent hint flags"
)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl Annotations {
    /// No hint set, as [`Annotations::default`], for constants.
    pub const NONE: Self = Self {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };

    /// Reads, changing nothing: the same call again answers the same.
    pub const READ_ONLY: Self = Self {
        read_only: true,
        idempotent: true,
        ..Self::NONE
    };

    /// Reads, changing nothing in the user's data, but caches each result as a new variable the
    /// user can list: read-only, so a read-only principal may call it (its cached result
    /// displaces nothing a writing principal stored), and not idempotent.
    pub const CACHED_READ: Self = Self {
        read_only: true,
        ..Self::NONE
    };

    /// Replaces or deletes what is stored under a name or id; the same call again changes
    /// nothing more.
    pub const OVERWRITES: Self = Self {
        destructive: true,
        idempotent: true,
        ..Self::NONE
    };

    /// These hints, and the tool reaches outside the server (runs code, talks to the world).
    #[must_use]
    pub const fn open_world(self) -> Self {
        Self {
            open_world: true,
            ..self
        }
    }

    /// These hints, and the same call again changes nothing more.
    #[must_use]
    pub const fn idempotent(self) -> Self {
        Self {
            idempotent: true,
            ..self
        }
    }

    /// May replace what is stored, and each call may change more (adds new records, or runs
    /// other tools).
    pub const DESTRUCTIVE: Self = Self {
        destructive: true,
        ..Self::NONE
    };
}

/// A tool's declaration, as data: what a client learns from `tools/list` (name, title,
/// description, schemas, annotations) and how the executor treats its calls (default
/// permission, caching, truncation, `†` references, listing). Tools set the second half with
/// the builder methods below; the executor, the registry and `tools/list` read it here, so
/// no tool overrides a hook to say any of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Schema,
    pub output_schema: Option<Schema>,
    pub annotations: Annotations,
    /// The tool's own default approval policies; the configuration may override them.
    pub permission: Permission,
    /// Whether and how results and arguments are cached as variables.
    pub caching: Caching,
    /// The output limit a result is cut to.
    pub truncation: Truncation,
    /// What becomes of `†` references in the arguments before the tool runs.
    pub daggers: Daggers,
    /// What the tool writes into the workspace besides its `_outputPath`, so that a plan's
    /// validator knows which later references it satisfies.
    pub writes: Writes,
    /// The outcomes its result may have, in the order `A || B || C` names them.
    pub outcomes: Outcomes,
    /// Listed whenever any group is enabled, even when its own group is not (`ReadVar`,
    /// `ListVars`).
    pub always_listed: bool,
    /// The interactive view (an MCP App) a host that renders apps shows this tool's result in;
    /// hosts without apps show the text result as before.
    pub view: Option<&'static str>,
    /// Who the tool is for: everyone (the model and the views), or only the views.
    pub visibility: Visibility,
    /// The tool's own name where it comes from (an upstream server's name for it), when it is
    /// served under another.
    pub origin_name: Option<String>,
    /// Changes what every workspace of the process shares (the skills shelf: `SkillSave`,
    /// `SkillRunScript`): only a caller with the skills grant may run it.
    pub changes_shared_state: bool,
}

/// The workspace view: the one MCP App resource the server serves, where a user browses
/// variables and edits the state document (see `docs/app.md`).
pub const WORKSPACE_VIEW: &str = "ui://synapse/workspace";

/// Who a tool is for (the MCP Apps extension's `_meta.ui.visibility`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Visibility {
    /// The model, and the views of a host that renders apps: every tool but the views' own.
    #[default]
    Everyone,
    /// Only the views (`AppWriteVar`, a write the person makes there): listed only to a client
    /// that renders apps, whose host keeps it from its model, and callable by no other client
    /// and by no plan.
    App,
}

/// Which tools a request may see and call: the model's, or also the views' own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Audience {
    /// A client that renders no apps, or a plan's steps: the tools every model sees.
    #[default]
    Model,
    /// A client that renders apps (it declares the MCP Apps extension): its host shows the model
    /// the tools for everyone and lets the views call the views' own too.
    ModelAndViews,
}

impl Visibility {
    /// Whether a request of `audience` sees and may call a tool of this visibility.
    pub fn reaches(self, audience: Audience) -> bool {
        match self {
            Self::Everyone => true,
            Self::App => audience == Audience::ModelAndViews,
        }
    }
}

/// Whether a call's result and arguments are kept as `{tool}_{node}_result` / `_args` variables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Caching {
    /// Cached, in one durable commit per call.
    #[default]
    Durable,
    /// Cached, but written to the store lazily, in batches: the result can be recomputed from
    /// files on disk (the skill tools), so a lost batch loses only a cache.
    Lazy,
    /// Not cached: reading a variable must never create another one (the variable and state
    /// tools, `SkillReadFile`), or the arguments are whole chats (`SnapshotProcess`).
    Off,
}

/// The output limit a tool's result is cut to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Truncation {
    /// The call's `_outputLimit`, else `[tools.X] output_limit`, else the server's limit.
    #[default]
    Configured,
    /// As [`Truncation::Configured`], with this many characters in place of the server's limit
    /// (`SkillLoad`: skill bodies are instructions and are kept whole up to 40,000).
    Default(usize),
    /// Never cut, and `_outputLimit` is not offered: the tool pages its own output (`ReadVar`,
    /// `ReadState`, `SkillReadFile`, which take the limit as their page size), or every part of
    /// the result must arrive (`SnapshotProcess`).
    Never,
}

/// What becomes of `†` references in a call's arguments before the tool runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Daggers {
    /// Resolved by the executor, like `$VAR_REF`.
    #[default]
    Resolved,
    /// Kept as written outside a plan, resolved inside one (`WriteVar`: a plan stored outside a
    /// plan keeps its `†input` and `†steps` references for `RunPlan`, while a plan's step
    /// receives the values the plan computed, as every other step does).
    KeptOutsidePlans,
    /// Always kept, and `$VAR_REF` references with them: the tool resolves them itself
    /// (`RunPlan`, whose steps refer to results and variables that do not exist yet), or stores
    /// them as written (`AppWriteVar`: a person's text is stored as they typed it).
    Kept,
}

/// The outcomes a tool's result may have, in the order the branches of `_outputPath`
/// (`A || B || C`) name them. A built-in tool's and another MCP server's are `success` and
/// `error` (a tool error, `isError`); a script tool may declare its own, and chooses one by its
/// exit code or by a member of its JSON output. A tool error goes to the outcome named `error`,
/// when the tool has one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcomes(Option<Arc<[String]>>);

impl Outcomes {
    /// Outcomes of the tool's own, by name.
    pub fn declared(names: &[String]) -> Self {
        Self(Some(names.into()))
    }

    /// The outcomes' names, in order.
    pub fn names(&self) -> Vec<&str> {
        match &self.0 {
            Some(names) => names.iter().map(String::as_str).collect(),
            None => vec![SUCCESS, ERROR],
        }
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(2, |names| names.len())
    }

    /// Never: a tool has at least one outcome.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The outcome a tool error goes to.
    pub fn error(&self) -> Option<usize> {
        self.names().iter().position(|name| *name == ERROR)
    }
}

/// The outcome of a result, when the tool declares none of its own.
const SUCCESS: &str = "success";
/// The outcome a tool error goes to.
const ERROR: &str = "error";

/// What a tool writes into the workspace besides its `_outputPath`, named by one of its
/// arguments (a literal one: a target named by a reference is not known before the call).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Writes {
    #[default]
    Nothing,
    /// The state document at the dot path this argument gives (`WriteState`'s `path`).
    StateAt(&'static str),
    /// The variable this argument names (`WriteVar`'s `name`).
    VariableNamed(&'static str),
}

impl Daggers {
    /// Whether the references stay as written in a call (`in_plan`: a step of a plan).
    pub fn kept(self, in_plan: bool) -> bool {
        match self {
            Self::Resolved => false,
            Self::KeptOutsidePlans => !in_plan,
            Self::Kept => true,
        }
    }

    /// Whether `$VAR_REF` references also stay as written (the tool resolves them itself).
    pub fn keeps_variable_references(self) -> bool {
        self == Self::Kept
    }
}

impl ToolDefinition {
    /// A definition whose input schema comes from `Arguments`, with the default handling:
    /// auto-approved, cached durably, cut to the configured limit, `†` resolved.
    pub fn new<Arguments: JsonSchema>(
        name: &str,
        description: &str,
        annotations: Annotations,
    ) -> Self {
        Self::with_input_schema(
            name,
            description,
            Schema::later(input_schema::<Arguments>),
            annotations,
        )
    }

    /// A definition whose schemas are written as JSON (a script tool's manifest) rather than
    /// generated, made portable the same way; otherwise as [`ToolDefinition::new`].
    pub fn from_schemas(
        name: &str,
        description: &str,
        annotations: Annotations,
        input: Map<String, Value>,
        output: Option<Map<String, Value>>,
    ) -> Self {
        let mut definition =
            Self::with_input_schema(name, description, portable(input), annotations);
        definition.output_schema = output.map(|output| Schema::ready(portable(output)));
        definition
    }

    /// A definition whose input schema is given as it is (a tool another MCP server declares),
    /// with the default handling.
    pub fn with_input_schema(
        name: &str,
        description: &str,
        input_schema: impl Into<Schema>,
        annotations: Annotations,
    ) -> Self {
        Self {
            name: name.to_owned(),
            title: None,
            description: description.trim().to_owned(),
            input_schema: input_schema.into(),
            output_schema: None,
            annotations,
            permission: Permission::default(),
            caching: Caching::default(),
            truncation: Truncation::default(),
            daggers: Daggers::default(),
            writes: Writes::Nothing,
            outcomes: Outcomes::default(),
            always_listed: false,
            origin_name: None,
            view: None,
            visibility: Visibility::Everyone,
            changes_shared_state: false,
        }
    }

    #[must_use]
    pub fn with_title(mut self, title: &str) -> Self {
        self.title = Some(title.to_owned());
        self
    }

    #[must_use]
    pub fn with_output<Output: JsonSchema>(mut self) -> Self {
        self.output_schema = Some(Schema::later(output_schema::<Output>));
        self
    }

    #[must_use]
    pub fn with_permission(mut self, permission: Permission) -> Self {
        self.permission = permission;
        self
    }

    #[must_use]
    pub fn with_caching(mut self, caching: Caching) -> Self {
        self.caching = caching;
        self
    }

    #[must_use]
    pub fn with_truncation(mut self, truncation: Truncation) -> Self {
        self.truncation = truncation;
        self
    }

    #[must_use]
    pub fn with_daggers(mut self, daggers: Daggers) -> Self {
        self.daggers = daggers;
        self
    }

    #[must_use]
    pub fn with_outcomes(mut self, outcomes: Outcomes) -> Self {
        self.outcomes = outcomes;
        self
    }

    #[must_use]
    pub fn with_writes(mut self, writes: Writes) -> Self {
        self.writes = writes;
        self
    }

    #[must_use]
    pub fn always_listed(mut self) -> Self {
        self.always_listed = true;
        self
    }

    /// Shows the tool's result in `view` (an MCP App resource) on hosts that render apps.
    #[must_use]
    pub fn with_view(mut self, view: &'static str) -> Self {
        self.view = Some(view);
        self
    }

    /// Marks the tool as changing what every workspace of the process shares.
    #[must_use]
    pub fn changing_shared_state(mut self) -> Self {
        self.changes_shared_state = true;
        self
    }

    #[must_use]
    pub fn with_origin_name(mut self, name: &str) -> Self {
        self.origin_name = Some(name.to_owned());
        self
    }

    /// Decodes a call's arguments into the tool's typed parameters ([`parse_arguments`]).
    pub fn parse<Arguments: DeserializeOwned>(
        &self,
        arguments: Value,
    ) -> Result<Arguments, ToolError> {
        parse_arguments(&self.name, arguments)
    }
}
