//! Saving a skill (`SkillSave`): the new SKILL.md is rendered, parsed back and checked in
//! strict mode before anything is written; the folder is built beside its final place (a copy
//! of the old folder, when there is one, so files not named in the request are kept), then
//! swapped in with renames. The previous version is kept in `.backups/` next to the skill
//! (hidden, so never scanned as a skill); the last [`KEEP_BACKUPS`] versions of each skill
//! are kept there.
//!
//! Symlinks are never written through: a file given in the request whose path is a symlink in
//! the skill replaces the link itself (the link's target is left alone), and a path through a
//! folder that is a symlink is refused — the same containment reads enforce, for writes. A
//! save is bounded in files and bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use super::discover::{Root, RootKind};
use super::files::{Location, clean_relative};
use super::validate::Level;
use super::{Error, Library, SKILL_MD, catalog};

/// Files a single save may write besides SKILL.md.
pub const MAX_FILES: usize = 100;
/// Bytes one file of a save may have.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;
/// Bytes a save may write in all (SKILL.md included).
pub const MAX_SAVE_BYTES: usize = 4 * 1024 * 1024;
/// Earlier versions kept per skill in `.backups/`.
pub const KEEP_BACKUPS: usize = 5;

/// What to save.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub name: String,
    pub description: String,
    pub body: String,
    /// Other files by relative path, as text.
    pub files: BTreeMap<String, String>,
    /// The root to save a new skill into (default: the first writable one).
    pub root: Option<PathBuf>,
}

/// What was saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub folder: PathBuf,
    /// The skills folder (root) the skill is in.
    pub root: Option<PathBuf>,
    pub created: bool,
    /// Where the previous version went.
    pub backup: Option<PathBuf>,
}

/// Checks and writes a skill. The caller reloads the library afterwards.
pub fn save(library: &Library, roots: &[Root], request: &Request) -> Result<Saved, Error> {
    let checked = checked(library, roots, request)?;
    let mut saved = write(
        &checked.folder,
        &checked.text,
        &checked.files,
        checked.file_name,
    )?;
    saved.root = roots
        .iter()
        .find(|root| root.kind.writable() && checked.folder.starts_with(&root.path))
        .map(|root| root.path.clone());
    Ok(saved)
}

/// Checks a skill as [`save`] would, writing nothing: what a save's approval is asked about only
/// once it passed.
pub fn check_request(library: &Library, roots: &[Root], request: &Request) -> Result<(), Error> {
    checked(library, roots, request).map(|_| ())
}

/// A skill ready to be written: its folder, `SKILL.md` text, other files, and the file name an
/// existing version uses.
struct Checked<'a> {
    folder: PathBuf,
    text: String,
    files: Vec<(String, &'a str)>,
    file_name: Option<&'a str>,
}

/// Renders and checks a skill against the specification, its size and where it would go.
fn checked<'a>(
    library: &'a Library,
    roots: &[Root],
    request: &'a Request,
) -> Result<Checked<'a>, Error> {
    let existing = library.find(&request.name);
    let frontmatter = existing.map(|skill| skill.frontmatter());
    let text = render(request, frontmatter.as_ref());
    check(&request.name, &text)?;
    let files = checked_files(&request.files)?;
    check_size(&request.name, &text, &files)?;
    let folder = match existing.map(|skill| &skill.location) {
        Some(Location::Disk(folder)) if in_read_only_root(roots, folder) => {
            return Err(invalid(
                &request.name,
                "comes from a git skill source, whose copy is read-only (`synapse-mcp skills update` replaces it); save it under another name",
            ));
        }
        Some(Location::Disk(folder)) => folder.clone(),
        Some(Location::Bundled(_)) => {
            return Err(invalid(
                &request.name,
                "is a bundled skill, which is read-only; save it under another name",
            ));
        }
        None => {
            let folder = target_root(roots, request.root.as_deref())?.join(&request.name);
            if std::fs::symlink_metadata(&folder).is_ok_and(|metadata| !metadata.is_dir()) {
                return Err(invalid(
                    &request.name,
                    "already names a file or a symlink in the skills folder; choose another name",
                ));
            }
            folder
        }
    };
    Ok(Checked {
        folder,
        text,
        files,
        file_name: existing.map(|skill| skill.file_name),
    })
}

