//! The `snapshots` group (`docs/snapshots.md`): chat state snapshots ([`chats`]), the function
//! library ([`functions`], arranged and tested by [`library`]), the processing switch
//! ([`switches`]) and character templates ([`templates`]), as thin adapters over
//! [`crate::snapshots::Snapshots`]. The work (SQLite, QuickJS) is synchronous and may take a
//! while on a long chat, so every tool runs on tokio's blocking pool; the call's cancellation
//! (the client cancelled, or left) reaches it there.

pub mod chats;
pub mod floors;
pub mod functions;
pub mod library;
pub mod switches;
pub mod templates;

use std::sync::Arc;

use crate::snapshots::Snapshots;
use crate::tools::{Annotations, Consent, Origin, Permission, Policy, ToolGroup};

pub const GROUP: &str = "snapshots";

/// Reads that change no stored data. Their result (and arguments) is cached as variables the
/// user can list, which is not a write to the user's data: read-only, so a read-only principal
/// may call them (its cached result displaces nothing a writing principal stored), and not
/// idempotent, since each call caches a new result.
const CACHED_READ: Annotations = annotations(true, false, false);
/// Adds new records, replacing none.
const WRITES: Annotations = annotations(false, false, false);
/// Replaces what is stored under a name or id; the same call again changes nothing more.
const OVERWRITES: Annotations = annotations(false, true, true);
/// Replaces what is stored, or adds a new record (with a new id) each time it is called.
const OVERWRITES_OR_ADDS: Annotations = annotations(false, true, false);
/// Deletes stored records.
const DESTRUCTIVE: Annotations = annotations(false, true, true);

/// Destroys stored data that cannot be rebuilt (a state, a template, a function's code, a
/// snapshot): asks the user once per argument shape first, like the other tools that destroy
/// what they cannot restore (`SkillSave`). The tools that only rearrange or switch what is
/// stored (`FunctionMove`, `FunctionReorder`, `FunctionEnable`, `SnapshotEnable`) can be undone
/// by another call, so they do not ask.
const ASKS_FIRST: Permission = Permission {
    execution: Policy::AskOnce,
    result: Policy::Auto,
};

/// The consent of a tool that replaces or adds: only a call that replaces what is stored is
/// asked; one that adds destroys nothing.
fn asked_when(replaces: bool) -> Consent {
    if replaces {
        Consent::Asked { scope: None }
    } else {
        Consent::NotNeeded
    }
}

const fn annotations(read_only: bool, destructive: bool, idempotent: bool) -> Annotations {
    Annotations {
        read_only,
        destructive,
        idempotent,
        open_world: false,
    }
}

/// The group with its tools and its rule prompt.
pub fn group(service: &Arc<Snapshots>) -> ToolGroup {
    let service = || Arc::clone(service);
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
        tools: vec![
            Arc::new(chats::SnapshotProcess::new(service())),
            Arc::new(chats::SnapshotApply::new(service())),
            Arc::new(chats::SnapshotGet::new(service())),
            Arc::new(chats::SnapshotUpdate::new(service())),
            Arc::new(chats::SnapshotDeleteChat::new(service())),
            Arc::new(chats::SnapshotCleanup::new(service())),
            Arc::new(switches::SnapshotEnable::new(service())),
            Arc::new(functions::FunctionList::new(service())),
            Arc::new(functions::FunctionUpsert::new(service())),
            Arc::new(functions::FunctionRemove::new(service())),
            Arc::new(functions::FunctionImport::new(service())),
            Arc::new(functions::FunctionExport::new(service())),
            Arc::new(library::FunctionMove::new(service())),
            Arc::new(library::FunctionReorder::new(service())),
            Arc::new(library::FunctionEnable::new(service())),
            Arc::new(library::FunctionTest::new(service())),
            Arc::new(templates::TemplateGet::new(service())),
            Arc::new(templates::TemplateSet::new(service())),
            Arc::new(floors::SnapshotList::new(service())),
            Arc::new(floors::SnapshotDiff::new(service())),
            Arc::new(floors::SnapshotReprocess::new(service())),
            Arc::new(floors::SnapshotDelete::new(service())),
            Arc::new(floors::SnapshotGlobalSave::new(service())),
            Arc::new(floors::SnapshotGlobalList::new(service())),
            Arc::new(floors::SnapshotGlobalGet::new(service())),
            Arc::new(floors::SnapshotGlobalDelete::new(service())),
        ],
        rule_prompt: Some(
            include_str!("../../skills/synapse-workspace/rules/snapshots-group.md").to_owned(),
        ),
        rules: Vec::new(),
    }
}
