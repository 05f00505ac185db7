//! What the folder libraries share — the skill roots and the script tool folders: the folders a
//! walk never enters, the `sha256:` digests of files, the modification times and timestamps an
//! `index.json` records, writing that index atomically, and [`watch`], the hot reload of a
//! library's folders.

pub mod watch;

use std::path::Path;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// The index a writable root keeps of what it holds, so that a start reads only what changed.
pub const INDEX_FILE: &str = "index.json";

/// Folders the walks never enter: hidden ones (`.git`, `.backups`, staged saves) and
/// `node_modules`. The watcher skips the same ones.
pub fn skipped_folder(name: &str) -> bool {
    name.starts_with('.') || name == "node_modules"
}

/// `sha256:` and the lowercase hex digest of the bytes.
pub fn sha256(bytes: &[u8]) -> String {
    hex_digest(&Sha256::digest(bytes))
}

/// `sha256:` and the lowercase hex of a finished hash.
pub fn hex_digest(hash: &[u8]) -> String {
    format!("sha256:{}", crate::digest::hex(hash))
}

/// The nanoseconds since the epoch of a modification time.
pub fn nanos(time: SystemTime) -> u128 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos())
}

/// A time as an index writes it: RFC 3339 with milliseconds.
pub fn timestamp(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// Reads the `index.json` of a root, when there is one that parses as `Index`; one that does not
/// is ignored (logged at debug level): the index only makes starts faster.
pub fn read_index<Index: serde::de::DeserializeOwned>(root: &Path) -> Option<Index> {
    let path = root.join(INDEX_FILE);
    let text = std::fs::read_to_string(&path).ok()?;
    match serde_json::from_str(&text) {
        Ok(index) => Some(index),
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "ignoring an unreadable index.json");
            None
        }
    }
}

/// Writes the `index.json` of a root atomically (a temporary file, then a rename). Failures (a
/// read-only root) are logged at debug level and otherwise ignored.
pub fn write_index(root: &Path, index: &impl serde::Serialize) {
    if let Err(error) = write_atomically(root, index) {
        tracing::debug!(root = %root.display(), %error, "index.json not written");
    }
}

fn write_atomically(root: &Path, index: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(index).map_err(std::io::Error::other)?;
    let temporary = root.join(format!(".{INDEX_FILE}.{}.tmp", std::process::id()));
    std::fs::write(&temporary, text + "\n")?;
    std::fs::rename(&temporary, root.join(INDEX_FILE)).inspect_err(|_| {
        if let Err(error) = std::fs::remove_file(&temporary) {
            tracing::debug!(%error, "cannot remove the temporary index");
        }
    })
}
