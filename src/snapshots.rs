//! Chat state snapshots and the function library (`docs/snapshots.md`): a JSON state per chat that the
//! function calls in AI replies (`@.SET("角色.名字", "张三");`) update, one snapshot per AI
//! message swipe, bound to it by a UUID and stored durably.
//!
//! - [`literal`] reads call arguments; [`calls`] finds the built-in syntaxes in a reply;
//!   [`builtins`] applies them natively; [`javascript`] runs user functions and patterns in
//!   QuickJS under time and memory limits; [`functions`] is the library (built-ins, scopes,
//!   export format, prompt); [`engine`] applies one message; [`chat`] is the flow over
//!   SillyTavern messages; [`diff`] compares states (JSON Patch, floor summaries).
//! - Floors (a chat's snapshots by message, reprocessing, deleting one) and global snapshots
//!   (states saved under a label) are further methods of [`Snapshots`], in `floors.rs` and
//!   `globals.rs`.
//! - [`Snapshots`] ties them to a store. It knows nothing of MCP.
//!
//! A long chat is processed as a stream: its snapshots are stored in batches of
//! [`BATCH_SNAPSHOTS`], each laid out from the paths its message changed, so memory follows the
//! state's size, not the chat's length, and a cancelled call stops between two messages with
//! every snapshot it listed already stored.

pub mod builtins;
pub mod calls;
pub mod chat;
pub mod diff;
mod dry_run;
pub mod engine;
mod floors;
pub mod functions;
pub mod globals;
pub mod javascript;
mod library;
pub mod literal;
pub mod switches;
pub mod unknown;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::json::nesting;
use crate::store::tree::{Encoded, SnapshotKey};
use crate::store::{self, SnapshotStore, StorageReport, StoredSnapshot};
use chat::{Base, Binding, ChatMessage};
use engine::{CallError, MessageContext};
use functions::{Active, Export, Scope, VarFunction};

pub use dry_run::{TestBase, Tested};
pub use floors::{FloorList, FloorQuery, PAGE, Page, Reprocessed, Source};

/// Why a snapshot operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A mistake in the request; the message says how to fix it.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// A chat sent from `first_index` on must start from a stored snapshot among the messages
/// given, made for the message it is bound to now: otherwise the messages before them were
/// never processed, or were deleted or inserted since (the floor moved), and processing the
/// tail alone would build on a state the chat no longer has.
fn tail_is_anchored(
    first_index: usize,
    anchor: Option<&(usize, String)>,
    loaded: Option<&StoredSnapshot>,
) -> Result<(), Error> {
    let (Some((index, id)), Some(found)) = (anchor, loaded) else {
        return invalid(format!(
            "no AI message among those given from firstIndex {first_index} is bound to a stored \
             snapshot: send the whole chat (firstIndex 0)"
        ));
    };
    let now = first_index + index;
    match found.message_id {
        Some(made_for) if made_for != now as u64 => invalid(format!(
            "snapshot {id}, bound to message {now}, was made for message {made_for}: messages \
             before it were deleted or inserted since; send the whole chat (firstIndex 0), or \
             SnapshotReprocess from the first message that changed"
        )),
        _ => Ok(()),
    }
}

fn invalid<T>(message: impl Into<String>) -> Result<T, Error> {
    Err(Error::Invalid(message.into()))
}

/// Snapshots stored per transaction while processing a chat.
pub const BATCH_SNAPSHOTS: usize = 256;

/// A whole value entering the store (a template, an edited snapshot) must be readable back.
fn within_limit(what: &str, value: &Value) -> Result<(), Error> {
    nesting::check(value, 0).map_err(|too_deep| Error::Invalid(format!("{what} {too_deep}")))
}

fn too_deep(what: &str, error: nesting::TooDeep) -> Error {
    Error::Invalid(format!("{what} {error}"))
}

/// A call that failed while processing a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageError {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swipe_id: Option<usize>,
    #[serde(flatten)]
    pub error: CallError,
}

