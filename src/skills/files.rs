//! The files of a skill, wherever the skill lives: a folder on disk, or a folder of the bundled
//! `skills/` tree compiled into the binary. Every path a client gives is checked here before
//! any file is opened: relative, no `..`, no percent-encoded tricks, and (on disk) no symlink
//! that leaves the skill folder.

use std::collections::HashSet;
use std::io::{BufRead as _, Read as _};
use std::path::{Component, Path, PathBuf};

use include_dir::{Dir, DirEntry};
use sha2::Digest as _;

mod digests;
mod window;

pub use window::Window;

/// Why a path given for a skill file is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    #[error("the path is empty")]
    Empty,
    #[error("absolute paths are not allowed")]
    Absolute,
    #[error("`..` would leave the skill folder")]
    ParentDirectory,
    #[error("backslashes and NUL characters are not allowed")]
    BadCharacter,
    #[error("percent-encoded `/`, `\\`, `.` or `%` are not allowed")]
    Encoded,
    #[error("it resolves outside the skill folder (through a symlink)")]
    LeavesFolder,
    #[error("SKILL.md is written from `body`, and hidden files are not allowed")]
    Reserved,
    #[error(
        "a folder on the way is a symlink, and SkillSave writes only into real folders of the skill"
    )]
    ThroughLink,
}

/// A path relative to a skill folder, checked and normalised to `a/b/c`.
pub fn clean_relative(path: &str) -> Result<String, PathProblem> {
    if path.contains(['\\', '\0']) {
        return Err(PathProblem::BadCharacter);
    }
    if has_encoded_separator(path) {
        return Err(PathProblem::Encoded);
    }
    if path.starts_with('/') || Path::new(path).has_root() || has_drive_prefix(path) {
        return Err(PathProblem::Absolute);
    }
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => return Err(PathProblem::ParentDirectory),
            Component::RootDir | Component::Prefix(_) => return Err(PathProblem::Absolute),
        }
    }
    if parts.is_empty() {
        return Err(PathProblem::Empty);
    }
    Ok(parts.join("/"))
}

fn has_drive_prefix(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

fn has_encoded_separator(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    ["%2f", "%5c", "%2e", "%25", "%00"]
        .iter()
        .any(|code| lower.contains(code))
}

/// An entry of a skill folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    pub name: String,
    pub directory: bool,
    pub size: u64,
}

/// Where a skill's files are.
#[derive(Debug, Clone)]
pub enum Location {
    Disk(PathBuf),
    Bundled(&'static Dir<'static>),
}

