//! Digests of skill files remembered by the version of the file on disk (device, inode, size,
//! modification and change times), so `skills/list` after a reload and the digest set of an
//! approval re-read only what changed. The change time cannot be set back by a user, so a file
//! rewritten with its old modification time still counts as changed. File times are coarse
//! (a few milliseconds), so a file changed in the last seconds is never remembered: a second
//! write within the same tick would otherwise look unchanged.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, PoisonError};

/// Files remembered at most; the memory is cleared when it is full.
const LIMIT: usize = 100_000;

/// How long after its last change a file's digest may be remembered.
const SETTLED_SECONDS: i64 = 2;

/// What identifies one version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Version {
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

static KNOWN: LazyLock<Mutex<HashMap<PathBuf, (Version, String)>>> = LazyLock::new(Mutex::default);

#[cfg(unix)]
#[expect(
    clippy::unnecessary_wraps,
    reason = "platforms without inode numbers have no version to give"
)]
pub(super) fn version(metadata: &std::fs::Metadata) -> Option<Version> {
    use std::os::unix::fs::MetadataExt as _;
    Some(Version {
        device: metadata.dev(),
        inode: metadata.ino(),
        size: metadata.size(),
        modified: (metadata.mtime(), metadata.mtime_nsec()),
        changed: (metadata.ctime(), metadata.ctime_nsec()),
    })
}

#[cfg(not(unix))]
pub(super) fn version(_metadata: &std::fs::Metadata) -> Option<Version> {
    None
}

/// The digest of this version of the file, when it was computed before.
pub(super) fn known(path: &Path, version: Version) -> Option<String> {
    let known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    known
        .get(path)
        .filter(|(seen, _)| *seen == version)
        .map(|(_, digest)| digest.clone())
}

pub(super) fn remember(path: PathBuf, version: Version, digest: String) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX)
        });
    let latest = version.modified.0.max(version.changed.0);
    if now.saturating_sub(latest) < SETTLED_SECONDS {
        return;
    }
    let mut known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    if known.len() >= LIMIT {
        known.clear();
    }
    known.insert(path, (version, digest));
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn only_settled_versions_are_remembered() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("a");
        std::fs::write(&path, "x").unwrap();
        let fresh = version(&std::fs::metadata(&path).unwrap()).unwrap();
        remember(path.clone(), fresh, "digest".into());
        assert_eq!(known(&path, fresh), None, "a file changed just now");
        let settled = Version {
            modified: (0, 0),
            changed: (0, 0),
            ..fresh
        };
        remember(path.clone(), settled, "digest".into());
        assert_eq!(known(&path, settled).as_deref(), Some("digest"));
        assert_eq!(known(&path, Version { size: 9, ..settled }), None);
    }
}
