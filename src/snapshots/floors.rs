//! A chat's floors: its snapshots by message and swipe (`SnapshotList`, a page of floors at a
//! time, or jumping to one), what separates two states (`SnapshotDiff`), deleting one snapshot, and reprocessing a
//! chat from a floor on (`SnapshotReprocess`) after a message was edited, regenerated or
//! deleted in the middle.
//!
//! Reprocessing computes the new snapshots first and deletes the old ones after, in one call:
//! a call that fails part way leaves the old snapshots where they were. Deleting sweeps the
//! tree nodes no snapshot, template or global snapshot reaches any more.

use std::collections::HashSet;
use std::ops::Range;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::chat::{Binding, ChatMessage};
use super::diff::{self, Operation};
use super::{Error, Processed, Snapshots, Start, invalid};
use crate::store::Floor;

/// The prefix of a reference to a character's template.
pub(super) const TEMPLATE_PREFIX: &str = "template:";

/// What a reference (`SnapshotDiff`'s `from`/`to`, a `baseId`) named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "kind"
)]
pub enum Source {
    /// A chat's snapshot.
    Snapshot {
        snapshot_id: String,
        chat_file: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        message_index: Option<u64>,
    },
    /// A global snapshot.
    Global { snapshot_id: String, label: String },
    /// A character's template.
    Template { character_id: String },
}

/// Floors per page of `SnapshotList` when the call gives no `limit`.
pub const PAGE: u64 = 30;

/// Which of a chat's floors to list (`SnapshotList`): a page of `limit` floors, the newest by
/// default, from `from_index` on, or the one floor `message_index`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloorQuery {
    pub message_index: Option<u64>,
    pub from_index: Option<u64>,
    /// Floors per page; [`PAGE`] when `None`.
    pub limit: Option<u64>,
}

/// The arguments of `SnapshotList` that list a neighbouring page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    /// `SnapshotList`'s `fromIndex` for that page.
    pub from_index: u64,
    /// `SnapshotList`'s `limit` for that page.
    pub limit: u64,
}

/// A page of a chat's floors (`SnapshotList`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FloorList {
    pub chat_file: String,
    /// The chat's floors: messages with at least one stored snapshot (the snapshots made
    /// without a message index count as one floor, before message 0).
    pub total: u64,
    /// Floors before this page.
    pub earlier: u64,
    /// Floors after this page.
    pub later: u64,
    /// Every stored snapshot of this page's floors, by message index, swipe and time.
    pub floors: Vec<Floor>,
    /// The arguments (`fromIndex`, `limit`) that list the floors just before this page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<Page>,
    /// The arguments that list the floors just after this page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<Page>,
}

/// What `SnapshotReprocess` did.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reprocessed {
    /// The floor reprocessing started at.
    pub from_index: usize,
    /// The recomputed floors, as `SnapshotProcess` reports them.
    #[serde(flatten)]
    pub processed: Processed,
    /// The bindings of messages at `fromIndex` or later (every swipe) that no longer hold:
    /// clear each from its swipe's `swipes_info`, unless `bindings` gives it a new id.
    pub cleared: Vec<Binding>,
    /// Snapshots deleted from the store: the cleared ones, and any other of this chat made for
    /// a message at `fromIndex` or later (say, of a swipe deleted since).
    pub deleted: u64,
}

