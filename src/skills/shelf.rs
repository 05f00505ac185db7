//! The library as the server holds it: the current [`Library`] in a watch channel, replaced whole when a
//! skill is saved or the roots change on disk (`watch`). The first scan may run on a background
//! thread so that the session starts at once; whoever needs the library before it is ready waits
//! for it. Readers take an `Arc` of the current library and never wait for a later rescan, which
//! reuses the roots' indexes so that only a changed skill is read again.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::Library;
use super::catalog::Catalog;
use super::discover::Root;
use super::validate::Level;
use crate::folders::Indexes;

/// The roots and the library scanned from them.
#[derive(Debug)]
pub struct Shelf {
    roots: Vec<Root>,
    /// Where the roots' indexes are kept; `None`: no index is read or written.
    indexes: Option<Indexes>,
    /// The library now; `None` until the first scan is installed. A channel, so that a request
    /// can await the first scan without blocking the session's one thread.
    current: tokio::sync::watch::Sender<Option<Arc<Library>>>,
    /// Held through a rescan, so that of two saves the later scan (which sees both) wins.
    rescanning: Mutex<()>,
    /// Counts rescans after the first, so that sessions can tell their clients the lists changed.
    revision: tokio::sync::watch::Sender<u64>,
    /// The git sources (as written) whose first fetch is under way: each library installed
    /// carries the list (see [`Library::loading`]), so that a search sees it with the skills.
    loading: Mutex<Vec<String>>,
}

impl Shelf {
    fn empty(roots: Vec<Root>, indexes: Option<Indexes>, loading: Vec<String>) -> Self {
        Self {
            roots,
            indexes,
            current: tokio::sync::watch::Sender::new(None),
            rescanning: Mutex::new(()),
            revision: tokio::sync::watch::Sender::new(0),
            loading: Mutex::new(loading),
        }
    }

    /// Scans the roots now.
    pub fn load(roots: Vec<Root>, indexes: Option<Indexes>) -> Self {
        let shelf = Self::empty(roots, indexes, Vec::new());
        shelf.install(shelf.scan());
        shelf
    }

    /// Scans the roots on a background thread, builds the search index there too, then runs
    /// `then` on that thread (the server starts watching the roots there: the walk reuses the
    /// memory the scan freed instead of taking fresh pages on a thread of its own). `loading`:
    /// the git sources whose first fetch starts now (see [`Shelf::fetched`]).
    pub fn load_in_background(
        roots: Vec<Root>,
        indexes: Option<Indexes>,
        loading: Vec<String>,
        then: impl FnOnce(Arc<Self>) + Send + 'static,
    ) -> Arc<Self> {
        let shelf = Arc::new(Self::empty(roots, indexes, loading));
        let loading = shelf.clone();
        std::thread::spawn(move || {
            let library = loading.install(loading.scan());
            library.warm_up();
            drop(library);
            then(loading);
        });
        shelf
    }

    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The library as it is now; blocks the thread until the first scan is done. For
    /// synchronous callers off the session's thread; requests use [`Shelf::loaded`].
    pub fn library(&self) -> Arc<Library> {
        futures::executor::block_on(self.loaded())
    }

    /// The library once the first scan is done, waiting without blocking the thread: the
    /// session runs on one thread, so a request that blocked during a long first scan (0.4 s at
    /// 10,000 skills) would hold up every other request.
    pub async fn loaded(&self) -> Arc<Library> {
        let mut current = self.current.subscribe();
        loop {
            if let Some(library) = current.borrow_and_update().as_ref() {
                return library.clone();
            }
            // The sender lives as long as `self`, so a change always comes.
            if current.changed().await.is_err() {
                return Arc::new(Library::from_catalog(Catalog::default()));
            }
        }
    }

    /// The library once no git source is being fetched for the first time any more, or, after
    /// `limit`, the library as it is then.
    pub async fn fetched_within(&self, limit: std::time::Duration) -> Arc<Library> {
        let mut current = self.current.subscribe();
        let fetched = async {
            loop {
                let done = current
                    .borrow_and_update()
                    .as_ref()
                    .is_some_and(|library| library.loading().is_empty());
                // The sender lives as long as `self`, so a change always comes.
                if done || current.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(limit, fetched).await.is_err() {
            tracing::debug!("a skill source is still loading after {limit:?}");
        }
        self.loaded().await
    }

    /// Scans the roots again and serves the result from now on.
    pub fn reload(&self) -> Arc<Library> {
        let _rescanning = self
            .rescanning
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let library = self.install(self.scan());
        self.revision.send_modify(|revision| *revision += 1);
        library
    }

    /// Saves a skill ([`super::save::save`]), then scans the roots again so the catalog,
    /// index, resources, prompts and search see it at once; the new library's search index
    /// is built beside the caller, as at start-up.
    /// Checks a skill as [`Shelf::save`] would, writing nothing.
    pub fn check(&self, request: &super::save::Request) -> Result<(), super::Error> {
        super::save::check_request(&self.library(), self.roots(), request)
    }

    pub fn save(&self, request: &super::save::Request) -> Result<super::save::Saved, super::Error> {
        let saved = super::save::save(&self.library(), self.roots(), request)?;
        let library = self.reload();
        std::thread::spawn(move || library.warm_up());
        Ok(saved)
    }

    fn scan(&self) -> Library {
        scan(&self.roots, self.indexes.as_ref())
    }

    fn install(&self, mut library: Library) -> Arc<Library> {
        library
            .loading
            .clone_from(&self.loading.lock().unwrap_or_else(PoisonError::into_inner));
        let library = Arc::new(library);
        self.current.send_replace(Some(library.clone()));
        library
    }

    /// The first fetch of the git sources is over (each fetched, or failed, which the log
    /// says): scans the roots again, and the library installed no longer says they are loading.
    pub fn fetched(&self) -> Arc<Library> {
        self.loading
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.reload()
    }

    /// Wakes up after every rescan that follows the first.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revision.subscribe()
    }
}

/// A scan that cannot leave waiting readers hanging: a panic yields an empty library.
fn scan(roots: &[Root], indexes: Option<&Indexes>) -> Library {
    let started = Instant::now();
    let library = std::panic::catch_unwind(AssertUnwindSafe(|| Library::load(roots, indexes)))
        .unwrap_or_else(|_| {
            tracing::error!("the skills scan failed; serving no skills");
            Library::from_catalog(Catalog::default())
        });
    let skipped = library
        .diagnostics()
        .iter()
        .filter(|diagnostic| diagnostic.level == Level::Fatal)
        .count();
    tracing::info!(
        "{} skills ready in {:.1} ms ({skipped} skipped; `synapse-mcp skills check` explains)",
        library.skills().len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    library
}