/// A file or folder that cannot be read, or is refused.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("no such file")]
    Missing,
    #[error("{0}")]
    Refused(PathProblem),
    #[error("it is a FIFO, socket or device, not a regular file")]
    NotRegular,
    #[error(
        "the file has {size} bytes, more than the {limit} read whole; read it in windows with SkillReadFile `start`/`length`"
    )]
    TooLarge { size: u64, limit: u64 },
    #[error("the file is not UTF-8 text")]
    Binary,
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Location {
    /// What to tell the model about where the skill is.
    pub fn display(&self) -> String {
        match self {
            Self::Disk(path) => path.display().to_string(),
            Self::Bundled(directory) => format!(
                "(bundled in synapse-mcp) skills/{}",
                directory.path().display()
            ),
        }
    }

    /// The bytes of a file, by a path already cleaned with [`clean_relative`].
    pub fn read(&self, relative: &str) -> Result<Vec<u8>, FileError> {
        match self {
            Self::Bundled(directory) => directory
                .get_file(directory.path().join(relative))
                .map(|file| file.contents().to_vec())
                .ok_or(FileError::Missing),
            Self::Disk(folder) => {
                let (path, file, metadata) = open_regular(folder, relative)?;
                let size = metadata.len();
                if size > MAX_READ_BYTES {
                    return Err(FileError::TooLarge {
                        size,
                        limit: MAX_READ_BYTES,
                    });
                }
                let mut bytes = Vec::new();
                file.take(MAX_READ_BYTES)
                    .read_to_end(&mut bytes)
                    .map_err(|source| FileError::Io { path, source })?;
                Ok(bytes)
            }
        }
    }

    /// Every file below the folder, relative and sorted; `.git` and `node_modules` are skipped,
    /// and so are any symlink that leaves the folder and anything that is not a regular file.
    pub fn files(&self) -> Vec<String> {
        match self {
            Self::Bundled(directory) => {
                let mut files = Vec::new();
                bundled_files(directory, directory.path(), &mut files);
                files.sort();
                files
            }
            Self::Disk(folder) => walk(folder, LISTING).files,
        }
    }

    /// Every entry below the folder within `limits`, with what was left out and why; a bundled
    /// skill has nothing left out.
    pub fn walk(&self, limits: Limits) -> Walk {
        match self {
            Self::Bundled(_) => Walk {
                files: self.files(),
                ..Walk::default()
            },
            Self::Disk(folder) => walk(folder, limits),
        }
    }

    /// The `sha256:` digest and size of a file, read in blocks (never whole), by a path already
    /// cleaned with [`clean_relative`]. `limit` refuses files larger than that many bytes.
    pub fn digest(&self, relative: &str, limit: Option<u64>) -> Result<(String, u64), FileError> {
        match self {
            Self::Bundled(_) => {
                let bytes = self.read(relative)?;
                Ok((crate::folders::sha256(&bytes), bytes.len() as u64))
            }
            Self::Disk(folder) => {
                let (path, file, metadata) = open_regular(folder, relative)?;
                let size = metadata.len();
                if let Some(limit) = limit
                    && size > limit
                {
                    return Err(FileError::TooLarge { size, limit });
                }
                let version = digests::version(&metadata);
                if let Some(digest) = version.and_then(|version| digests::known(&path, version)) {
                    return Ok((digest, size));
                }
                let io = |source| FileError::Io {
                    path: path.clone(),
                    source,
                };
                let mut hasher = sha2::Sha256::new();
                let mut reader = std::io::BufReader::with_capacity(BLOCK, file);
                let mut total = 0_u64;
                loop {
                    let block = reader.fill_buf().map_err(io)?;
                    if block.is_empty() {
                        break;
                    }
                    hasher.update(block);
                    let read = block.len();
                    total += read as u64;
                    reader.consume(read);
                }
                let digest = crate::folders::hex_digest(&hasher.finalize());
                if let Some(version) = version.filter(|_| total == size) {
                    digests::remember(path, version, digest.clone());
                }
                Ok((digest, total))
            }
        }
    }

    /// A window of a text file in characters, read in blocks: only what precedes the window
    /// and the window itself are read, and the whole file is counted only when it is small.
    pub fn read_window(
        &self,
        relative: &str,
        start: usize,
        length: usize,
    ) -> Result<Window, FileError> {
        match self {
            Self::Bundled(_) => {
                let bytes = self.read(relative)?;
                window::cut(bytes.as_slice(), start, length, true)
            }
            Self::Disk(folder) => {
                let (path, file, metadata) = open_regular(folder, relative)?;
                window::cut(file, start, length, metadata.len() <= COUNT_WHOLE_BYTES).map_err(
                    |error| match error {
                        FileError::Io { source, .. } => FileError::Io { path, source },
                        other => other,
                    },
                )
            }
        }
    }

    /// The resolved path of a file on disk, by a path already cleaned with [`clean_relative`];
    /// `None` for a bundled skill, which has no folder on disk.
    pub fn disk_path(&self, relative: &str) -> Option<Result<PathBuf, FileError>> {
        let Self::Disk(folder) = self else {
            return None;
        };
        Some(confined(folder, relative).and_then(|path| {
            if path.is_file() {
                Ok(path)
            } else {
                Err(FileError::Missing)
            }
        }))
    }

    /// The direct children of a sub-folder (`""` is the skill folder itself), sorted by name.
    pub fn children(&self, relative: &str) -> Result<Vec<Child>, FileError> {
        let mut children = match self {
            Self::Bundled(directory) => bundled_children(directory, relative)?,
            Self::Disk(folder) => {
                let root = std::fs::canonicalize(folder).map_err(|source| FileError::Io {
                    path: folder.clone(),
                    source,
                })?;
                let path = if relative.is_empty() {
                    root.clone()
                } else {
                    confined(folder, relative)?
                };
                disk_children(&root, &path)?
            }
        };
        children.sort_by(|left, right| left.name.cmp(&right.name));
        Ok(children)
    }
}