impl Snapshots {
    /// A page of a chat's floors (see [`FloorQuery`]); it reads the rows of that page only.
    pub fn floors(&self, chat_file: &str, query: FloorQuery) -> Result<FloorList, Error> {
        let limit = query.limit.unwrap_or(PAGE);
        if limit == 0 {
            return invalid(
                "limit",
                format!(
                    "`limit` 0 lists no floor: give 1 or more floors per page ({PAGE} when not given)"
                ),
            );
        }
        let indexes = self.store.floor_indexes(&self.workspace, chat_file)?;
        if indexes.is_empty() {
            return invalid(
                chat_file,
                format!(
                    "chat `{chat_file}` has no snapshots; SnapshotProcess makes them, and \
                 resources/list shows the chats that have some"
                ),
            );
        }
        let total = indexes.len();
        let per_page = usize::try_from(limit).unwrap_or(usize::MAX);
        let page = match (query.message_index, query.from_index) {
            (Some(_), Some(_)) => {
                return invalid(
                    "messageIndex",
                    "give `messageIndex` (one floor) or `fromIndex` (a page from there on), \
                     not both"
                        .to_owned(),
                );
            }
            (Some(index), None) => {
                let Ok(position) = indexes.binary_search(&Some(index)) else {
                    let placed: Vec<u64> = indexes.iter().flatten().copied().collect();
                    return invalid(
                        chat_file,
                        format!(
                            "message {index} of `{chat_file}` has no snapshot; floors with snapshots: {}",
                            ranges(&placed)
                        ),
                    );
                };
                position..position + 1
            }
            (None, Some(index)) => {
                // From 0 on, the snapshots without a message index come first.
                let start = match index {
                    0 => 0,
                    _ => indexes.partition_point(|key| *key < Some(index)),
                };
                if start == total {
                    let last = indexes[total - 1].unwrap_or(0);
                    return invalid(
                        index,
                        format!(
                            "`fromIndex` {index} is past the last floor of `{chat_file}`, message \
                         {last}: give {last} or less"
                        ),
                    );
                }
                start..total.min(start.saturating_add(per_page))
            }
            (None, None) => total.saturating_sub(per_page)..total,
        };
        self.floor_page(chat_file, &indexes, page, limit)
    }

    /// The floors `page` (positions in `indexes`) with the arguments of the pages around it.
    fn floor_page(
        &self,
        chat_file: &str,
        indexes: &[Option<u64>],
        page: Range<usize>,
        limit: u64,
    ) -> Result<FloorList, Error> {
        let floors = self.store.floors(
            &self.workspace,
            chat_file,
            indexes[page.start]..=indexes[page.end - 1],
        )?;
        let before = usize::try_from(limit).map_or(0, |limit| page.start.saturating_sub(limit));
        let previous = (page.start > 0).then(|| Page {
            from_index: indexes[before].unwrap_or(0),
            limit: (page.start - before) as u64,
        });
        let next = indexes.get(page.end).map(|index| Page {
            from_index: index.unwrap_or(0),
            limit,
        });
        Ok(FloorList {
            chat_file: chat_file.to_owned(),
            total: indexes.len() as u64,
            earlier: page.start as u64,
            later: (indexes.len() - page.end) as u64,
            floors,
            previous,
            next,
        })
    }

    /// The state a reference names: `template:<characterId>`, a chat snapshot's id, or a
    /// global snapshot's id or label.
    pub fn resolve(&self, reference: &str) -> Result<(Value, Source), Error> {
        if let Some(character_id) = reference.strip_prefix(TEMPLATE_PREFIX) {
            let template = self.template(character_id)?.ok_or_else(|| {
                Error::invalid(character_id, format!(
                    "character `{character_id}` has no template (from `{reference}`); TemplateSet stores one"
                ))
            })?;
            let source = Source::Template {
                character_id: character_id.to_owned(),
            };
            return Ok((template, source));
        }
        if let Some(stored) = self.store.snapshot(&self.workspace, reference)? {
            let source = Source::Snapshot {
                snapshot_id: stored.id,
                chat_file: stored.chat_file,
                message_index: stored.message_id,
            };
            return Ok((stored.value, source));
        }
        if let Some(global) = self.store.global(&self.workspace, reference)? {
            let source = Source::Global {
                snapshot_id: global.id,
                label: global.label,
            };
            return Ok((global.value, source));
        }
        invalid(
            reference,
            format!(
                "no snapshot `{reference}`: give a chat snapshot's id (SnapshotList), a global \
             snapshot's id or label (SnapshotGlobalList), or `template:<characterId>`"
            ),
        )
    }

    /// The JSON Patch that turns one state into another.
    pub fn diff(&self, from: &str, to: &str) -> Result<(Source, Source, Vec<Operation>), Error> {
        let (old, from) = self.resolve(from)?;
        let (new, to) = self.resolve(to)?;
        Ok((from, to, diff::diff(&old, &new)))
    }

