//! The git part of a skill source, through gix: open the repository (a local one in place; an
//! https one as a bare mirror fetched into first), resolve the ref to a commit, and write that
//! commit's tree as plain files. Only blobs and folders are written: symlinks and submodules
//! are left out (a link could point out of the skill root), names that could escape the copy
//! (`..`, `/`) are refused, and the copy is bounded in files and bytes, each object measured
//! from its header (a delta's from the size of its result) before it is inflated. The new copy is built
//! beside the old one and swapped in with renames, so a failure leaves the old copy whole.

use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::objs::tree::EntryKind;

use super::{Source, Transport};

/// Files one copy may hold.
pub const MAX_FILES: usize = 20_000;
/// Bytes one copy may hold.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Folders deep a copy may go.
const MAX_DEPTH: usize = 32;

/// Why a copy could not be brought up to date: each names the repository, ref, object, folder
/// or file it failed on. The old copy is left whole.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open the repository {location}: {reason}")]
    Open { location: String, reason: String },
    #[error("cannot read `{name}`: {reason}")]
    ReadReference { name: String, reason: String },
    #[error("`{name}` does not lead to a commit: {reason}")]
    NotACommit { name: String, reason: String },
    #[error(
        "the repository has no tag, branch or commit `{reference}` (a commit is named by its full 40-digit id)"
    )]
    UnknownReference { reference: String },
    #[error("cannot read commit {commit}: {reason}")]
    ReadCommit { commit: ObjectId, reason: String },
    #[error(
        "the repository has no folder `{subdir}` at commit {commit}; fix the `#{subdir}` of the source"
    )]
    NoFolder { subdir: String, commit: ObjectId },
    #[error("cannot read object {id}: {reason}")]
    ReadObject { id: ObjectId, reason: String },
    #[error(
        "the copy would hold more than {MAX_FILES} files or {} MiB (object {id} alone is {size} bytes)",
        MAX_BYTES >> 20
    )]
    TooLarge { id: ObjectId, size: u64 },
    #[error("the repository's folders go deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("cannot read tree {id}: {reason}")]
    ReadTree { id: ObjectId, reason: String },
    #[error("cannot read blob {id}: {reason}")]
    ReadBlob { id: ObjectId, reason: String },
    #[error("cannot make {}: {source}", path.display())]
    MakeFolder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot mark {} executable: {source}", path.display())]
    MarkExecutable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot move {} aside: {source}", path.display())]
    MoveAside {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot put the new copy at {}: {source}", path.display())]
    PutInPlace {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove {}: {source}", path.display())]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot fetch {url}: {reason}")]
    Fetch { url: String, reason: String },
    #[error("cannot open the mirror {}: {reason}", path.display())]
    OpenMirror { path: PathBuf, reason: String },
    #[error("cannot make the mirror {}: {reason}", path.display())]
    MakeMirror { path: PathBuf, reason: String },
    #[error(
        "cannot fetch {url}: this build has no https support for git (built without the `git-https` feature); use a `git+file://` clone"
    )]
    NoHttps { url: String },
}

/// Brings the copy in `folder` to the commit the source's ref names now and returns that
/// commit's id. The tree is written only when the commit differs from `current` (or there is no
/// copy).
pub(super) fn copy(source: &Source, folder: &Path, current: Option<&str>) -> Result<String, Error> {
    let repository = open(source, folder)?;
    let commit = resolve(&repository, source)?;
    let id = commit.to_string();
    let tree = folder.join("tree");
    if current == Some(id.as_str()) && tree.is_dir() {
        return Ok(id);
    }
    let staged = folder.join(format!("tree.new-{}", std::process::id()));
    remove_if_present(&staged)?;
    let written = write_commit(&repository, commit, source.subdir.as_deref(), &staged);
    if let Err(error) = written {
        remove_if_present(&staged)?;
        return Err(error);
    }
    swap(&staged, &tree)?;
    Ok(id)
}

/// The repository to read: a local one in place, or the mirror of an https one after a fetch.
fn open(source: &Source, folder: &Path) -> Result<gix::Repository, Error> {
    match source.transport {
        Transport::File => gix::open_opts(&source.location, gix::open::Options::isolated())
            .map_err(|error| Error::Open {
                location: source.location.clone(),
                reason: error.to_string(),
            }),
        Transport::Https => {
            let mirror = folder
                .parent()
                .map_or_else(|| folder.join("repo.git"), |parent| parent.join("repo.git"));
            https::fetch(&source.url, &mirror)
        }
    }
}