/// What `SnapshotProcess` found and did.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Processed {
    /// New snapshot ids to write back, one per processed AI message, oldest first.
    pub bindings: Vec<Binding>,
    /// Bound ids that are not stored: they were treated as absent (their messages got new bindings).
    pub dropped: Vec<Binding>,
    /// What processing started from.
    pub base: Base,
    /// The newest AI message's snapshot id (absent when the chat has no AI message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_snapshot_id: Option<String>,
    /// The newest snapshot: the chat variable `{{vs_stat_data}}`.
    #[serde(rename = "vs_stat_data")]
    #[schemars(extend("type" = "object"))]
    pub vs_stat_data: Value,
    /// Calls that failed and were skipped; every other call applied.
    pub errors: Vec<MessageError>,
    /// What the new snapshots added to the store.
    pub storage: StorageReport,
    /// Present when the call was cancelled part way: the bindings listed are stored and
    /// valid; the later messages were not processed (call again to go on from them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// Present when processing is switched off for the chat or its character (SnapshotEnable):
    /// nothing was processed or stored, and `vs_stat_data` is the state as it stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled: Option<switches::Disabled>,
}

/// Where a chat starts when none of its AI messages is bound to a stored snapshot.
#[derive(Debug, Clone, Default)]
pub struct Start<'a> {
    /// The character whose template and functions apply.
    pub character_id: Option<&'a str>,
    /// A template given with the call (wins over the character's).
    pub template: Option<Value>,
    /// A global snapshot (id or label) to start from (wins over both templates).
    pub base_id: Option<&'a str>,
    /// The index in the whole chat of the first message given: a caller that sends only the
    /// messages from its newest bound AI message on says where they start, and every index
    /// answered or stored is counted in the whole chat. With it above 0, one of the messages
    /// given must be bound to a stored snapshot made for that same message index.
    pub first_index: usize,
}

/// How far a cancelled `SnapshotProcess` got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stopped {
    /// AI messages processed and stored.
    pub processed: usize,
    /// AI messages left unprocessed.
    pub remaining: usize,
}

/// What `SnapshotApply` did.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    pub snapshot_id: String,
    #[schemars(extend("type" = "object"))]
    pub snapshot: Value,
    pub errors: Vec<CallError>,
    pub storage: StorageReport,
}

/// The snapshot service of one workspace.
pub struct Snapshots {
    store: Arc<dyn SnapshotStore>,
    workspace: String,
    /// One JavaScript thread for every workspace a process serves.
    engine: Arc<javascript::Engine>,
}

impl Snapshots {
    pub fn new(
        store: Arc<dyn SnapshotStore>,
        workspace: impl Into<String>,
        limits: javascript::Limits,
    ) -> Self {
        Self {
            store,
            workspace: workspace.into(),
            engine: Arc::new(javascript::Engine::new(limits)),
        }
    }

    /// The service of `workspace`, over the same store and JavaScript engine (itself when it
    /// is this one's): the snapshot tools are registered once and serve every workspace a
    /// process serves, each call in its own.
    pub fn of(self: &Arc<Self>, workspace: &str) -> Arc<Self> {
        if workspace == self.workspace {
            return Arc::clone(self);
        }
        Arc::new(Self {
            store: Arc::clone(&self.store),
            workspace: workspace.to_owned(),
            engine: Arc::clone(&self.engine),
        })
    }

    pub fn engine(&self) -> &javascript::Engine {
        &self.engine
    }

    fn stored_functions(&self, scope: &Scope) -> Result<Vec<VarFunction>, Error> {
        self.store
            .functions(&self.workspace, &scope.key())?
            .into_iter()
            .map(|definition| {
                serde_json::from_value(definition).map_err(|error| {
                    Error::Invalid(format!("a stored function cannot be read: {error}"))
                })
            })
            .collect()
    }

    /// A scope's functions as users see them (the global scope includes the built-ins).
    pub fn functions(&self, scope: &Scope) -> Result<Vec<VarFunction>, Error> {
        let stored = self.stored_functions(scope)?;
        Ok(match scope {
            Scope::Global => functions::global_with_builtins(stored),
            Scope::Character(_) => stored,
        })
    }

    /// Global and the character's functions together.
    pub fn library(&self, character_id: Option<&str>) -> Result<Vec<VarFunction>, Error> {
        let mut all = self.functions(&Scope::Global)?;
        if let Scope::Character(id) = Scope::of(character_id) {
            all.extend(self.functions(&Scope::Character(id))?);
        }
        Ok(all)
    }