    /// Deletes one chat snapshot; returns its floor.
    pub fn delete_snapshot(&self, id: &str) -> Result<Floor, Error> {
        let mut deleted = self
            .store
            .delete_snapshots(&self.workspace, &[id.to_owned()])?;
        deleted.pop().ok_or_else(|| {
            Error::invalid(
                id,
                format!(
                    "no chat snapshot `{id}` to delete; SnapshotList shows a chat's snapshots \
                 (SnapshotGlobalDelete deletes global ones)"
                ),
            )
        })
    }

    /// What reprocessing `chat_file` from message `from_index` replaces: how many floors
    /// (messages) from there on hold stored snapshots, and how many snapshots they hold.
    pub fn stored_from(&self, chat_file: &str, from_index: u64) -> Result<(usize, usize), Error> {
        let floors = self.store.floors(
            &self.workspace,
            chat_file,
            Some(from_index)..=Some(u64::MAX),
        )?;
        let messages: HashSet<Option<u64>> =
            floors.iter().map(|floor| floor.message_index).collect();
        Ok((messages.len(), floors.len()))
    }

    /// Drops the bindings of the messages at `from_index` and later and computes them again
    /// from the floor before (or the chat's start), in one call; `progress` as for
    /// [`Snapshots::process_from`].
    pub fn reprocess(
        &self,
        chat_file: &str,
        from_index: usize,
        messages: &[ChatMessage],
        start: &Start<'_>,
        cancelled: &dyn Fn() -> bool,
        progress: &dyn Fn(usize, usize),
    ) -> Result<Reprocessed, Error> {
        if from_index >= messages.len() {
            return invalid(
                from_index,
                format!(
                    "`fromIndex` {from_index} is not a message of this chat: it has {} messages, so \
                 give an index from 0 to {}",
                    messages.len(),
                    messages.len().saturating_sub(1)
                ),
            );
        }
        let mut cleared = Vec::new();
        let mut edited = messages.to_vec();
        for (index, message) in edited.iter_mut().enumerate().skip(from_index) {
            cleared.extend(
                message
                    .unbind_all()
                    .into_iter()
                    .map(|(swipe_id, snapshot_id)| Binding {
                        message_index: index,
                        swipe_id,
                        snapshot_id,
                    }),
            );
        }
        let processed = self.process_from(chat_file, &edited, start, cancelled, progress)?;
        // Switched off: nothing was computed, so nothing is dropped either.
        if processed.disabled.is_some() {
            return Ok(Reprocessed {
                from_index,
                processed,
                cleared: Vec::new(),
                deleted: 0,
            });
        }
        let kept: HashSet<&str> = messages[..from_index]
            .iter()
            .flat_map(ChatMessage::bound_ids)
            .collect();
        let mut stale: Vec<String> = cleared
            .iter()
            .map(|binding| binding.snapshot_id.clone())
            .filter(|id| !kept.contains(id.as_str()))
            .collect();
        let fresh: HashSet<&str> = processed
            .bindings
            .iter()
            .map(|binding| binding.snapshot_id.as_str())
            .collect();
        stale.extend(
            self.store
                .floors(
                    &self.workspace,
                    chat_file,
                    Some(from_index as u64)..=Some(u64::MAX),
                )?
                .into_iter()
                .map(|floor| floor.snapshot_id)
                .filter(|id| !kept.contains(id.as_str()) && !fresh.contains(id.as_str())),
        );
        stale.sort();
        stale.dedup();
        let deleted = self.store.delete_snapshots(&self.workspace, &stale)?.len() as u64;
        Ok(Reprocessed {
            from_index,
            processed,
            cleared,
            deleted,
        })
    }
}

/// Message indexes as ranges: `0, 2, 4-9`.
fn ranges(indexes: &[u64]) -> String {
    let mut sorted = indexes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u64, u64)> = None;
    for index in sorted {
        run = match run {
            Some((first, last)) if index == last + 1 => Some((first, index)),
            Some((first, last)) => {
                parts.push(range(first, last));
                Some((index, index))
            }
            None => Some((index, index)),
        };
    }
    if let Some((first, last)) = run {
        parts.push(range(first, last));
    }
    parts.join(", ")
}

fn range(first: u64, last: u64) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}-{last}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn floor_ranges_read_as_a_person_would_write_them() {
        assert_eq!(ranges(&[9, 0, 2, 4, 5, 6, 4]), "0, 2, 4-6, 9");
        assert_eq!(ranges(&[]), "");
    }
}