/// The commit the ref names: a tag, then a branch, then a full commit id.
fn resolve(repository: &gix::Repository, source: &Source) -> Result<ObjectId, Error> {
    let reference = &source.reference;
    let branch = match source.transport {
        Transport::File => format!("refs/heads/{reference}"),
        Transport::Https => format!("refs/remotes/origin/{reference}"),
    };
    for name in [format!("refs/tags/{reference}"), branch] {
        let found = repository
            .try_find_reference(name.as_str())
            .map_err(|error| Error::ReadReference {
                name: name.clone(),
                reason: error.to_string(),
            })?;
        if let Some(mut found) = found {
            let commit = found.peel_to_commit().map_err(|error| Error::NotACommit {
                name: name.clone(),
                reason: error.to_string(),
            })?;
            return Ok(commit.id);
        }
    }
    let commit = ObjectId::from_hex(reference.as_bytes())
        .ok()
        .and_then(|id| repository.find_commit(id).ok());
    commit
        .map(|commit| commit.id)
        .ok_or_else(|| Error::UnknownReference {
            reference: reference.clone(),
        })
}

/// Writes the tree of `commit` (or of its `subdir`, checked to exist) into `destination`.
fn write_commit(
    repository: &gix::Repository,
    commit: ObjectId,
    subdir: Option<&str>,
    destination: &Path,
) -> Result<(), Error> {
    let failed = |error: gix::Error| Error::ReadCommit {
        commit,
        reason: error.to_string(),
    };
    let tree = repository
        .find_commit(commit)
        .and_then(|commit| commit.tree())
        .map_err(failed)?;
    if let Some(subdir) = subdir {
        let entry = tree.lookup_entry_by_path(subdir).map_err(failed)?;
        if !entry.is_some_and(|entry| entry.mode().is_tree()) {
            return Err(Error::NoFolder {
                subdir: subdir.to_owned(),
                commit,
            });
        }
    }
    let mut budget = Budget::default();
    write_tree(repository, tree.id, destination, 0, &mut budget)
}

/// What a copy has written so far.
#[derive(Default)]
struct Budget {
    files: usize,
    bytes: u64,
}

impl Budget {
    /// The size of object `id` from its header, refused when it (with `files` more files)
    /// would take the copy past its bounds.
    fn measure(
        &self,
        repository: &gix::Repository,
        id: ObjectId,
        files: usize,
    ) -> Result<u64, Error> {
        let size = repository
            .find_header(id)
            .map_err(|error| Error::ReadObject {
                id,
                reason: error.to_string(),
            })?
            .size();
        if self.files + files > MAX_FILES || self.bytes.saturating_add(size) > MAX_BYTES {
            return Err(Error::TooLarge { id, size });
        }
        Ok(size)
    }
}

fn write_tree(
    repository: &gix::Repository,
    tree: ObjectId,
    folder: &Path,
    depth: usize,
    budget: &mut Budget,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(Error::TooDeep);
    }
    std::fs::create_dir_all(folder).map_err(|source| Error::MakeFolder {
        path: folder.to_owned(),
        source,
    })?;
    budget.measure(repository, tree, 0)?;
    let tree = repository
        .find_tree(tree)
        .map_err(|error| Error::ReadTree {
            id: tree,
            reason: error.to_string(),
        })?;
    let decoded = tree.decode().map_err(|error| Error::ReadTree {
        id: tree.id,
        reason: error.to_string(),
    })?;
    for entry in &decoded.entries {
        let name = entry.filename.to_string();
        if name.is_empty()
            || name == "."
            || name == ".."
            || name.contains(['/', '\\', '\0'])
            || name == ".git"
        {
            tracing::warn!(
                "skill source: left out the tree entry `{name}`, which is not a plain name"
            );
            continue;
        }
        let path = folder.join(&name);
        let id = entry.oid.to_owned();
        match entry.mode.kind() {
            EntryKind::Tree => write_tree(repository, id, &path, depth + 1, budget)?,
            EntryKind::Blob | EntryKind::BlobExecutable => {
                // Measured from the object's header (for a delta, the size of its result) before
                // anything is inflated: a small repository may hold a blob of gigabytes of zeros.
                let size = budget.measure(repository, id, 1)?;
                let blob = repository.find_blob(id).map_err(|error| Error::ReadBlob {
                    id,
                    reason: error.to_string(),
                })?;
                budget.files += 1;
                budget.bytes += size;
                std::fs::write(&path, &blob.data).map_err(|source| Error::Write {
                    path: path.clone(),
                    source,
                })?;
                if entry.mode.kind() == EntryKind::BlobExecutable {
                    make_executable(&path)?;
                }
            }
            // A link could lead out of the skill root; a submodule is another repository.
            EntryKind::Link | EntryKind::Commit => {}
        }
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(|source| {
        Error::MarkExecutable {
            path: path.to_owned(),
            source,
        }
    })
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), Error> {
    Ok(())
}

