//! The `skills` group (`docs/skills.md`): `SkillSearch`, `SkillLoad`, `SkillReadFile`, `SkillSave`
//! (in `skills/save.rs`) — thin adapters over [`crate::skills`]. `SkillLoad` answers with the
//! instructions every time: one server process serves many conversations (hosts keep it across
//! chats), so "already loaded" can never be known here. Instructions (and markdown files read
//! whole) longer than the configured limit come as their opening and a table of their sections,
//! which `SkillLoad` and `SkillReadFile` then serve one at a time.

pub mod save;

pub use crate::skills::served::{instructions, skill_content};

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::skills::Library;
use crate::skills::find::{self, Found};
use crate::skills::served::{FileRequest, file_text};
use crate::skills::shelf::Shelf;
use crate::tools::{
    Annotations, Answered, Caching, Context, Declaration, Framed, Origin, ToolError, ToolGroup,
    ToolOutput, Truncation, TypedTool, declare, typed,
};

pub const GROUP: &str = "skills";

/// The group with its tools and its rule prompt.
/// `body_limit`: the most characters of instructions, or of a markdown file, served whole.
pub fn group(shelf: Arc<Shelf>, body_limit: usize) -> ToolGroup {
    let skills = Skills { shelf, body_limit };
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
        about: None,
        tools: vec![
            typed::<SearchArguments, _>(skills.clone()),
            typed::<LoadArguments, _>(skills.clone()),
            typed::<save::SaveArguments, _>(skills.clone()),
            typed::<ReadFileArguments, _>(skills),
        ],
        rule_prompt: Some(
            include_str!("../../skills/synapse-workspace/rules/skills-group.md").to_owned(),
        ),
        rules: Vec::new(),
    }
}

/// What the skill tools are built with: the shelf, and the most characters of instructions,
/// or of a markdown file, served whole.
#[derive(Clone)]
pub struct Skills {
    pub shelf: Arc<Shelf>,
    pub body_limit: usize,
}

/// `SkillSearch` and `SkillLoad` change nothing on disk or in the user's data. Each call caches
/// its result as a variable the user can list, which is not such a write: read-only, so a
/// read-only principal may call them (its cached result displaces nothing a writing principal
/// stored), and not idempotent, since each call caches a new result.
const CACHES: Annotations = Annotations::CACHED_READ;

const SKILL_SEARCH: &str = "Search the skill library. ALWAYS call this before any non-trivial task \
    (writing, analysing, converting, building, reviewing, planning): skills hold tested \
    instructions. Describe the task in a few words; matches come ranked, with the best section of \
    long skills. Then SkillLoad the best match. `rerank: true` asks your client's model to reorder \
    the top candidates (slower) when the words differ or close matches compete.";

const SKILL_LOAD: &str = "Load a skill's instructions by name (from SkillSearch) and follow them: \
    the SKILL.md body, its folder, and its other files listed (read them with SkillReadFile when \
    the instructions say). Long instructions come as their opening and a table of sections; load \
    one with `section`. Load again whenever you no longer have it.";

const SKILL_READ_FILE: &str = "Read a skill's file (reference, template, script) by its path in \
    the skill folder, whole or a window by characters; a long markdown file comes as its opening \
    and a table of sections (read one with `section`).";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SearchArguments {
    /// The task in a few words, e.g. "merge pdf files".
    pub query: String,
    /// Most skills returned (1–50, default 5).
    pub max_results: Option<usize>,
    /// Only skills with all these tags.
    pub tags: Option<Vec<String>>,
    /// Let the client's model reorder the top candidates (needs sampling).
    pub rerank: Option<bool>,
}

impl SearchArguments {
    /// The search the arguments ask for; an empty query is refused.
    fn request(
        self,
        model: Option<&dyn find::Model>,
        body_limit: usize,
    ) -> Result<find::Request<'_>, ToolError> {
        if self.query.trim().is_empty() {
            return Err(ToolError::invalid(
                "`query` is empty: describe the task in a few words",
            ));
        }
        Ok(find::Request {
            query: self.query,
            max_results: self.max_results,
            tags: self.tags.unwrap_or_default(),
            rerank: self.rerank == Some(true),
            model,
            body_limit,
        })
    }
}

/// `SkillSearch`: ranks the library's skills for a task, and may ask the client's model to
/// reorder the best of them. Its cached results can be recomputed from the skill folders, so
/// they reach the store lazily. The only skill tool that may wait on the client (its model,
/// for `rerank`).
impl TypedTool<Skills> for SearchArguments {
    type Output = Found;
    const TOOL: Declaration = declare! {
        "SkillSearch", "Search skills", CACHES, SKILL_SEARCH, caching(Caching::Lazy)
    };

