//! The `snapshots` group (`docs/snapshots.md`): chat state snapshots ([`chats`]), the function
//! library ([`functions`], arranged and tested by [`library`]), the processing switch
//! ([`switches`]) and character templates ([`templates`]), as thin adapters over
//! [`crate::snapshots::Snapshots`]. The work (SQLite, QuickJS) is synchronous and may take a
//! while on a long chat, so every tool runs on tokio's blocking pool; the call's cancellation
//! (the client cancelled, or left) reaches it there (`pooled` in each declaration).
//!
//! A tool that destroys stored data that cannot be rebuilt (a state, a template, a function's
//! code, a snapshot) asks the user once per argument shape first (`asks_once`), like the other
//! tools that destroy what they cannot restore (`SkillSave`). The tools that only rearrange or
//! switch what is stored (`FunctionMove`, `FunctionReorder`, `FunctionEnable`,
//! `SnapshotEnable`) can be undone by another call, so they do not ask.

pub mod chats;
pub mod floors;
pub mod functions;
pub mod library;
pub mod switches;
pub mod templates;

use std::sync::Arc;

use crate::snapshots::Snapshots;
use crate::tools::{Annotations, Context, Origin, ToolGroup, typed};

pub const GROUP: &str = "snapshots";

/// Reads that change no stored data. Their result (and arguments) is cached as variables the
/// user can list, which is not a write to the user's data: read-only, so a read-only principal
/// may call them (its cached result displaces nothing a writing principal stored), and not
/// idempotent, since each call caches a new result.
const CACHED_READ: Annotations = Annotations::CACHED_READ;
/// Adds new records, replacing none.
const WRITES: Annotations = Annotations::NONE;
/// Replaces what is stored under a name or id; the same call again changes nothing more.
const OVERWRITES: Annotations = Annotations::OVERWRITES;
/// Replaces what is stored, or adds a new record (with a new id) each time it is called.
const OVERWRITES_OR_ADDS: Annotations = Annotations::DESTRUCTIVE;
/// Deletes stored records.
const DESTRUCTIVE: Annotations = Annotations::OVERWRITES;

/// The group with its tools and its rule prompt.
pub fn group(service: &Arc<Snapshots>) -> ToolGroup {
    let service = || Arc::clone(service);
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
        about: Some(
            "chat state snapshots from function calls in role-play replies (SillyTavern), state functions, templates",
        ),
        tools: vec![
            typed::<chats::ProcessArguments, _>(service()),
            typed::<chats::ApplyArguments, _>(service()),
            typed::<chats::GetArguments, _>(service()),
            typed::<chats::UpdateArguments, _>(service()),
            typed::<chats::DeleteChatArguments, _>(service()),
            typed::<chats::CleanupArguments, _>(service()),
            typed::<switches::SwitchArguments, _>(service()),
            typed::<functions::ScopeArguments, _>(service()),
            typed::<functions::UpsertArguments, _>(service()),
            typed::<functions::RemoveArguments, _>(service()),
            typed::<functions::ImportArguments, _>(service()),
            typed::<functions::ExportArguments, _>(service()),
            typed::<library::MoveArguments, _>(service()),
            typed::<library::ReorderArguments, _>(service()),
            typed::<library::EnableArguments, _>(service()),
            typed::<library::TestArguments, _>(service()),
            typed::<templates::TemplateGetArguments, _>(service()),
            typed::<templates::TemplateSetArguments, _>(service()),
            typed::<floors::ListArguments, _>(service()),
            typed::<floors::DiffArguments, _>(service()),
            typed::<floors::ReprocessArguments, _>(service()),
            typed::<floors::DeleteArguments, _>(service()),
            typed::<floors::GlobalSaveArguments, _>(service()),
            typed::<floors::NoArguments, _>(service()),
            typed::<floors::GlobalArguments, _>(service()),
            typed::<floors::GlobalDeleteArguments, _>(service()),
        ],
        rule_prompt: Some(
            include_str!("../../skills/synapse-workspace/rules/snapshots-group.md").to_owned(),
        ),
        rules: Vec::new(),
    }
}

/// What a tool of the group runs with.
type Call<'a> = Context<'a, Arc<Snapshots>>;

/// The snapshot service of the call's workspace.
/// Reports `done` of `total` messages processed, when the client asked for progress.
fn message_steps(context: &Call<'_>, done: usize, total: usize) {
    if let Some(steps) = context.steps {
        steps.report(done, total, "messages");
    }
}

fn service(context: &Call<'_>) -> Arc<Snapshots> {
    context.service.of(context.workspace.name())
}