/// Whether a skill folder lies in a root nothing may write to (a git copy).
fn in_read_only_root(roots: &[Root], folder: &Path) -> bool {
    roots
        .iter()
        .any(|root| !root.kind.writable() && folder.starts_with(&root.path))
}

/// `name` and `description` first, then every other key the skill already had (as JSON, which
/// YAML reads as flow style), then the body.
fn render(request: &Request, frontmatter: Option<&super::frontmatter::Frontmatter>) -> String {
    let quoted = |value: &Value| value.to_string();
    let mut text = format!(
        "---\nname: {}\ndescription: {}\n",
        request.name,
        quoted(&Value::String(request.description.clone()))
    );
    for (key, value) in frontmatter.into_iter().flatten() {
        if key != "name" && key != "description" {
            writeln!(text, "{key}: {}", quoted(value)).ok();
        }
    }
    text.push_str("---\n\n");
    text.push_str(request.body.trim());
    text.push('\n');
    text
}

fn invalid(name: &str, problem: &str) -> Error {
    Error::Invalid {
        name: name.to_owned(),
        problems: problem.to_owned(),
    }
}

/// The rendered SKILL.md must pass the strict check (warnings such as unknown keys are fine).
fn check(name: &str, text: &str) -> Result<(), Error> {
    let mut diagnostics = Vec::new();
    let file = Path::new(name).join(SKILL_MD);
    let parsed = catalog::parse(text, name, &file, &mut diagnostics);
    let problems: Vec<String> = diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.level >= Level::Error)
        .map(|diagnostic| match &diagnostic.field {
            Some(field) => format!("`{field}` {} [{}]", diagnostic.message, diagnostic.rule),
            None => format!("{} [{}]", diagnostic.message, diagnostic.rule),
        })
        .collect();
    if parsed.is_none() || !problems.is_empty() {
        return Err(invalid(name, &problems.join("; ")));
    }
    Ok(())
}

/// A save is bounded: so many files, so many bytes each and in all.
fn check_size(name: &str, text: &str, files: &[(String, &str)]) -> Result<(), Error> {
    if files.len() > MAX_FILES {
        return Err(invalid(
            name,
            &format!(
                "a save writes at most {MAX_FILES} files besides SKILL.md, and this one has {}; save the rest in further calls",
                files.len()
            ),
        ));
    }
    if let Some((path, contents)) = files
        .iter()
        .find(|(_, contents)| contents.len() > MAX_FILE_BYTES)
    {
        return Err(invalid(
            name,
            &format!(
                "file `{path}` has {} bytes, more than the {MAX_FILE_BYTES} a saved file may have",
                contents.len()
            ),
        ));
    }
    let total = text.len()
        + files
            .iter()
            .map(|(_, contents)| contents.len())
            .sum::<usize>();
    if total > MAX_SAVE_BYTES {
        return Err(invalid(
            name,
            &format!(
                "the save has {total} bytes, more than the {MAX_SAVE_BYTES} one save may write"
            ),
        ));
    }
    Ok(())
}

fn checked_files(files: &BTreeMap<String, String>) -> Result<Vec<(String, &str)>, Error> {
    let mut checked = Vec::new();
    for (path, contents) in files {
        let relative = clean_relative(path).map_err(|problem| Error::BadPath {
            path: path.clone(),
            problem,
        })?;
        if relative.eq_ignore_ascii_case(SKILL_MD) || relative.starts_with('.') {
            return Err(Error::BadPath {
                path: path.clone(),
                problem: super::files::PathProblem::Reserved,
            });
        }
        checked.push((relative, contents.as_str()));
    }
    Ok(checked)
}