    async fn run(self, context: Context<'_, Skills>) -> Answered<Found> {
        let sampler = context.session()?.sampler;
        let model = sampler.as_ref().map(|sampler| sampler as &dyn find::Model);
        let request = self.request(model, context.service.body_limit)?;
        Ok(find::find(&context.service.shelf, request).await)
    }

    fn format_for_llm(output: &ToolOutput, _arguments: &Value) -> String {
        match output {
            ToolOutput::Structured(value) => find::text_for_model(value),
            other => crate::tools::plain_text(other),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadArguments {
    /// The skill's name, from `SkillSearch`.
    pub name: String,
    /// A section id from the table of sections (or `SkillSearch`), with its subsections.
    pub section: Option<String>,
    /// Accepted for calls written for older versions, and left out of the schema: the
    /// instructions are returned on every call whatever its value.
    #[schemars(skip)]
    pub force: Option<bool>,
}

/// `SkillLoad`: a skill's instructions, every time: whole, or, past the body limit, their
/// opening and table of sections, then one section a call. What it serves is kept whole up to
/// 40,000 characters (about 10,000 tokens, twice the size the specification recommends for a
/// whole body), and cached lazily, since it can be read again from disk. Quick once the first
/// scan is done; until then, it waits for it without blocking.
impl TypedTool<Skills> for LoadArguments {
    type Output = Framed;
    const TOOL: Declaration = declare! {
        "SkillLoad", "Load skill", CACHES, SKILL_LOAD,
        truncation(Truncation::Default(40_000)), caching(Caching::Lazy)
    };

    async fn run(self, context: Context<'_, Skills>) -> Answered<Framed> {
        let mut library = context.service.shelf.loaded().await;
        if library.find(&self.name).is_none() && !library.loading().is_empty() {
            library = after_first_fetch(&context, &library).await;
        }
        let skill = library.get(&self.name).map_err(|error| {
            match find::still_loading(library.loading()) {
                Some(note) => ToolError::invalid(format!("{error}; {note}: try again in a moment")),
                None => error.into(),
            }
        })?;
        let section = self.section.as_deref();
        Ok(instructions(skill, section, context.service.body_limit)?)
    }
}

/// The longest `SkillLoad` waits for the first fetch of the git skill sources.
const SOURCE_WAIT: Duration = Duration::from_secs(30);

/// A skill asked for by name that is not in the library while git sources are being fetched for
/// the first time may be in one of them: waits for their fetch (at most [`SOURCE_WAIT`], or
/// until the call is cancelled), telling the client when it gave a `progressToken`.
async fn after_first_fetch(context: &Context<'_, Skills>, library: &Library) -> Arc<Library> {
    let sources = library.loading();
    let progress = context.session().ok().and_then(|call| call.progress);
    #[expect(
        clippy::cast_precision_loss,
        reason = "a handful of sources; progress is a float on the wire"
    )]
    let total = sources.len() as f64;
    if let Some(progress) = progress {
        let message = format!("waiting for the first fetch of {}", sources.join(", "));
        progress.report(0.0, Some(total), Some(message)).await;
    }
    let shelf = &context.service.shelf;
    let fetched = tokio::select! {
        fetched = shelf.fetched_within(SOURCE_WAIT) => fetched,
        () = context.cancellation.cancelled() => shelf.loaded().await,
    };
    if let Some(progress) = progress.filter(|_| fetched.loading().is_empty()) {
        let message = format!("{total} of {total} skill sources fetched");
        progress.report(total, Some(total), Some(message)).await;
    }
    fetched
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArguments {
    /// The skill's name.
    pub name: String,
    /// Path in the skill folder, e.g. `references/REFERENCE.md`.
    pub path: String,
    /// First character (0-based). Default 0.
    pub start: Option<usize>,
    /// Characters to read. Default: up to the output limit.
    pub length: Option<usize>,
    /// A section id of a markdown file; `start` and `length` count within it.
    pub section: Option<String>,
}

impl ReadFileArguments {
    fn request(&self) -> FileRequest<'_> {
        FileRequest {
            path: &self.path,
            section: self.section.as_deref(),
            start: self.start,
            length: self.length,
        }
    }
}

/// `SkillReadFile`: a window of one file of a skill, read from disk beside the session. It
/// pages the file itself, like `ReadVar`, and the file stays addressable, so its pages are
/// neither cut again nor cached as variables.
impl TypedTool<Skills> for ReadFileArguments {
    type Output = Framed;
    const TOOL: Declaration = declare! {
        "SkillReadFile", "Read skill file", READS, SKILL_READ_FILE, whole, uncached, pooled
    };

    async fn run(self, context: Context<'_, Skills>) -> Answered<Framed> {
        let library = context.service.shelf.library();
        let limits = (context.output_limit, context.service.body_limit);
        Ok(file_text(
            library.get(&self.name)?,
            &self.request(),
            limits,
        )?)
    }
}

const READS: Annotations = Annotations::READ_ONLY;