    /// Creates or replaces a function (a new UUID when it has no id). Its pattern and
    /// JavaScript must compile.
    pub fn upsert_function(
        &self,
        mut function: VarFunction,
        scope: &Scope,
    ) -> Result<VarFunction, Error> {
        if function.id.is_empty() {
            function.id = uuid::Uuid::new_v4().to_string();
        }
        functions::validate(&function).map_err(Error::Invalid)?;
        if functions::is_builtin_id(&function.id) && *scope != Scope::Global {
            return invalid(format!(
                "`{}` is a built-in function of the global scope; leave out characterId to change it",
                function.name
            ));
        }
        if function.builtin.is_none() {
            self.check_javascript(&function)?;
        }
        let definition =
            serde_json::to_value(&function).map_err(|error| Error::Invalid(error.to_string()))?;
        self.store.put_functions(
            &self.workspace,
            &scope.key(),
            &[(function.id.clone(), definition)],
        )?;
        Ok(function)
    }

    fn check_javascript(&self, function: &VarFunction) -> Result<(), Error> {
        self.engine.check(&function.executor).map_err(|error| {
            Error::Invalid(format!(
                "the executor of `{}` does not compile: {error}",
                function.name
            ))
        })?;
        if let Some(pattern) = &function.pattern {
            let (source, flags) = functions::split_pattern(pattern);
            self.engine
                .find(&Arc::from(source), flags, &Arc::from(""))
                .map_err(|error| {
                    Error::Invalid(format!(
                        "the pattern of `{}` is not a valid JavaScript regex: {error}",
                        function.name
                    ))
                })?;
        }
        Ok(())
    }

    /// Removes a function; returns it.
    pub fn remove_function(&self, id: &str, scope: &Scope) -> Result<VarFunction, Error> {
        if functions::is_builtin_id(id) {
            return invalid(format!(
                "`{id}` is a built-in function and cannot be removed; FunctionUpsert it with \"enabled\": false to turn it off"
            ));
        }
        let existing = self
            .stored_functions(scope)?
            .into_iter()
            .find(|function| function.id == id);
        let Some(existing) = existing else {
            return invalid(format!(
                "no function `{id}` in the {} scope; FunctionList shows the ids",
                describe_scope(scope)
            ));
        };
        self.store
            .remove_function(&self.workspace, &scope.key(), id)?;
        Ok(existing)
    }

