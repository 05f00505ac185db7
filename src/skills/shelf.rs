//! The library as the server holds it: the current [`Library`] behind a lock, replaced whole
//! when a skill is saved. Readers take an `Arc` of the current library and never wait for a
//! rescan; a rescan reuses `index.json`, so only the changed skill is read again.

use std::sync::{Arc, PoisonError, RwLock};

use super::Library;
use super::discover::Root;

/// The roots and the library scanned from them.
#[derive(Debug)]
pub struct Shelf {
    roots: Vec<Root>,
    current: RwLock<Arc<Library>>,
    /// Counts reloads, so that sessions can tell their clients the lists changed.
    revision: tokio::sync::watch::Sender<u64>,
}

impl Shelf {
    /// Scans the roots.
    pub fn load(roots: Vec<Root>) -> Self {
        let library = Arc::new(Library::load(&roots));
        Self {
            roots,
            current: RwLock::new(library),
            revision: tokio::sync::watch::Sender::new(0),
        }
    }

    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The library as it is now.
    pub fn library(&self) -> Arc<Library> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Scans the roots again and serves the result from now on.
    pub fn reload(&self) -> Arc<Library> {
        let library = Arc::new(Library::load(&self.roots));
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = library.clone();
        self.revision.send_modify(|revision| *revision += 1);
        library
    }

    /// Wakes up after every reload.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revision.subscribe()
    }
}
