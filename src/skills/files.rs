//! The files of a skill, wherever the skill lives: a folder on disk, or a folder of the bundled
//! `skills/` tree compiled into the binary. Every path a client gives is checked here before
//! any file is opened: relative, no `..`, no percent-encoded tricks, and (on disk) no symlink
//! that leaves the skill folder.

use std::path::{Component, Path, PathBuf};

use include_dir::{Dir, DirEntry};

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
                let path = confined(folder, relative)?;
                if !path.is_file() {
                    return Err(FileError::Missing);
                }
                std::fs::read(&path).map_err(|source| FileError::Io { path, source })
            }
        }
    }

    /// Every file below the folder, relative and sorted; `.git` and `node_modules` are skipped,
    /// and so is any symlink that leaves the folder.
    pub fn files(&self) -> Vec<String> {
        let mut files = Vec::new();
        match self {
            Self::Bundled(directory) => bundled_files(directory, directory.path(), &mut files),
            Self::Disk(folder) => {
                let root = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.clone());
                disk_files(&root, &root, 0, &mut files);
            }
        }
        files.sort();
        files
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

const MAX_FILE_DEPTH: usize = 8;

fn disk_files(root: &Path, folder: &Path, depth: usize, files: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if skipped(&name) {
            continue;
        }
        let Ok(resolved) = std::fs::canonicalize(entry.path()) else {
            continue;
        };
        if !resolved.starts_with(root) {
            tracing::debug!(path = %entry.path().display(), "skipping a symlink that leaves the skill folder");
            continue;
        }
        if resolved.is_dir() {
            if depth < MAX_FILE_DEPTH {
                disk_files(root, &entry.path(), depth + 1, files);
            }
        } else if let Ok(relative) = entry.path().strip_prefix(root) {
            files.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
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
}
