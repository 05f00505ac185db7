//! Hot reload (seed 004 §8): the skill roots on disk are watched (notify with the full
//! debouncer, 250 ms), and a relevant change rescans them through [`Shelf::reload`], which
//! refreshes `index.json` and the catalog and wakes the sessions so that they send
//! `resources/list_changed` and `prompts/list_changed`. The search index is rebuilt on the
//! watcher's thread.
//!
//! Events are only a trigger ("something under this root is dirty"): inotify misses files
//! written into a folder just created and reports a folder moved in as one event, so every
//! batch is reconciled by a rescan, and a batch that created or moved a folder is rescanned once
//! more a moment later. Reads (`Access`), hidden paths (`.backups/`, staged saves, our
//! temporary index) and `index.json` itself (which the rescan writes) are ignored.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_full::notify::event::{CreateKind, ModifyKind};
use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, DebouncedEvent, Debouncer, RecommendedCache};

use super::discover::RootKind;
use super::index_file::FILE_NAME as INDEX_FILE;
use super::shelf::Shelf;

/// How long events are gathered before a rescan.
const DEBOUNCE: Duration = Duration::from_millis(250);
/// The second look after a folder appeared, for files written into it right after.
const SETTLE: Duration = Duration::from_millis(300);

/// Why the roots cannot be watched.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch the skills folder {path} for changes: {source}")]
pub struct Error {
    path: PathBuf,
    source: notify_debouncer_full::notify::Error,
}

/// The running watcher; dropping it stops watching.
pub struct Watch {
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Watch")
    }
}

/// Watches every root of the shelf that is a folder on disk; `None` when there is none.
pub fn start(shelf: Arc<Shelf>) -> Result<Option<Watch>, Error> {
    let roots: Vec<PathBuf> = shelf
        .roots()
        .iter()
        .filter(|root| root.kind != RootKind::Bundled && root.path.is_dir())
        .map(|root| root.path.clone())
        .collect();
    if roots.is_empty() {
        return Ok(None);
    }
    let watched = roots.clone();
    let handler = move |result: DebounceEventResult| match result {
        Ok(events) => changed(&shelf, &watched, &events),
        Err(errors) => {
            for error in errors {
                tracing::warn!(%error, "watching the skills folders");
            }
        }
    };
    let wrap = |path: &Path| {
        let path = path.to_owned();
        move |source| Error { path, source }
    };
    let mut debouncer =
        notify_debouncer_full::new_debouncer(DEBOUNCE, None, handler).map_err(wrap(&roots[0]))?;
    for root in &roots {
        debouncer
            .watch(root, RecursiveMode::Recursive)
            .map_err(wrap(root))?;
    }
    tracing::debug!(?roots, "watching the skills folders");
    Ok(Some(Watch {
        _debouncer: debouncer,
    }))
}

fn changed(shelf: &Shelf, roots: &[PathBuf], events: &[DebouncedEvent]) {
    let relevant: Vec<&DebouncedEvent> = events
        .iter()
        .filter(|event| !matches!(event.kind, EventKind::Access(_)))
        .filter(|event| event.paths.iter().any(|path| matters(roots, path)))
        .collect();
    if relevant.is_empty() {
        return;
    }
    tracing::debug!(
        events = relevant.len(),
        "the skills folders changed; rescanning"
    );
    shelf.reload().warm_up();
    let folder_appeared = relevant.iter().any(|event| {
        matches!(
            event.kind,
            EventKind::Create(CreateKind::Folder) | EventKind::Modify(ModifyKind::Name(_))
        )
    });
    if folder_appeared {
        std::thread::sleep(SETTLE);
        shelf.reload().warm_up();
    }
}

/// Whether a changed path can change the library: under a root, not hidden, not `index.json`.
fn matters(roots: &[PathBuf], path: &Path) -> bool {
    roots.iter().any(|root| {
        let Ok(relative) = path.strip_prefix(root) else {
            return false;
        };
        let hidden = relative.components().any(|component| {
            matches!(component, Component::Normal(part) if part.to_string_lossy().starts_with('.'))
        });
        !hidden && relative != Path::new(INDEX_FILE)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_writes_and_hidden_paths_do_not_matter() {
        let roots = [PathBuf::from("/skills")];
        let cases = [
            ("/skills/pdf/SKILL.md", true),
            ("/skills/pdf", true),
            ("/skills/index.json", false),
            ("/skills/.index.json.7.tmp", false),
            ("/skills/.backups/pdf-1/SKILL.md", false),
            ("/skills/.pdf.saving-1-2/SKILL.md", false),
            ("/skills/pdf/references/index.json", true),
            ("/elsewhere/SKILL.md", false),
        ];
        for (path, expected) in cases {
            assert_eq!(matters(&roots, Path::new(path)), expected, "{path}");
        }
    }
}
