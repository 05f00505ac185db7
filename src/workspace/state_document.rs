//! The workspace's state document (`docs/state-and-plans.md`): read and written at dot paths,
//! atomically, within the nesting limit and the workspace's byte cap.

use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use serde_json::Value;

use super::{Change, Error, Workspace};
use crate::json::path::Path;
use crate::json::{compact_length, nesting};

impl Workspace {
    /// The plans' state document.
    pub fn state(&self) -> Result<Value, Error> {
        match &self.store {
            Some(store) => Ok(store.state(&self.name)?),
            None => Ok(self
                .state_document
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()),
        }
    }

    /// The state document's value at a path, if any (without copying the rest of it when the
    /// state lives in memory).
    pub fn state_at(&self, path: &Path) -> Result<Option<Value>, Error> {
        if self.store.is_some() {
            return Ok(path.get(&self.state()?).cloned());
        }
        let document = self
            .state_document
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(path.get(&document).cloned())
    }

    /// Writes a value into the state document at a path, atomically: a refused write (a
    /// scalar in the way, a gap in an array, a value nesting too deep, past the byte cap)
    /// changes nothing and comes back as the inner `Err`.
    pub fn write_state(&self, path: &Path, value: &Value) -> Result<Result<(), String>, Error> {
        if let Err(too_deep) = nesting::check(value, path.segments().len()) {
            return Ok(Err(format!(
                "cannot write `{path}`: the value written there {too_deep}"
            )));
        }
        let variable_bytes = self.lock().system.bytes();
        let mut state_bytes = 0;
        let mut set = |document: &mut Value| {
            let current = compact_length(document);
            let replaced = path.get(document).map_or(0, compact_length);
            let projected =
                (current + compact_length(value) + path.to_string().len()).saturating_sub(replaced);
            self.check_bytes(variable_bytes + current, variable_bytes + projected)?;
            path.set(document, value.clone())
                .map_err(|error| error.to_string())?;
            state_bytes = projected;
            Ok(())
        };
        let outcome = if let Some(store) = &self.store {
            store.update_state(&self.name, &mut set)?.map(drop)
        } else {
            // A refused `Path::set` leaves the document as it was, so no copy is needed.
            set(&mut self
                .state_document
                .lock()
                .unwrap_or_else(PoisonError::into_inner))
        };
        if outcome.is_ok() {
            self.state_bytes.store(state_bytes, Ordering::Relaxed);
            self.announce_state();
        }
        Ok(outcome)
    }

    /// Tells subscribers the state document changed (here, or in another process: then its
    /// size is read again too, for the byte cap).
    pub fn announce_state(&self) {
        // Sending fails only when nobody listens, which is normal.
        if self.changes.receiver_count() > 0 {
            self.changes.send(Change::State).ok();
        }
    }

    /// What another process changed in the state document: its size is read again for the
    /// byte cap, and subscribers hear of it.
    pub fn state_changed_elsewhere(&self) -> Result<(), Error> {
        if self.store.is_some() {
            let length = compact_length(&self.state()?);
            self.state_bytes.store(length, Ordering::Relaxed);
        }
        self.announce_state();
        Ok(())
    }

    /// Caps the workspace's bytes (variable values and the state document's JSON text).
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: Option<u64>) -> Self {
        self.max_bytes = max_bytes.map(|bytes| usize::try_from(bytes).unwrap_or(usize::MAX));
        self
    }

    /// Refuses a write that grows the workspace past its cap, with a message saying what to do.
    /// A write that does not grow it passes even over the cap (a cap lowered below what is
    /// stored), so the workspace can always be trimmed and rewritten.
    pub(super) fn check_bytes(&self, before: usize, after: usize) -> Result<(), String> {
        match self.max_bytes {
            Some(cap) if after > cap && after > before => Err(format!(
                "workspace `{}` would hold {after} bytes, over its cap of {cap} bytes; remove variables with RemoveVars (or state with WriteState), or raise workspace_max_bytes in the config file (--workspace-max-bytes)",
                self.name
            )),
            _ => Ok(()),
        }
    }
}
