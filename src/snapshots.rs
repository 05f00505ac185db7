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
mod flow;
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
use crate::store::{self, SnapshotStore, StorageReport, StoredSnapshot};
use chat::{Base, Binding};
use engine::CallError;
use functions::{Export, Scope, VarFunction};

pub use dry_run::{TestBase, Tested};
pub use floors::{FloorList, FloorQuery, PAGE, Page, Reprocessed, Source};

/// Why a snapshot operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A mistake in the request: `value` is the offending value as given (an id, a name, a
    /// label, a chat file), or the name of the argument that is missing, empty or clashes with
    /// another; the message names it and says how to fix it.
    #[error("{message}")]
    Invalid { value: String, message: String },
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl Error {
    /// The caller's mistake about `value`, with the message that says how to fix it.
    fn invalid(value: impl std::fmt::Display, message: impl Into<String>) -> Self {
        Self::Invalid {
            value: value.to_string(),
            message: message.into(),
        }
    }
}

impl Export {
    /// The export, given as an object or as its JSON text (a call's `data`).
    pub fn parse(data: Value) -> Result<Self, Error> {
        let data = match data {
            Value::String(text) => serde_json::from_str(&text)
                .map_err(|error| Error::invalid("data", format!("`data` is not JSON: {error}")))?,
            other => other,
        };
        serde_json::from_value(data).map_err(|error| {
            Error::invalid(
                "data",
                format!(
                    "`data` is not a function export ({{\"version\": \"1.0\", \"functions\": [...]}}): {error}"
                ),
            )
        })
    }
}

fn invalid<T>(value: impl std::fmt::Display, message: impl Into<String>) -> Result<T, Error> {
    Err(Error::invalid(value, message))
}

/// Snapshots stored per transaction while processing a chat.
pub const BATCH_SNAPSHOTS: usize = 256;

/// A whole value entering the store (a template, an edited snapshot) must be readable back.
fn within_limit(what: &str, value: &Value) -> Result<(), Error> {
    nesting::check(value, 0).map_err(|too_deep| Error::invalid(what, format!("{what} {too_deep}")))
}