/// The root a new skill goes to: the one asked for, or the first writable root on disk. The
/// home skills folder (`~/.synapse/skills`) is made when it is the one chosen.
fn target_root(roots: &[Root], asked: Option<&Path>) -> Result<PathBuf, Error> {
    let on_disk: Vec<&Root> = roots.iter().filter(|root| root.kind.writable()).collect();
    let known = || {
        let paths: Vec<String> = on_disk
            .iter()
            .map(|root| root.path.display().to_string())
            .collect();
        if paths.is_empty() {
            "none (there is no home folder); start the server with --skills DIR".to_owned()
        } else {
            paths.join(", ")
        }
    };
    if let Some(asked) = asked {
        // Folders that do not exist yet (the home one) are compared as written.
        let same = |root: &&&Root| match (
            std::fs::canonicalize(&root.path),
            std::fs::canonicalize(asked),
        ) {
            (Ok(root), Ok(asked)) => root == asked,
            _ => root.path == asked,
        };
        return on_disk
            .iter()
            .find(same)
            .filter(|root| made_if_home(root))
            .map(|root| root.path.clone())
            .ok_or_else(|| Error::UnknownRoot {
                root: asked.display().to_string(),
                known: known(),
            });
    }
    on_disk
        .iter()
        .find(|root| made_if_home(root) && writable(&root.path))
        .map(|root| root.path.clone())
        .ok_or_else(|| Error::UnknownRoot {
            root: "(a writable skills folder)".to_owned(),
            known: known(),
        })
}

/// Makes the home skills folder when it is missing; `false` when it cannot be made. Every
/// other root is left as it is.
fn made_if_home(root: &Root) -> bool {
    if root.kind != RootKind::Home || root.path.is_dir() {
        return true;
    }
    match std::fs::create_dir_all(&root.path) {
        Ok(()) => {
            tracing::info!(folder = %root.path.display(), "made the home skills folder");
            true
        }
        Err(error) => {
            tracing::warn!(folder = %root.path.display(), %error, "cannot make the home skills folder");
            false
        }
    }
}

fn writable(folder: &Path) -> bool {
    let probe = folder.join(format!(".synapse-write-test-{}", std::process::id()));
    let created = std::fs::write(&probe, b"").is_ok();
    if created && let Err(error) = std::fs::remove_file(&probe) {
        tracing::debug!(%error, "cannot remove the write probe");
    }
    created
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// Builds the new folder beside the old one, then swaps it in.
fn write(
    folder: &Path,
    text: &str,
    files: &[(String, &str)],
    old_file: Option<&str>,
) -> Result<Saved, Error> {
    let parent = folder
        .parent()
        .ok_or_else(|| invalid("", "has no parent folder"))?;
    let name = folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stamp = crate::folders::nanos(SystemTime::now());
    let staging = parent.join(format!(".{name}.saving-{}-{stamp}", std::process::id()));
    let created = !folder.exists();
    let backup = stage(folder, &staging, text, files, old_file).and_then(|()| {
        if created {
            return Ok(None);
        }
        let backup = parent.join(".backups").join(format!("{name}-{stamp}"));
        let backups = parent.join(".backups");
        std::fs::create_dir_all(&backups).map_err(io(&backups))?;
        std::fs::rename(folder, &backup).map_err(io(folder))?;
        Ok(Some(backup))
    });
    let backup = backup.inspect_err(|_| discard(&staging))?;
    if let Err(source) = std::fs::rename(&staging, folder) {
        if let Some(backup) = &backup
            && let Err(error) = std::fs::rename(backup, folder)
        {
            tracing::error!(%error, backup = %backup.display(), "cannot restore the previous version");
        }
        discard(&staging);
        return Err(Error::Io {
            path: folder.to_owned(),
            source,
        });
    }
    if backup.is_some() {
        prune_backups(&parent.join(".backups"), &name);
    }
    Ok(Saved {
        folder: folder.to_owned(),
        root: None,
        created,
        backup,
    })
}

/// Removes all but the newest [`KEEP_BACKUPS`] backups of one skill (`{name}-{stamp}`).
fn prune_backups(backups: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(backups) else {
        return;
    };
    let mut found: Vec<(u128, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let file_name = entry.file_name();
            let stamp = file_name
                .to_str()?
                .strip_prefix(name)?
                .strip_prefix('-')?
                .parse::<u128>()
                .ok()?;
            Some((stamp, entry.path()))
        })
        .collect();
    found.sort_unstable_by_key(|(stamp, _)| std::cmp::Reverse(*stamp));
    for (_, old) in found.into_iter().skip(KEEP_BACKUPS) {
        if let Err(error) = std::fs::remove_dir_all(&old) {
            tracing::warn!(%error, backup = %old.display(), "cannot remove an old backup");
        }
    }
}

