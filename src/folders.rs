//! What the folder libraries share — the skill roots and the script tool folders: the folders a
//! walk never enters, the `sha256:` digests of files, the modification times and timestamps an
//! index records, where each folder's index is kept ([`Indexes`], in the data folder) and
//! writing it atomically, the removal of the `index.json` earlier versions wrote into the
//! folders, and [`watch`], the hot reload of a library's folders.

pub mod watch;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// The name of an index kept inside the root it describes (only `~/.synapse/skills`, the
/// server's own root, keeps one), and of the ones earlier versions wrote into every root.
pub const INDEX_FILE: &str = "index.json";

/// The largest old `index.json` read to tell whether the server wrote it.
const OLD_INDEX_MAX_BYTES: u64 = 256 << 20;

/// Where the indexes of the folders the server only reads (`--skills`, `--tools`, the user's
/// other skill and tool folders) are kept: below the data folder, one file per folder, named
/// after the folder and a digest of its canonical path, so that the folders themselves are never
/// written to, a read-only folder gets an index too, and servers sharing a data folder share an
/// index per folder (each written whole by a rename, so the last one wins and none is torn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexes {
    folder: PathBuf,
}

impl Indexes {
    /// The folder below the data folder that holds the indexes.
    pub const FOLDER: &str = "indexes";

    pub fn new(data_folder: &Path) -> Self {
        Self {
            folder: data_folder.join(Self::FOLDER),
        }
    }

    /// The index file of `root` for `library` (`skills`, `tools`); `None` when the root cannot
    /// be resolved (it does not exist).
    pub fn file(&self, library: &str, root: &Path) -> Option<PathBuf> {
        let canonical = std::fs::canonicalize(root).ok()?;
        let name = canonical
            .file_name()
            .map_or_else(|| "root".into(), |name| name.to_string_lossy());
        let name: String = name
            .chars()
            .map(|character| {
                if character.is_ascii_alphanumeric() || matches!(character, '-' | '_' | '.') {
                    character
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        let digest = sha256(canonical.as_os_str().as_encoded_bytes());
        let short = digest.trim_start_matches("sha256:").get(..16)?;
        Some(
            self.folder
                .join(library)
                .join(format!("{name}-{short}.json")),
        )
    }
}

/// Removes the `index.json` an earlier version of the server wrote into `root`, which it was
/// only asked to read, when `written_by_us` recognises its content; a file of the user's that
/// happens to have the name is left alone.
pub fn remove_old_index(root: &Path, written_by_us: impl Fn(&serde_json::Value) -> bool) {
    let path = root.join(INDEX_FILE);
    let Ok(metadata) = std::fs::symlink_metadata(&path) else {
        return;
    };
    if !metadata.is_file() || metadata.len() > OLD_INDEX_MAX_BYTES {
        return;
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let ours = serde_json::from_str(&text).is_ok_and(|value| written_by_us(&value));
    if !ours {
        return;
    }
    match std::fs::remove_file(&path) {
        Ok(()) => tracing::info!(
            "removed {}, the index an earlier version wrote there; indexes now live in the data folder",
            path.display()
        ),
        Err(error) => tracing::debug!(%error, "cannot remove the old {}", path.display()),
    }
}

/// Whether `value` is an object with exactly these keys (what an index the server wrote holds).
pub fn has_exactly_keys(value: &serde_json::Value, keys: &[&str]) -> bool {
    value.as_object().is_some_and(|object| {
        object.len() == keys.len() && keys.iter().all(|key| object.contains_key(*key))
    })
}

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

/// Reads an index file, when there is one that parses as `Index`; one that does not is ignored
/// (logged at debug level): the index only makes starts faster.
pub fn read_index<Index: serde::de::DeserializeOwned>(file: &Path) -> Option<Index> {
    let text = std::fs::read_to_string(file).ok()?;
    match serde_json::from_str(&text) {
        Ok(index) => Some(index),
        Err(error) => {
            tracing::debug!(path = %file.display(), %error, "ignoring an unreadable index");
            None
        }
    }
}

/// Writes an index file atomically (a temporary file beside it, then a rename), making its
/// folder when need be. Failures (a read-only data folder) are logged at debug level and
/// otherwise ignored.
pub fn write_index(file: &Path, index: &impl serde::Serialize) {
    if let Err(error) = write_atomically(file, index) {
        tracing::debug!(path = %file.display(), %error, "index not written");
    }
}

fn write_atomically(file: &Path, index: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(index).map_err(std::io::Error::other)?;
    let folder = file.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(folder)?;
    let name = file
        .file_name()
        .map_or_else(|| INDEX_FILE.into(), |name| name.to_string_lossy());
    let temporary = folder.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&temporary, text + "\n")?;
    std::fs::rename(&temporary, file).inspect_err(|_| {
        if let Err(error) = std::fs::remove_file(&temporary) {
            tracing::debug!(%error, "cannot remove the temporary index");
        }
    })
}