fn too_deep(what: &str, error: nesting::TooDeep) -> Error {
    Error::invalid(what, format!("{what} {error}"))
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

impl Processed {
    /// Logs a run of `chat_file` that the cancellation stopped, with how far it got.
    pub fn log_stop(&self, chat_file: &str) {
        if let Some(stopped) = &self.stopped {
            tracing::info!(
                chat_file,
                processed = stopped.processed,
                remaining = stopped.remaining,
                "SnapshotProcess cancelled; the snapshots of the processed messages are stored"
            );
        }
    }
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
                    Error::invalid(
                        scope.key(),
                        format!("a stored function cannot be read: {error}"),
                    )
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

    /// The global functions, and the character's own when one is named (a call's
    /// `characterId`).
    pub fn function_lists(
        &self,
        character_id: Option<&str>,
    ) -> Result<(Vec<VarFunction>, Option<Vec<VarFunction>>), Error> {
        let global = self.functions(&Scope::Global)?;
        let local = match Scope::of(character_id) {
            Scope::Global => None,
            scope @ Scope::Character(_) => Some(self.functions(&scope)?),
        };
        Ok((global, local))
    }

    /// Whether upserting `new` into `scope` replaces what the user would miss: a new function
    /// destroys nothing, and neither does a change of only `enabled` or `order` (what
    /// `FunctionEnable` and `FunctionReorder` change without asking); replacing anything else of
    /// a function of its library (a built-in included) does.
    pub fn upsert_replaces(&self, new: &VarFunction, scope: &Scope) -> Result<bool, Error> {
        let stored = (self.functions(scope)?.into_iter())
            .find(|function| !new.id.is_empty() && function.id == new.id);
        Ok(stored.is_some_and(|stored| {
            VarFunction {
                enabled: new.enabled,
                order: new.order,
                ..stored
            } != *new
        }))
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
            if function.order == 0 {
                function.order = self.order_after_all(scope)?;
            }
        }
        functions::validate(&function)
            .map_err(|message| Error::invalid(&function.name, message))?;
        if functions::is_builtin_id(&function.id) && *scope != Scope::Global {
            return invalid(
                &function.name,
                format!(
                    "`{}` is a built-in function of the global scope; leave out characterId to change it",
                    function.name
                ),
            );
        }
        if function.builtin.is_none() {
            self.check_javascript(&function)?;
        }
        let definition = serde_json::to_value(&function)
            .map_err(|error| Error::invalid(&function.name, error.to_string()))?;
        self.store.put_functions(
            &self.workspace,
            &scope.key(),
            &[(function.id.clone(), definition)],
        )?;
        Ok(function)
    }

    /// A new function's order when it names none: after every function that runs beside
    /// `scope`'s (the global ones, and a character's own), so it runs last.
    fn order_after_all(&self, scope: &Scope) -> Result<i64, Error> {
        let character = match scope {
            Scope::Global => None,
            Scope::Character(id) => Some(id.as_str()),
        };
        let library = self.library(character)?;
        let largest = library.iter().map(|function| function.order).max();
        Ok(largest.unwrap_or(0).saturating_add(1))
    }

    fn check_javascript(&self, function: &VarFunction) -> Result<(), Error> {
        self.engine.check(&function.executor).map_err(|error| {
            Error::invalid(
                &function.name,
                format!(
                    "the executor of `{}` does not compile: {error}",
                    function.name
                ),
            )
        })?;
        if let Some(pattern) = &function.pattern {
            let (source, flags) = functions::split_pattern(pattern);
            self.engine
                .find(&Arc::from(source), flags, &Arc::from(""))
                .map_err(|error| {
                    Error::invalid(
                        &function.name,
                        format!(
                            "the pattern of `{}` is not a valid JavaScript regex: {error}",
                            function.name
                        ),
                    )
                })?;
        }
        Ok(())
    }

    /// Removes a function; returns it.
    pub fn remove_function(&self, id: &str, scope: &Scope) -> Result<VarFunction, Error> {
        if functions::is_builtin_id(id) {
            return invalid(
                id,
                format!(
                    "`{id}` is a built-in function and cannot be removed; FunctionUpsert it with \"enabled\": false to turn it off"
                ),
            );
        }
        let existing = self
            .stored_functions(scope)?
            .into_iter()
            .find(|function| function.id == id);
        let Some(existing) = existing else {
            return invalid(
                id,
                format!(
                    "no function `{id}` in the {} scope; FunctionList shows the ids",
                    describe_scope(scope)
                ),
            );
        };
        self.store
            .remove_function(&self.workspace, &scope.key(), id)?;
        Ok(existing)
    }

    /// Imports the library export format: every function gets a new UUID and starts disabled.
    /// The built-ins an export of a whole library holds are left out (every library has them);
    /// gives the imported functions and how many built-ins were left out.
    pub fn import(
        &self,
        export: Export,
        scope: &Scope,
    ) -> Result<(Vec<VarFunction>, usize), Error> {
        let mut imported = Vec::with_capacity(export.functions.len());
        let (builtins, functions): (Vec<_>, Vec<_>) =
            (export.functions.into_iter()).partition(|function| {
                function.builtin.is_some() || functions::is_builtin_id(&function.id)
            });
        for mut function in functions {
            function.id = uuid::Uuid::new_v4().to_string();
            function.enabled = false;
            function.builtin = None;
            functions::validate(&function).map_err(|message| {
                Error::invalid(
                    &function.name,
                    format!("cannot import `{}`: {message}", function.name),
                )
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
                        .map_err(|error| Error::invalid(&function.name, error.to_string()))?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        self.store
            .put_functions(&self.workspace, &scope.key(), &rows)?;
        Ok((imported, builtins.len()))
    }

    /// The library export format, of some ids or the whole scope.
    pub fn export(&self, ids: Option<&[String]>, scope: &Scope) -> Result<Export, Error> {
        let all = self.functions(scope)?;
        let functions =
            match ids {
                None => all,
                Some(ids) => {
                    let mut chosen = Vec::with_capacity(ids.len());
                    for id in ids {
                        let found = all.iter().find(|function| &function.id == id).cloned();
                        chosen.push(found.ok_or_else(|| {
                        Error::invalid(id, format!(
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
            return invalid(
                "template",
                "a template must be a JSON object, such as {\"角色\": {\"金币\": 0}}",
            );
        }
        within_limit("the template", template)?;
        Ok(self
            .store
            .set_template(&self.workspace, character_id, template)?)
    }

    pub fn snapshot(&self, id: &str) -> Result<StoredSnapshot, Error> {
        self.store.snapshot(&self.workspace, id)?.ok_or_else(|| {
            Error::invalid(id, format!("no snapshot `{id}`; its chat may have been deleted (SnapshotProcess makes new ones)"))
        })
    }

    /// Replaces a snapshot in place (same id).
    pub fn update(&self, id: &str, snapshot: &Value) -> Result<(), Error> {
        if !snapshot.is_object() {
            return invalid("snapshot", "a snapshot must be a JSON object");
        }
        within_limit("the snapshot", snapshot)?;
        if self.store.update_snapshot(&self.workspace, id, snapshot)? {
            Ok(())
        } else {
            invalid(
                id,
                format!("no snapshot `{id}` to update; SnapshotGet shows what exists"),
            )
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
                return invalid(
                    "activeChatFiles",
                    format!(
                        "`activeChatFiles` is empty, which would delete the snapshots of every chat \
                     ({} chats, {snapshots} snapshots); list the chat files that still exist, or \
                     pass \"all\": true to delete them all",
                        chats.len()
                    ),
                );
            }
            (false, true) => {
                return invalid(
                    "all",
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

    /// Whether the workspace holds chat snapshots, templates or functions: a workspace that
    /// does keeps the snapshot tools on when their group became off by default.
    pub fn hold_anything(&self) -> Result<bool, Error> {
        Ok(!self.chats()?.is_empty()
            || !self.store.template_characters(&self.workspace)?.is_empty()
            || !self.store.function_scopes(&self.workspace)?.is_empty())
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

    /// The `state-functions` prompt for a character (or the global library).
    pub fn prompt(&self, character_id: Option<&str>) -> Result<String, Error> {
        Ok(functions::prompt(&self.library(character_id)?))
    }
}

fn describe_scope(scope: &Scope) -> String {
    match scope {
        Scope::Global => "global".to_owned(),
        Scope::Character(id) => format!("character `{id}`"),
    }
}