/// Puts the `staged` copy in place of `tree`; the old copy is removed only once the new one is
/// in place.
fn swap(staged: &Path, tree: &Path) -> Result<(), Error> {
    let old = tree.with_file_name(format!("tree.old-{}", std::process::id()));
    remove_if_present(&old)?;
    let moved = tree.is_dir();
    if moved {
        std::fs::rename(tree, &old).map_err(|source| Error::MoveAside {
            path: tree.to_owned(),
            source,
        })?;
    }
    if let Err(source) = std::fs::rename(staged, tree) {
        if moved && let Err(back) = std::fs::rename(&old, tree) {
            tracing::error!("cannot put {} back: {back}", tree.display());
        }
        return Err(Error::PutInPlace {
            path: tree.to_owned(),
            source,
        });
    }
    if moved && let Err(error) = std::fs::remove_dir_all(&old) {
        tracing::warn!("cannot remove the old copy {}: {error}", old.display());
    }
    Ok(())
}

fn remove_if_present(folder: &Path) -> Result<(), Error> {
    match std::fs::remove_dir_all(folder) {
        Err(source) if source.kind() != std::io::ErrorKind::NotFound => Err(Error::Remove {
            path: folder.to_owned(),
            source,
        }),
        _ => Ok(()),
    }
}

/// Fetching an https repository into its bare mirror (branches and tags).
#[cfg(feature = "git-https")]
mod https {
    use std::path::Path;
    use std::sync::atomic::AtomicBool;

    use super::Error;

    /// Fetches `url` into the bare repository `mirror` (made when missing) and returns it.
    pub(super) fn fetch(url: &str, mirror: &Path) -> Result<gix::Repository, Error> {
        // rustls needs one process-wide provider; `ring` is the one compiled in. Installing it
        // twice fails harmlessly.
        if rustls::crypto::ring::default_provider()
            .install_default()
            .is_err()
        {
            tracing::trace!("a rustls crypto provider was already installed");
        }
        let failed = |error: gix::Error| Error::Fetch {
            url: url.to_owned(),
            reason: root_cause(&error),
        };
        let repository = if mirror.join("HEAD").is_file() {
            gix::open_opts(mirror, gix::open::Options::isolated()).map_err(|error| {
                Error::OpenMirror {
                    path: mirror.to_owned(),
                    reason: error.to_string(),
                }
            })?
        } else {
            let made = |reason: String| Error::MakeMirror {
                path: mirror.to_owned(),
                reason,
            };
            std::fs::create_dir_all(mirror).map_err(|error| made(error.to_string()))?;
            gix::init_bare(mirror).map_err(|error| made(error.to_string()))?
        };
        let remote = repository
            .remote_at(url)
            .and_then(|remote| {
                remote.with_refspecs(
                    [
                        "+refs/heads/*:refs/remotes/origin/*",
                        "+refs/tags/*:refs/tags/*",
                    ],
                    gix::remote::Direction::Fetch,
                )
            })
            .map_err(failed)?;
        let interrupt = AtomicBool::new(false);
        remote
            .connect(gix::remote::Direction::Fetch)
            .and_then(|connection| {
                connection.prepare_fetch(
                    gix::progress::Discard,
                    gix::remote::ref_map::Options::default(),
                )
            })
            .and_then(|prepared| prepared.receive(gix::progress::Discard, &interrupt))
            .map_err(failed)?;
        Ok(repository)
    }

    /// The error and its deepest cause on one line ("Transport handshake failed: Connection
    /// refused (os error 111)"): the chain between them repeats itself.
    fn root_cause(error: &gix::Error) -> String {
        let mut deepest: &dyn std::error::Error = error;
        while let Some(source) = deepest.source() {
            deepest = source;
        }
        let (top, cause) = (error.to_string(), deepest.to_string());
        if cause == top {
            top
        } else {
            format!("{top}: {cause}")
        }
    }
}

/// Without the `git-https` feature, https sources are refused at fetch time.
#[cfg(not(feature = "git-https"))]
mod https {
    use std::path::Path;

    use super::Error;

    pub(super) fn fetch(url: &str, _mirror: &Path) -> Result<gix::Repository, Error> {
        Err(Error::NoHttps {
            url: url.to_owned(),
        })
    }
}
