//! Hot reload of folder libraries (the skill roots, the script tool folders): every folder under
//! the roots is watched, and once a change has been followed by 250 ms of quiet the caller's
//! rescan runs on the watcher's thread. For the skills it is `Shelf::reload`, which refreshes
//! the roots' indexes and the catalog, rebuilds the search index and wakes the sessions so that they
//! send `resources/list_changed` and `prompts/list_changed`; for the tool folders it replaces
//! the groups that changed, and the sessions send `tools/list_changed`.
//!
//! Events are only a trigger ("something under this root is dirty"): inotify misses files
//! written into a folder just created and reports a folder moved in as one event, so every
//! batch is reconciled by a rescan, and a batch that created or moved a folder is rescanned once
//! more a moment later. Reads (`Access`), hidden paths (`.backups/`, staged saves, our
//! temporary index) and `index.json` itself (which the rescan writes in `~/.synapse/skills`)
//! are ignored.
//!
//! The walk is ours, one non-recursive notify watch per folder the discovery would visit (no
//! hidden folders, no `node_modules`, no symbolic links), and a folder that appears is watched
//! when its event arrives. The server starts the skills' watch on the skills loader's thread
//! once the first scan and its index are built, so that the walk reuses the memory the scan
//! freed. notify's
//! recursive mode with notify-debouncer-full, used first, held 9 MiB more resident memory at
//! 10,000 skills (53.7 → 44.7 MiB measured: the recursive walk's garbage stayed in the allocator
//! arena of notify's thread), and the debouncer's thread woke 16 times a second for ever; here
//! the thread sleeps until an event comes. What notify still holds, about 650 bytes per watched
//! folder (6.5 MB at 10,000), is its own maps of paths.

use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use notify::event::{CreateKind, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::{INDEX_FILE, skipped_folder};

/// How long the folders must be quiet before a rescan.
const DEBOUNCE: Duration = Duration::from_millis(250);
/// The longest a batch gathers events while they keep coming.
const LONGEST_BATCH: Duration = Duration::from_secs(2);
/// The second look after a folder appeared, for files written into it right after.
const SETTLE: Duration = Duration::from_millis(300);

/// Why the roots cannot be watched.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch the {library} folder {path} for changes: {source}")]
pub struct Error {
    library: &'static str,
    path: PathBuf,
    source: notify::Error,
}

/// The running watcher; dropping it stops watching.
#[derive(Debug)]
pub struct Watch {
    messages: Sender<Message>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        // The thread may be gone already (it ends when the watcher fails); nothing to stop then.
        self.messages.send(Message::Stop).ok();
    }
}

enum Message {
    Event(notify::Result<Event>),
    Stop,
}

/// Watches every root that is a folder on disk and calls `rescan` on the watcher's thread after
/// each batch of changes (twice when a folder appeared, a moment apart); `None` when no root is
/// a folder. `library` names what is watched in logs and errors (`skills`, `tools`).
pub fn start(
    library: &'static str,
    roots: &[PathBuf],
    rescan: impl Fn() + Send + 'static,
) -> Result<Option<Watch>, Error> {
    let roots: Vec<PathBuf> = roots.iter().filter(|root| root.is_dir()).cloned().collect();
    let Some(first_root) = roots.first().cloned() else {
        return Ok(None);
    };
    let failed = |path: &Path, source| Error {
        library,
        path: path.to_owned(),
        source,
    };
    let (messages, receiver) = mpsc::channel();
    let events = messages.clone();
    let mut watcher = notify::recommended_watcher(move |event| {
        events.send(Message::Event(event)).ok();
    })
    .map_err(|source| failed(&first_root, source))?;
    for root in &roots {
        watch_tree(&mut watcher, root).map_err(|source| failed(root, source))?;
    }
    tracing::debug!(?roots, "watching the {library} folders");
    let batches = Batches {
        library,
        roots,
        rescan: Box::new(rescan),
    };
    std::thread::Builder::new()
        .name(format!("{library}-watch"))
        .spawn(move || batches.run(&mut watcher, &receiver))
        .map_err(|error| failed(&first_root, notify::Error::io(error)))?;
    Ok(Some(Watch { messages }))
}

/// Watches `top` and every folder below it that the discovery would visit. Only `top` must be
/// watchable; a folder below that vanished meanwhile is skipped, and running out of watches
/// (`fs.inotify.max_user_watches`) is reported once and stops the walk.
fn watch_tree(watcher: &mut RecommendedWatcher, top: &Path) -> notify::Result<()> {
    watcher.watch(top, RecursiveMode::NonRecursive)?;
    let mut pending = vec![top.to_owned()];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let is_folder = entry.file_type().is_ok_and(|kind| kind.is_dir());
            if !is_folder || skipped_folder(&entry.file_name().to_string_lossy()) {
                continue;
            }
            let path = entry.path();
            match watcher.watch(&path, RecursiveMode::NonRecursive) {
                Ok(()) => pending.push(path),
                Err(error) if matches!(error.kind, notify::ErrorKind::MaxFilesWatch) => {
                    tracing::warn!(
                        "out of inotify watches at {}: changes below it are seen after a restart \
                         (raise fs.inotify.max_user_watches)",
                        path.display()
                    );
                    return Ok(());
                }
                Err(error) => tracing::debug!(%error, "not watching {}", path.display()),
            }
        }
    }
    Ok(())
}

/// What one batch of events asks for.
#[derive(Default)]
struct Batch {
    relevant: bool,
    folder_appeared: bool,
}

/// What the watcher's thread holds: the roots and what to do after a batch of changes.
struct Batches {
    library: &'static str,
    roots: Vec<PathBuf>,
    rescan: Box<dyn Fn() + Send>,
}

impl Batches {
    /// Waits for an event, gathers the batch it starts, rescans; until the [`Watch`] is dropped.
    fn run(&self, watcher: &mut RecommendedWatcher, receiver: &Receiver<Message>) {
        while let Ok(first) = receiver.recv() {
            let started = Instant::now();
            let mut batch = Batch::default();
            let mut next = first;
            loop {
                match next {
                    Message::Stop => return,
                    Message::Event(Ok(event)) => gather(watcher, &self.roots, &event, &mut batch),
                    Message::Event(Err(error)) => {
                        tracing::warn!(%error, "watching the {} folders", self.library);
                    }
                }
                if started.elapsed() >= LONGEST_BATCH {
                    break;
                }
                next = match receiver.recv_timeout(DEBOUNCE) {
                    Ok(message) => message,
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return,
                };
            }
            if batch.relevant {
                tracing::debug!("the {} folders changed; rescanning", self.library);
                (self.rescan)();
                if batch.folder_appeared {
                    std::thread::sleep(SETTLE);
                    (self.rescan)();
                }
            }
        }
    }
}

/// Adds one event to the batch; a folder that appeared under a root is watched from now on.
fn gather(watcher: &mut RecommendedWatcher, roots: &[PathBuf], event: &Event, batch: &mut Batch) {
    if matches!(event.kind, EventKind::Access(_)) {
        return;
    }
    let appeared = matches!(
        event.kind,
        EventKind::Create(CreateKind::Folder | CreateKind::Any)
            | EventKind::Modify(ModifyKind::Name(_))
    );
    for path in event.paths.iter().filter(|path| matters(roots, path)) {
        batch.relevant = true;
        let watchable = path
            .file_name()
            .is_some_and(|name| !skipped_folder(&name.to_string_lossy()));
        if appeared && watchable && path.is_dir() {
            batch.folder_appeared = true;
            if let Err(error) = watch_tree(watcher, path) {
                tracing::debug!(%error, "not watching {}", path.display());
            }
        }
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