/// Joins and resolves a path, refusing one that ends outside the folder.
fn confined(folder: &Path, relative: &str) -> Result<PathBuf, FileError> {
    let root = std::fs::canonicalize(folder).map_err(|source| FileError::Io {
        path: folder.to_owned(),
        source,
    })?;
    let joined = root.join(relative);
    let Ok(resolved) = std::fs::canonicalize(&joined) else {
        return Err(FileError::Missing);
    };
    if resolved.starts_with(&root) {
        Ok(resolved)
    } else {
        Err(FileError::Refused(PathProblem::LeavesFolder))
    }
}

fn skipped(name: &str) -> bool {
    name == ".git" || name == "node_modules"
}

/// Files read whole at most (resources, SKILL.md); larger ones are read in windows.
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

/// Files up to this size are counted to the end when a window is read, so the answer can say
/// how many characters there are in all.
const COUNT_WHOLE_BYTES: u64 = 8 * 1024 * 1024;

/// How much is read at a time.
const BLOCK: usize = 64 * 1024;

/// How far and how wide a walk through a skill folder goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Folder levels below the skill folder.
    pub depth: usize,
    /// Entries looked at in all (files, folders, links).
    pub entries: usize,
    /// Whether `.git` and `node_modules` are left out.
    pub skip_vendored: bool,
}

/// What `SkillLoad`, resources and `skills/list` show.
pub const LISTING: Limits = Limits {
    depth: 8,
    entries: 10_000,
    skip_vendored: true,
};

/// What an approval to run a skill's code is bound to: everything, or nothing runs.
pub const EVERYTHING: Limits = Limits {
    depth: 32,
    entries: 50_000,
    skip_vendored: false,
};

/// The result of a walk: the regular files, sorted, and what was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walk {
    pub files: Vec<String>,
    /// Symlinks that resolve outside the folder.
    pub leaving: Vec<String>,
    /// FIFOs, sockets and devices.
    pub special: Vec<String>,
    /// Whether the depth or entry limit cut the walk short.
    pub truncated: bool,
}

/// Walks a folder without recursion: each real folder is entered once (a set of canonical
/// paths), so links such as `loop -> .` cannot multiply the walk, and the limits bound it.
fn walk(folder: &Path, limits: Limits) -> Walk {
    let mut result = Walk::default();
    let Ok(root) = std::fs::canonicalize(folder) else {
        return result;
    };
    let mut visited = HashSet::from([root.clone()]);
    // Breadth first, so that a folder is entered at the least depth it can be reached at.
    let mut pending = std::collections::VecDeque::from([(root.clone(), String::new(), 0_usize)]);
    let mut seen = 0_usize;
    while let Some((directory, prefix, depth)) = pending.pop_front() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if limits.skip_vendored && skipped(&name) {
                continue;
            }
            seen += 1;
            if seen > limits.entries {
                result.truncated = true;
                tracing::warn!(folder = %folder.display(), limit = limits.entries, "a skill folder has too many entries; the rest is left out");
                pending.clear();
                break;
            }
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let (resolved, metadata) = if kind.is_symlink() {
                let Ok(resolved) = std::fs::canonicalize(entry.path()) else {
                    continue;
                };
                if !resolved.starts_with(&root) {
                    tracing::debug!(path = %entry.path().display(), "skipping a symlink that leaves the skill folder");
                    result.leaving.push(relative);
                    continue;
                }
                let Ok(metadata) = std::fs::metadata(&resolved) else {
                    continue;
                };
                (resolved, metadata)
            } else {
                let Ok(metadata) = entry.metadata() else {
                    continue;
                };
                (entry.path(), metadata)
            };
            if metadata.is_dir() {
                if depth >= limits.depth {
                    result.truncated = true;
                } else if visited.insert(resolved.clone()) {
                    pending.push_back((resolved, relative, depth + 1));
                }
            } else if metadata.is_file() {
                result.files.push(relative);
            } else {
                tracing::warn!(path = %entry.path().display(), "skipping a skill file that is not a regular file (FIFO, socket or device)");
                result.special.push(relative);
            }
        }
    }
    result.files.sort();
    result.leaving.sort();
    result.special.sort();
    result
}