/// The new folder, complete, beside the old one: a copy of the old folder (without a
/// lower-case `skill.md`, which `SKILL.md` replaces), the new SKILL.md and the given files.
fn stage(
    folder: &Path,
    staging: &Path,
    text: &str,
    files: &[(String, &str)],
    old_file: Option<&str>,
) -> Result<(), Error> {
    if folder.exists() {
        copy_tree(folder, staging).map_err(io(folder))?;
        if let Some(old) = old_file.filter(|old| *old != SKILL_MD) {
            std::fs::remove_file(staging.join(old)).map_err(io(staging))?;
        }
    }
    std::fs::create_dir_all(staging).map_err(io(staging))?;
    replace_file(&staging.join(SKILL_MD), text)?;
    for (relative, contents) in files {
        let path = real_destination(staging, relative)?;
        replace_file(&path, contents)?;
    }
    Ok(())
}

/// Where a file goes inside the staged folder: every folder on the way is created as a real
/// folder, and one that already exists as a symlink is refused, so no write leaves the skill.
fn real_destination(staging: &Path, relative: &str) -> Result<PathBuf, Error> {
    let mut path = staging.to_owned();
    let mut parts = relative.split('/').peekable();
    while let Some(part) = parts.next() {
        path.push(part);
        if parts.peek().is_none() {
            break;
        }
        match std::fs::symlink_metadata(&path) {
            Ok(metadata) if metadata.is_symlink() => {
                return Err(Error::BadPath {
                    path: relative.to_owned(),
                    problem: super::files::PathProblem::ThroughLink,
                });
            }
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => {
                return Err(Error::BadPath {
                    path: relative.to_owned(),
                    problem: super::files::PathProblem::ThroughLink,
                });
            }
            Err(_) => std::fs::create_dir(&path).map_err(io(&path))?,
        }
    }
    Ok(path)
}

/// Writes a file; a symlink (or anything else) at its place is removed first, so the link
/// itself is replaced and its target never written.
fn replace_file(path: &Path, contents: &str) -> Result<(), Error> {
    if let Ok(metadata) = std::fs::symlink_metadata(path)
        && !metadata.is_dir()
    {
        std::fs::remove_file(path).map_err(io(path))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io(path))?;
    std::io::Write::write_all(&mut file, contents.as_bytes()).map_err(io(path))
}

/// Removes a staging folder that will not be used.
fn discard(staging: &Path) {
    if staging.exists()
        && let Err(error) = std::fs::remove_dir_all(staging)
    {
        tracing::warn!(%error, staging = %staging.display(), "cannot remove a staging folder");
    }
}

