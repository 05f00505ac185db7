//! The chat flow: a chat processed from its anchor (the last AI message with a stored
//! snapshot) message by message, its snapshots stored in batches of [`BATCH_SNAPSHOTS`]; one
//! text applied without a chat; the base state a chat starts from.

use serde_json::Value;

use super::chat::{self, Base, Binding, ChatMessage};
use super::engine::{self, MessageContext};
use super::functions::Active;
use super::{
    Applied, BATCH_SNAPSHOTS, Error, MessageError, Processed, Snapshots, Start, Stopped, builtins,
    diff, invalid, too_deep, within_limit,
};
use crate::store::tree::{Encoded, SnapshotKey};
use crate::store::{StorageReport, StoredSnapshot};

impl Snapshots {
    /// The starting state for a character: a global snapshot, the given template, the stored
    /// one, or `{}`.
    pub(super) fn base_state(&self, start: &Start<'_>) -> Result<(Value, Base), Error> {
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
                return invalid("template", "`template` must be a JSON object");
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
        self.process_from(chat_file, messages, &start, cancelled, &|_, _| {})
    }

    /// The flow over a whole chat from where `start` says when no message is bound. After
    /// each message, `progress` is told how many of the messages to process are done.
    pub fn process_from(
        &self,
        chat_file: &str,
        messages: &[ChatMessage],
        start: &Start<'_>,
        cancelled: &dyn Fn() -> bool,
        progress: &dyn Fn(usize, usize),
    ) -> Result<Processed, Error> {
        let character_id = start.character_id;
        if let Some(disabled) = self.disabled(chat_file, character_id)? {
            return self.unprocessed(messages, start, disabled);
        }
        let (mut anchor, loaded) = self.anchored(messages)?;
        let offset = start.first_index;
        if offset > 0 {
            tail_is_anchored(offset, anchor.start.as_ref(), loaded.as_ref())?;
        }
        for binding in &mut anchor.dropped {
            binding.message_index += offset;
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
            let (binding, key) = new_snapshot(chat_file, index, message, summary);
            bindings.push(binding);
            lay_out(&mut batch, key, &state, &outcome.changed)?;
            if batch.snapshots.len() >= BATCH_SNAPSHOTS {
                self.commit(&mut batch, &mut storage)?;
            }
            progress(done + 1, anchor.pending.len());
        }
        self.commit(&mut batch, &mut storage)?;
        let latest_snapshot_id = bindings
            .last()
            .map(|binding| binding.snapshot_id.clone())
            .or_else(|| anchor.start.as_ref().map(|(_, id)| id.clone()));
        Ok(Processed {
            bindings,
            dropped: anchor.dropped,
            base,
            latest_snapshot_id,
            vs_stat_data: state,
            errors,
            storage,
            stopped,
            disabled: None,
        })
    }

    /// The anchor walk over a chat's messages, and the stored snapshot it starts from.
    fn anchored(
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

/// A new snapshot of the message at `index`: its binding, and its key in the store.
fn new_snapshot(
    chat_file: &str,
    index: usize,
    message: &ChatMessage,
    summary: String,
) -> (Binding, SnapshotKey) {
    let id = uuid::Uuid::new_v4().to_string();
    let binding = Binding {
        message_index: index,
        swipe_id: message.active_swipe(),
        snapshot_id: id.clone(),
    };
    let key = SnapshotKey {
        id,
        chat_file: chat_file.to_owned(),
        message_id: Some(index as u64),
        swipe_id: Some(message.active_swipe() as u64),
        created_at: None,
        summary: Some(summary),
        stored_bytes: None,
    };
    (binding, key)
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
        return invalid(
            format!("firstIndex {first_index}"),
            format!(
                "no AI message among those given from firstIndex {first_index} is bound to a \
                 stored snapshot: send the whole chat (firstIndex 0)"
            ),
        );
    };
    let now = first_index + index;
    match found.message_id {
        Some(made_for) if made_for != now as u64 => invalid(
            id,
            format!(
                "snapshot {id}, bound to message {now}, was made for message {made_for}: \
                 messages before it were deleted or inserted since; send the whole chat \
                 (firstIndex 0), or SnapshotReprocess from the first message that changed"
            ),
        ),
        _ => Ok(()),
    }
}