/// Opens a cleaned path for reading: it must stay inside the folder and be a regular file
/// (a FIFO would block the reader forever).
fn open_regular(
    folder: &Path,
    relative: &str,
) -> Result<(PathBuf, std::fs::File, std::fs::Metadata), FileError> {
    let path = confined(folder, relative)?;
    // Checked before opening (opening a FIFO blocks) and again on the open file.
    let checked = std::fs::metadata(&path).map_err(|_| FileError::Missing)?;
    if checked.is_dir() {
        return Err(FileError::Missing);
    }
    if !checked.is_file() {
        return Err(FileError::NotRegular);
    }
    let file = std::fs::File::open(&path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => FileError::Missing,
        _ => FileError::Io {
            path: path.clone(),
            source,
        },
    })?;
    let metadata = file.metadata().map_err(|source| FileError::Io {
        path: path.clone(),
        source,
    })?;
    if metadata.is_dir() {
        return Err(FileError::Missing);
    }
    if !metadata.is_file() {
        return Err(FileError::NotRegular);
    }
    Ok((path, file, metadata))
}

fn disk_children(root: &Path, path: &Path) -> Result<Vec<Child>, FileError> {
    if !path.is_dir() {
        return Err(FileError::Missing);
    }
    let entries = std::fs::read_dir(path).map_err(|source| FileError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut children = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(metadata) = std::fs::metadata(entry.path()) else {
            continue;
        };
        let inside =
            std::fs::canonicalize(entry.path()).is_ok_and(|resolved| resolved.starts_with(root));
        if inside && !skipped(&name) {
            children.push(Child {
                name,
                directory: metadata.is_dir(),
                size: metadata.len(),
            });
        }
    }
    Ok(children)
}

fn bundled_files(directory: &Dir<'static>, base: &Path, files: &mut Vec<String>) {
    for entry in directory.entries() {
        match entry {
            DirEntry::Dir(inner) => bundled_files(inner, base, files),
            DirEntry::File(file) => {
                if let Ok(relative) = file.path().strip_prefix(base) {
                    files.push(relative.to_string_lossy().replace('\\', "/"));
                }
            }
        }
    }
}