    /// Imports the library export format: every function gets a new UUID and starts disabled.
    pub fn import(&self, export: Export, scope: &Scope) -> Result<Vec<VarFunction>, Error> {
        let mut imported = Vec::with_capacity(export.functions.len());
        for mut function in export.functions {
            function.id = uuid::Uuid::new_v4().to_string();
            function.enabled = false;
            function.builtin = None;
            functions::validate(&function).map_err(|message| {
                Error::Invalid(format!("cannot import `{}`: {message}", function.name))
            })?;
            self.check_javascript(&function)?;
            imported.push(function);
        }
        let rows = imported
            .iter()
            .map(|function| {
                Ok((
                    function.id.clone(),
                    serde_json::to_value(function)
                        .map_err(|error| Error::Invalid(error.to_string()))?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        self.store
            .put_functions(&self.workspace, &scope.key(), &rows)?;
        Ok(imported)
    }

    /// The library export format, of some ids or the whole scope.
    pub fn export(&self, ids: Option<&[String]>, scope: &Scope) -> Result<Export, Error> {
        let all = self.functions(scope)?;
        let functions = match ids {
            None => all,
            Some(ids) => {
                let mut chosen = Vec::with_capacity(ids.len());
                for id in ids {
                    let found = all.iter().find(|function| &function.id == id).cloned();
                    chosen.push(found.ok_or_else(|| {
                        Error::Invalid(format!(
                            "no function `{id}` in the {} scope; FunctionList shows the ids",
                            describe_scope(scope)
                        ))
                    })?);
                }
                chosen
            }
        };
        Ok(Export {
            version: "1.0".to_owned(),
            functions,
        })
    }

    pub fn template(&self, character_id: &str) -> Result<Option<Value>, Error> {
        Ok(self.store.template(&self.workspace, character_id)?)
    }

    pub fn set_template(&self, character_id: &str, template: &Value) -> Result<(), Error> {
        if !template.is_object() {
            return invalid("a template must be a JSON object, such as {\"角色\": {\"金币\": 0}}");
        }
        within_limit("the template", template)?;
        Ok(self
            .store
            .set_template(&self.workspace, character_id, template)?)
    }

    pub fn snapshot(&self, id: &str) -> Result<StoredSnapshot, Error> {
        self.store.snapshot(&self.workspace, id)?.ok_or_else(|| {
            Error::Invalid(format!("no snapshot `{id}`; its chat may have been deleted (SnapshotProcess makes new ones)"))
        })
    }

    /// Replaces a snapshot in place (same id).
    pub fn update(&self, id: &str, snapshot: &Value) -> Result<(), Error> {
        if !snapshot.is_object() {
            return invalid("a snapshot must be a JSON object");
        }
        within_limit("the snapshot", snapshot)?;
        if self.store.update_snapshot(&self.workspace, id, snapshot)? {
            Ok(())
        } else {
            invalid(format!(
                "no snapshot `{id}` to update; SnapshotGet shows what exists"
            ))
        }
    }

    pub fn delete_chat(&self, chat_file: &str) -> Result<u64, Error> {
        Ok(self.store.delete_chat(&self.workspace, chat_file)?)
    }

    /// Deletes the snapshots of every chat not in `active_chat_files`. An empty list would
    /// delete every chat's snapshots: that takes `all`.
    pub fn cleanup(
        &self,
        active_chat_files: &[String],
        all: bool,
    ) -> Result<Vec<(String, u64)>, Error> {
        match (active_chat_files.is_empty(), all) {
            (true, false) => {
                let chats = self.chats()?;
                let snapshots: u64 = chats.iter().map(|(_, count)| count).sum();
                return invalid(format!(
                    "`activeChatFiles` is empty, which would delete the snapshots of every chat \
                     ({} chats, {snapshots} snapshots); list the chat files that still exist, or \
                     pass \"all\": true to delete them all",
                    chats.len()
                ));
            }
            (false, true) => {
                return invalid(
                    "`all: true` deletes every chat's snapshots and takes an empty \
                     `activeChatFiles`; leave out `all` to keep the chats listed",
                );
            }
            _ => {}
        }
        Ok(self.store.cleanup(&self.workspace, active_chat_files)?)
    }

    pub fn chats(&self) -> Result<Vec<(String, u64)>, Error> {
        Ok(self.store.chats(&self.workspace)?)
    }

    /// The ids of a chat's snapshots, by message and swipe.
    pub fn snapshot_ids(&self, chat_file: &str) -> Result<Vec<String>, Error> {
        Ok(self.store.snapshot_ids(&self.workspace, chat_file)?)
    }

    /// The characters known to the store: those with a template or functions of their own.
    pub fn characters(&self) -> Result<Vec<String>, Error> {
        let mut characters = self.store.template_characters(&self.workspace)?;
        characters.extend(
            self.store
                .function_scopes(&self.workspace)?
                .into_iter()
                .filter_map(|scope| scope.strip_prefix("character:").map(str::to_owned)),
        );
        characters.sort();
        characters.dedup();
        Ok(characters)
    }

    /// The starting state for a character: a global snapshot, the given template, the stored
    /// one, or `{}`.
    fn base_state(&self, start: &Start<'_>) -> Result<(Value, Base), Error> {
        if let Some(reference) = start.base_id {
            let global = self.global(reference)?;
            return Ok((
                global.value,
                Base::Global {
                    snapshot_id: global.id,
                    label: global.label,
                },
            ));
        }
        if let Some(template) = start.template.clone() {
            if !template.is_object() {
                return invalid("`template` must be a JSON object");
            }
            within_limit("`template`", &template)?;
            return Ok((template, Base::Template));
        }
        let stored = match start.character_id {
            Some(id) => self.template(id)?,
            None => None,
        };
        Ok(match stored {
            Some(template) => (template, Base::Template),
            None => (builtins::empty(), Base::Empty),
        })
    }

    /// The flow over a whole chat, from the character's template (or `template`). `cancelled`
    /// is asked between messages: once it says yes, what was processed is stored and the rest
    /// is left (see [`Stopped`]).
    pub fn process(
        &self,
        chat_file: &str,
        messages: &[ChatMessage],
        character_id: Option<&str>,
        template: Option<Value>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Processed, Error> {
        let start = Start {
            character_id,
            template,
            base_id: None,
            first_index: 0,
        };
        self.process_from(chat_file, messages, &start, cancelled)
    }

    /// The newest AI message bound to a stored snapshot, with that snapshot.
    fn anchor(
        &self,
        messages: &[ChatMessage],
    ) -> Result<(chat::Anchor, Option<StoredSnapshot>), Error> {
        let mut loaded: Option<StoredSnapshot> = None;
        let mut failure = None;
        let anchor = chat::anchor(messages, |id| {
            match self.store.snapshot(&self.workspace, id) {
                Ok(Some(found)) => {
                    loaded = Some(found);
                    true
                }
                Ok(None) => false,
                Err(error) => {
                    failure.get_or_insert(error);
                    true
                }
            }
        });
        match failure {
            Some(error) => Err(error.into()),
            None => Ok((anchor, loaded)),
        }
    }

    /// The flow over a whole chat from where `start` says when no message is bound.
    pub fn process_from(
        &self,
        chat_file: &str,
        messages: &[ChatMessage],
        start: &Start<'_>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Processed, Error> {
        let character_id = start.character_id;
        if let Some(disabled) = self.disabled(chat_file, character_id)? {
            return self.unprocessed(messages, start, disabled);
        }
        let (anchor, loaded) = self.anchor(messages)?;
        let offset = start.first_index;
        if offset > 0 {
            tail_is_anchored(offset, anchor.start.as_ref(), loaded.as_ref())?;
        }
        let (mut state, base) = match (&anchor.start, loaded) {
            (Some((index, id)), Some(found)) => (
                found.value,
                Base::Snapshot {
                    message_index: offset + *index,
                    snapshot_id: id.clone(),
                },
            ),
            _ => self.base_state(start)?,
        };
        let active = Active::from(self.library(character_id)?);
        let scripted = runs_scripts(&active);
        let mut bindings = Vec::with_capacity(anchor.pending.len());
        let mut batch = Encoded::new();
        let mut storage = StorageReport::default();
        let mut errors = Vec::new();
        let mut stopped = None;
        for (done, &index) in anchor.pending.iter().enumerate() {
            if cancelled() {
                stopped = Some(Stopped {
                    processed: done,
                    remaining: anchor.pending.len() - done,
                });
                break;
            }
            let message = &messages[index];
            let index = offset + index;
            let context = MessageContext {
                chat_file: chat_file.to_owned(),
                message_index: Some(index),
                swipe_id: Some(message.active_swipe()),
                character_id: character_id.map(str::to_owned),
                send_date: message.send_millis(),
            };
            let before = scripted.then(|| state.clone());
            let (engine, text) = (&self.engine, message.text());
            let outcome = engine::apply(engine, &active, &mut state, text, (&context, cancelled));
            let summary = diff::summary(before.as_ref(), &state, &outcome.changed);
            errors.extend(outcome.errors.into_iter().map(|error| MessageError {
                message_index: Some(index),
                swipe_id: Some(message.active_swipe()),
                error,
            }));
            let id = uuid::Uuid::new_v4().to_string();
            bindings.push(Binding {
                message_index: index,
                swipe_id: message.active_swipe(),
                snapshot_id: id.clone(),
            });
            let key = SnapshotKey {
                id,
                chat_file: chat_file.to_owned(),
                message_id: Some(index as u64),
                swipe_id: Some(message.active_swipe() as u64),
                created_at: None,
                summary: Some(summary),
                stored_bytes: None,
            };
            lay_out(&mut batch, key, &state, &outcome.changed)?;
            if batch.snapshots.len() >= BATCH_SNAPSHOTS {
                self.commit(&mut batch, &mut storage)?;
            }
        }
        self.commit(&mut batch, &mut storage)?;
        let latest_snapshot_id = bindings
            .last()
            .map(|binding| binding.snapshot_id.clone())
            .or_else(|| anchor.start.as_ref().map(|(_, id)| id.clone()));
        let mut dropped = anchor.dropped;
        for binding in &mut dropped {
            binding.message_index += offset;
        }
        Ok(Processed {
            bindings,
            dropped,
            base,
            latest_snapshot_id,
            vs_stat_data: state,
            errors,
            storage,
            stopped,
            disabled: None,
        })
    }

    /// Stores a batch of snapshots (if any) in one transaction and adds up what it cost.
    fn commit(&self, batch: &mut Encoded, storage: &mut StorageReport) -> Result<(), Error> {
        if batch.is_empty() {
            return Ok(());
        }
        let report = self.store.put_snapshots(&self.workspace, batch)?;
        storage.snapshots += report.snapshots;
        storage.new_nodes += report.new_nodes;
        storage.new_bytes += report.new_bytes;
        batch.committed();
        Ok(())
    }

    /// One message applied to a base snapshot (or the template), stored as a new snapshot.
    pub fn apply(
        &self,
        chat_file: &str,
        text: &str,
        base_id: Option<&str>,
        character_id: Option<&str>,
        message_index: Option<usize>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Applied, Error> {
        let mut state = if let Some(reference) = base_id {
            self.resolve(reference)?.0
        } else {
            let start = Start {
                character_id,
                ..Start::default()
            };
            self.base_state(&start)?.0
        };
        let before = state.clone();
        let active = Active::from(self.library(character_id)?);
        let context = MessageContext {
            chat_file: chat_file.to_owned(),
            message_index,
            swipe_id: None,
            character_id: character_id.map(str::to_owned),
            send_date: None,
        };
        let outcome = engine::apply(
            &self.engine,
            &active,
            &mut state,
            text,
            (&context, cancelled),
        );
        let id = uuid::Uuid::new_v4().to_string();
        let mut new = Encoded::new();
        let key = SnapshotKey {
            id: id.clone(),
            chat_file: chat_file.to_owned(),
            message_id: message_index.map(|index| index as u64),
            swipe_id: None,
            created_at: None,
            summary: Some(diff::summary(Some(&before), &state, &outcome.changed)),
            stored_bytes: None,
        };
        new.add(key, &state)
            .map_err(|error| too_deep("the state", error))?;
        let storage = self.store.put_snapshots(&self.workspace, &new)?;
        Ok(Applied {
            snapshot_id: id,
            snapshot: state,
            errors: outcome.errors,
            storage,
        })
    }

    /// The `state-functions` prompt for a character (or the global library).
    pub fn prompt(&self, character_id: Option<&str>) -> Result<String, Error> {
        Ok(functions::prompt(&self.library(character_id)?))
    }
}

/// Whether a library runs user functions. Such a function may change anything, so its floors
/// are summarized by comparing the states; built-in calls say which paths they wrote, which
/// costs no copy of the state.
fn runs_scripts(active: &Active) -> bool {
    !active.before.is_empty()
        || !active.after.is_empty()
        || active
            .calls
            .iter()
            .any(|function| function.builtin.is_none())
}

/// Lays out a floor's snapshot in the batch and records the bytes of the nodes it added.
fn lay_out(
    batch: &mut Encoded,
    key: SnapshotKey,
    state: &Value,
    changed: &crate::store::tree::Changed,
) -> Result<(), Error> {
    let laid_out = batch.nodes.len();
    batch
        .add_changed(key, state, changed)
        .map_err(|error| too_deep("the state", error))?;
    let bytes: usize = batch.nodes[laid_out..]
        .iter()
        .map(|(_, body)| body.len())
        .sum();
    if let Some((key, _)) = batch.snapshots.last_mut() {
        key.stored_bytes = Some(bytes as u64);
    }
    Ok(())
}

fn describe_scope(scope: &Scope) -> String {
    match scope {
        Scope::Global => "global".to_owned(),
        Scope::Character(id) => format!("character `{id}`"),
    }
}