/// Copies a folder; symlinks are kept as symlinks (they are checked when read, never followed
/// here).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        } else {
            // A FIFO would block the copy forever; sockets and devices are no skill content.
            tracing::warn!(path = %entry.path().display(), "a FIFO, socket or device is not carried into the saved skill");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn request(name: &str, description: &str) -> Request {
        Request {
            name: name.to_owned(),
            description: description.to_owned(),
            body: "# Steps\n\n1. Do it.".to_owned(),
            ..Request::default()
        }
    }

    #[test]
    fn rendering_quotes_the_description_and_keeps_other_keys() {
        let mut frontmatter = super::super::frontmatter::Frontmatter::new();
        frontmatter.insert("license".into(), Value::from("MIT"));
        frontmatter.insert("metadata".into(), serde_json::json!({"owner": "x"}));
        let text = render(&request("a", "Use when: \"quoted\""), Some(&frontmatter));
        assert_eq!(
            text,
            "---\nname: a\ndescription: \"Use when: \\\"quoted\\\"\"\nlicense: \"MIT\"\nmetadata: {\"owner\":\"x\"}\n---\n\n# Steps\n\n1. Do it.\n"
        );
        check("a", &text).unwrap();
    }

    #[test]
    fn strict_violations_are_refused_before_writing() {
        let error = check("Bad Name", &render(&request("Bad Name", "d"), None)).unwrap_err();
        assert!(error.to_string().contains("name-format"), "{error}");
        let long = "d".repeat(1025);
        let error = check("a", &render(&request("a", &long), None)).unwrap_err();
        assert!(error.to_string().contains("description-length"), "{error}");
        let empty = check("a", &render(&request("a", " "), None)).unwrap_err();
        assert!(
            empty.to_string().contains("description-required"),
            "{empty}"
        );
    }

    #[test]
    fn file_paths_must_stay_inside_and_not_replace_skill_md() {
        for bad in ["../x", "/etc/x", "SKILL.md", "skill.md", ".hidden"] {
            let files = BTreeMap::from([(bad.to_owned(), String::new())]);
            assert!(checked_files(&files).is_err(), "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_in_the_staged_folder_are_replaced_or_refused_never_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("target.txt"), "original").unwrap();
        let staging = tempfile::tempdir().unwrap();
        let staging = staging.path();
        std::os::unix::fs::symlink(outside.path().join("target.txt"), staging.join("notes.md"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), staging.join("docs")).unwrap();
        let notes = real_destination(staging, "notes.md").unwrap();
        replace_file(&notes, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "new");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("target.txt")).unwrap(),
            "original"
        );
        assert!(matches!(
            real_destination(staging, "docs/evil.txt"),
            Err(Error::BadPath { .. })
        ));
        let deep = real_destination(staging, "a/b/c.md").unwrap();
        assert!(staging.join("a/b").is_dir() && deep.ends_with("a/b/c.md"));
    }

    #[test]
    fn only_the_newest_backups_of_the_skill_are_kept() {
        let backups = tempfile::tempdir().unwrap();
        for stamp in 1..=8 {
            std::fs::create_dir(backups.path().join(format!("notes-{stamp}"))).unwrap();
        }
        std::fs::create_dir(backups.path().join("notes-extra-1")).unwrap();
        std::fs::create_dir(backups.path().join("other-1")).unwrap();
        prune_backups(backups.path(), "notes");
        let mut kept: Vec<String> = std::fs::read_dir(backups.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        kept.sort();
        assert_eq!(
            kept,
            [
                "notes-4",
                "notes-5",
                "notes-6",
                "notes-7",
                "notes-8",
                "notes-extra-1",
                "other-1"
            ]
        );
    }

    #[test]
    fn a_skill_from_a_git_copy_is_never_overwritten() {
        let directory = tempfile::tempdir().unwrap();
        let copy = directory.path().join("tree");
        std::fs::create_dir_all(copy.join("from-git")).unwrap();
        let original =
            "---\nname: from-git\ndescription: From a repository. Use in tests.\n---\nOriginal.\n";
        std::fs::write(copy.join("from-git/SKILL.md"), original).unwrap();
        let writable = directory.path().join("mine");
        std::fs::create_dir_all(&writable).unwrap();
        let roots = [
            Root {
                kind: RootKind::Git,
                path: copy.clone(),
            },
            Root {
                kind: RootKind::Configured,
                path: writable.clone(),
            },
        ];
        let library = Library::load(&roots, None);
        let error = save(
            &library,
            &roots,
            &request("from-git", "Changed. Use in tests."),
        )
        .unwrap_err();
        assert!(error.to_string().contains("read-only"), "{error}");
        let kept = std::fs::read_to_string(copy.join("from-git/SKILL.md")).unwrap();
        assert_eq!(kept, original);
        let saved = save(
            &library,
            &roots,
            &request("new-skill", "New. Use in tests."),
        )
        .unwrap();
        assert_eq!(saved.root, Some(writable));
    }
}