fn bundled_children(directory: &Dir<'static>, relative: &str) -> Result<Vec<Child>, FileError> {
    let folder = if relative.is_empty() {
        directory
    } else {
        directory
            .get_dir(directory.path().join(relative))
            .ok_or(FileError::Missing)?
    };
    let children = folder.entries().iter().map(|entry| {
        let name = entry
            .path()
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        match entry {
            DirEntry::Dir(_) => Child {
                name,
                directory: true,
                size: 0,
            },
            DirEntry::File(file) => Child {
                name,
                directory: false,
                size: file.contents().len() as u64,
            },
        }
    });
    Ok(children.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn relative_paths_are_normalised() {
        assert_eq!(
            clean_relative("references/a.md").unwrap(),
            "references/a.md"
        );
        assert_eq!(clean_relative("./a//b.md").unwrap(), "a/b.md");
    }

    #[test]
    fn escapes_are_refused() {
        let cases = [
            ("../secret", PathProblem::ParentDirectory),
            ("a/../../b", PathProblem::ParentDirectory),
            ("/etc/passwd", PathProblem::Absolute),
            ("C:/Windows", PathProblem::Absolute),
            ("..\\x", PathProblem::BadCharacter),
            ("%2e%2e/x", PathProblem::Encoded),
            ("a%2Fb", PathProblem::Encoded),
            ("", PathProblem::Empty),
            (".", PathProblem::Empty),
        ];
        for (path, problem) in cases {
            assert_eq!(clean_relative(path), Err(problem), "{path}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_leaving_the_folder_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        let skill = tempfile::tempdir().unwrap();
        std::fs::write(skill.path().join("SKILL.md"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), skill.path().join("link")).unwrap();
        let location = Location::Disk(skill.path().to_owned());
        assert!(matches!(
            location.read("link/secret.txt"),
            Err(FileError::Refused(PathProblem::LeavesFolder))
        ));
        assert_eq!(location.files(), ["SKILL.md"]);
        assert_eq!(location.read("SKILL.md").unwrap(), b"x");
    }

    /// Builds a random tree of folders, files and folder links (to any folder of the tree,
    /// loops included, or out of it) and checks the walk: it ends, lists every real file once
    /// (under one of its paths), lists nothing outside, and keeps to its limits.
    #[cfg(unix)]
    mod walks {
        use super::*;
        use proptest::prelude::*;
        use std::collections::BTreeSet;

        fn build(root: &Path, outside: &Path, operations: &[(usize, u8)]) -> BTreeSet<PathBuf> {
            let mut folders = vec![root.to_owned()];
            let mut files = BTreeSet::new();
            for (index, (parent, kind)) in operations.iter().enumerate() {
                let parent = folders[parent % folders.len()].clone();
                let path = parent.join(format!("e{index}"));
                match kind % 4 {
                    0 => {
                        std::fs::create_dir(&path).unwrap();
                        folders.push(path);
                    }
                    1 => {
                        std::fs::write(&path, "x").unwrap();
                        files.insert(std::fs::canonicalize(&path).unwrap());
                    }
                    2 => {
                        let target = &folders[(index * 7) % folders.len()];
                        std::os::unix::fs::symlink(target, &path).unwrap();
                    }
                    _ => std::os::unix::fs::symlink(outside, &path).unwrap(),
                }
            }
            files
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            #[test]
            fn any_tree_of_links_is_walked_once_within_limits(
                operations in prop::collection::vec((0_usize..16, 0_u8..4), 1..40),
                entries in 1_usize..60,
            ) {
                let outside = tempfile::tempdir().unwrap();
                std::fs::write(outside.path().join("secret"), "s").unwrap();
                let skill = tempfile::tempdir().unwrap();
                let root = std::fs::canonicalize(skill.path()).unwrap();
                let real = build(&root, outside.path(), &operations);
                let limits = Limits { depth: 3, entries: 10_000, skip_vendored: true };
                let whole = walk(&root, limits);
                let listed: Vec<PathBuf> = whole
                    .files
                    .iter()
                    .map(|file| std::fs::canonicalize(root.join(file)).unwrap())
                    .collect();
                let unique: BTreeSet<PathBuf> = listed.iter().cloned().collect();
                prop_assert_eq!(unique.len(), listed.len(), "a file listed twice: {:?}", whole.files);
                // Within the depth limit, every real file is found (through a link or not).
                let within: BTreeSet<PathBuf> = real
                    .iter()
                    .filter(|file| file.strip_prefix(&root).unwrap().components().count() <= 4)
                    .cloned()
                    .collect();
                prop_assert!(within.is_subset(&unique), "{:?} not all in {:?}", within, unique);
                prop_assert!(unique.is_subset(&real), "listed outside: {:?}", unique);
                let capped = walk(&root, Limits { entries, ..limits });
                prop_assert!(capped.files.len() <= entries);
                prop_assert!(capped.files.iter().all(|file| whole.files.contains(file)));
            }
        }
    }
}
