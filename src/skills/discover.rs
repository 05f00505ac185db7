//! Where skills are found: the roots in priority order, and the bounded walk of one root.
//!
//! A skill is a folder holding `SKILL.md` (or `skill.md`) at most three levels below a root.
//! `.git`, `node_modules` and hidden folders are skipped, the walk never descends into a skill,
//! and a symlink that leaves the root is refused and reported.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};

use super::validate::{Diagnostic, Level};
use crate::folders::skipped_folder;

/// The `skills/` folder of this repository, compiled into the binary.
pub static BUNDLED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/skills");

/// The user's own skills folder, below the home folder.
pub const HOME_SKILLS: &str = ".synapse/skills";

/// The deepest level below a root at which a skill folder is found.
pub const MAX_DEPTH: usize = 3;

/// What kind of root a folder is; bundled roots are never written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    Bundled,
    /// Named with `--skills` or in the config file.
    Configured,
    /// `~/.synapse/skills`: the user's own skills and where `SkillSave` writes by default.
    /// Always a root when there is a home folder; created by the first save.
    Home,
    /// `~/.agents/skills`, `~/.claude/skills`, when they exist.
    User,
    /// `./.agents/skills`, `./.claude/skills`, only with `--trust-project`.
    Project,
    /// The copy of a git repository at a ref (`--skills git+…`); replaced only by a fetch.
    Git,
}

impl RootKind {
    /// Whether `SkillSave` may write there: not into the bundled skills or a git copy.
    pub fn writable(self) -> bool {
        !matches!(self, Self::Bundled | Self::Git)
    }
}

/// One place skills come from. Earlier roots win name collisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub kind: RootKind,
    pub path: PathBuf,
}

/// The roots in priority order. Trusted project roots come first (a project overrides the
/// user); then the configured roots (folders and git copies), or, when none is configured, the
/// bundled skills, `~/.synapse/skills` (whether it exists yet or not) and the other user
/// folders that exist.
pub fn roots(
    configured: &[Root],
    trust_project: bool,
    home: Option<&Path>,
    cwd: &Path,
) -> Vec<Root> {
    let mut roots = Vec::new();
    if trust_project {
        for relative in [".agents/skills", ".claude/skills"] {
            let path = cwd.join(relative);
            if path.is_dir() {
                roots.push(Root {
                    kind: RootKind::Project,
                    path,
                });
            }
        }
    }
    if !configured.is_empty() {
        roots.extend_from_slice(configured);
        return roots;
    }
    roots.push(Root {
        kind: RootKind::Bundled,
        path: PathBuf::from("(bundled)"),
    });
    if let Some(home) = home {
        roots.push(Root {
            kind: RootKind::Home,
            path: home.join(HOME_SKILLS),
        });
        for relative in [".agents/skills", ".claude/skills"] {
            let path = home.join(relative);
            if path.is_dir() {
                roots.push(Root {
                    kind: RootKind::User,
                    path,
                });
            }
        }
    }
    roots
}

/// A folder that holds a SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub folder: PathBuf,
    /// `SKILL.md` or `skill.md`.
    pub file_name: &'static str,
    pub folder_name: String,
    /// Size and modification time of the skill file, from the walk's one `lstat`.
    pub size: u64,
    pub modified: std::time::SystemTime,
}

impl Candidate {
    pub fn skill_file(&self) -> PathBuf {
        self.folder.join(self.file_name)
    }
}

/// The skill folders of one root on disk, sorted by path.
pub fn walk(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> Vec<Candidate> {
    let Ok(canonical) = std::fs::canonicalize(root) else {
        let message = "the skills folder does not exist or cannot be read".to_owned();
        diagnostics.push(Diagnostic::new(
            Level::Warning,
            root,
            "root-missing",
            message,
        ));
        return Vec::new();
    };
    let mut walk = Walk {
        canonical_root: &canonical,
        visited: HashSet::from([canonical.clone()]),
        found: Vec::new(),
        diagnostics,
    };
    // Breadth first, so that a folder is entered at the least depth it can be reached at.
    let mut pending = std::collections::VecDeque::from([(root.to_owned(), canonical.clone(), 0)]);
    while let Some((folder, resolved, depth)) = pending.pop_front() {
        pending.extend(walk.visit(&folder, &resolved, depth));
    }
    let mut found = walk.found;
    found.sort_by(|left, right| left.folder.cmp(&right.folder));
    found
}

/// One walk of a root, breadth first. Every real folder is entered once, by its canonical path (known without
/// a system call for a real folder met walking down, resolved for a symlink), so links such as
/// `loop -> .` neither repeat skills nor multiply the walk.
struct Walk<'a> {
    canonical_root: &'a Path,
    visited: HashSet<PathBuf>,
    found: Vec<Candidate>,
    diagnostics: &'a mut Vec<Diagnostic>,
}

impl Walk<'_> {
    /// Takes a folder that holds a skill; otherwise returns the folders to visit next.
    fn visit(
        &mut self,
        folder: &Path,
        canonical: &Path,
        depth: usize,
    ) -> Vec<(PathBuf, PathBuf, usize)> {
        if let Some((file_name, metadata)) = skill_file(self.canonical_root, folder) {
            let folder_name = folder
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            self.found.push(Candidate {
                folder: folder.to_owned(),
                file_name,
                folder_name,
                size: metadata.len(),
                modified: metadata
                    .modified()
                    .unwrap_or(std::time::SystemTime::UNIX_EPOCH),
            });
            return Vec::new();
        }
        if depth >= MAX_DEPTH {
            return Vec::new();
        }
        self.sub_folders(folder, canonical)
            .into_iter()
            .filter(|(_, resolved)| self.visited.insert(resolved.clone()))
            .map(|(path, resolved)| (path, resolved, depth + 1))
            .collect()
    }

    /// The folders inside `folder` worth visiting, with their canonical paths: not hidden, not
    /// `node_modules`, and not a symlink that leaves the root (reported). Real folders come
    /// before links, so a skill reached both ways is found at its real place when it can be.
    fn sub_folders(&mut self, folder: &Path, canonical: &Path) -> Vec<(PathBuf, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(folder) else {
            return Vec::new();
        };
        let mut folders = Vec::new();
        let mut links = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            if skipped_folder(&name.to_string_lossy()) {
                continue;
            }
            // A real folder met while walking down from the root is inside it; only a symlink
            // needs resolving.
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => folders.push((entry.path(), canonical.join(&name))),
                Ok(kind) if kind.is_symlink() => links.push(entry.path()),
                _ => {}
            }
        }
        for path in links {
            let Ok(resolved) = std::fs::canonicalize(&path) else {
                continue;
            };
            if !resolved.is_dir() {
                continue;
            }
            if resolved.starts_with(self.canonical_root) {
                folders.push((path, resolved));
            } else {
                let message = format!(
                    "symlink to {} leaves the skills folder; refused",
                    resolved.display()
                );
                self.diagnostics.push(Diagnostic::new(
                    Level::Warning,
                    &path,
                    "symlink-leaves-root",
                    message,
                ));
            }
        }
        folders
    }
}

/// `SKILL.md` (preferred) or `skill.md`, when it is a file that stays inside the root.
/// One `lstat` for a plain file; only a symlink is resolved (and must stay inside the root).
fn skill_file(canonical_root: &Path, folder: &Path) -> Option<(&'static str, std::fs::Metadata)> {
    ["SKILL.md", "skill.md"].into_iter().find_map(|name| {
        let path = folder.join(name);
        let metadata = std::fs::symlink_metadata(&path).ok()?;
        if metadata.is_file() {
            return Some((name, metadata));
        }
        let resolved = std::fs::canonicalize(&path).ok()?;
        let target = std::fs::metadata(&resolved).ok()?;
        (metadata.is_symlink() && target.is_file() && resolved.starts_with(canonical_root))
            .then_some((name, target))
    })
}

/// The bundled skill folders (top level of `skills/`), sorted by name.
pub fn bundled() -> Vec<&'static Dir<'static>> {
    let mut folders: Vec<&'static Dir<'static>> = BUNDLED
        .dirs()
        .filter(|folder| folder.get_file(folder.path().join("SKILL.md")).is_some())
        .collect();
    folders.sort_by_key(|folder| folder.path());
    folders
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn skill(root: &Path, relative: &str) {
        let folder = root.join(relative);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("SKILL.md"), "---\n---\n").unwrap();
    }

    #[test]
    fn the_walk_is_bounded_and_skips_hidden_and_vendored_folders() {
        let root = tempfile::tempdir().unwrap();
        for relative in [
            "a",
            "group/b",
            "x/y/c",
            "x/y/z/too-deep",
            ".hidden/d",
            ".git/e",
            "node_modules/f",
            "a/inner",
        ] {
            skill(root.path(), relative);
        }
        let mut diagnostics = Vec::new();
        let names: Vec<String> = walk(root.path(), &mut diagnostics)
            .into_iter()
            .map(|candidate| candidate.folder_name)
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(diagnostics, []);
    }

    #[cfg(unix)]
    #[test]
    fn link_loops_find_each_skill_once() {
        let root = tempfile::tempdir().unwrap();
        skill(root.path(), "group/a");
        for index in 0..6 {
            std::os::unix::fs::symlink(".", root.path().join(format!("l{index}"))).unwrap();
            std::os::unix::fs::symlink("..", root.path().join(format!("group/u{index}"))).unwrap();
        }
        std::os::unix::fs::symlink("group/a", root.path().join("alias")).unwrap();
        let mut diagnostics = Vec::new();
        let folders: Vec<PathBuf> = walk(root.path(), &mut diagnostics)
            .into_iter()
            .map(|candidate| std::fs::canonicalize(candidate.folder).unwrap())
            .collect();
        let real = std::fs::canonicalize(root.path().join("group/a")).unwrap();
        assert_eq!(folders, [real], "found once, through the link or not");
        assert_eq!(diagnostics, []);
    }

    #[test]
    fn lower_case_skill_md_is_accepted() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("a")).unwrap();
        std::fs::write(root.path().join("a/skill.md"), "").unwrap();
        let found = walk(root.path(), &mut Vec::new());
        assert_eq!(found[0].file_name, "skill.md");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_leaving_the_root_is_refused_and_reported() {
        let outside = tempfile::tempdir().unwrap();
        skill(outside.path(), "evil");
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("evil"), root.path().join("evil")).unwrap();
        let mut diagnostics = Vec::new();
        assert_eq!(walk(root.path(), &mut diagnostics), []);
        assert_eq!(diagnostics[0].rule, "symlink-leaves-root");
    }

    #[test]
    fn configured_roots_replace_the_defaults() {
        let cwd = tempfile::tempdir().unwrap();
        let configured = Root {
            kind: RootKind::Configured,
            path: "/s".into(),
        };
        let roots = roots(std::slice::from_ref(&configured), false, None, cwd.path());
        assert_eq!(roots, [configured]);
        let defaults = super::roots(&[], false, None, cwd.path());
        assert_eq!(defaults[0].kind, RootKind::Bundled);
    }

    #[test]
    fn the_home_skills_folder_is_a_root_before_it_exists() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".claude/skills")).unwrap();
        let kinds: Vec<(RootKind, PathBuf)> = roots(&[], false, Some(home.path()), home.path())
            .into_iter()
            .map(|root| (root.kind, root.path))
            .collect();
        assert_eq!(
            kinds,
            [
                (RootKind::Bundled, "(bundled)".into()),
                (RootKind::Home, home.path().join(".synapse/skills")),
                (RootKind::User, home.path().join(".claude/skills")),
            ]
        );
    }

    #[test]
    fn the_bundled_skills_are_compiled_in() {
        let names: Vec<String> = bundled()
            .iter()
            .map(|folder| folder.path().display().to_string())
            .collect();
        assert!(names.contains(&"synapse-workspace".to_owned()), "{names:?}");
    }

    #[cfg(unix)]
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Random trees of folders, skills and folder links (loops included): the walk ends and
        /// finds each real skill folder at most once, and every one within the depth limit.
        #[test]
        fn any_tree_of_links_finds_each_skill_once(
            operations in proptest::collection::vec((0_usize..12, 0_u8..3), 1..30),
        ) {
            let directory = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(directory.path()).unwrap();
            let mut folders = vec![(root.clone(), 0_usize)];
            let mut skills = std::collections::BTreeSet::new();
            for (index, (parent, kind)) in operations.iter().enumerate() {
                let (parent, depth) = folders[parent % folders.len()].clone();
                let path = parent.join(format!("f{index}"));
                match kind {
                    0 => {
                        std::fs::create_dir(&path).unwrap();
                        folders.push((path, depth + 1));
                    }
                    1 => {
                        std::fs::create_dir(&path).unwrap();
                        std::fs::write(path.join("SKILL.md"), "---\n---\n").unwrap();
                        if depth < MAX_DEPTH && !skills.iter().any(|skill: &PathBuf| parent.starts_with(skill)) {
                            skills.insert(path);
                        }
                    }
                    _ => {
                        let target = &folders[(index * 5) % folders.len()].0;
                        std::os::unix::fs::symlink(target, &path).unwrap();
                    }
                }
            }
            let found: Vec<PathBuf> = walk(&root, &mut Vec::new())
                .into_iter()
                .map(|candidate| std::fs::canonicalize(candidate.folder).unwrap())
                .collect();
            let unique: std::collections::BTreeSet<PathBuf> = found.iter().cloned().collect();
            proptest::prop_assert_eq!(unique.len(), found.len(), "{:?}", found);
            proptest::prop_assert!(skills.is_subset(&unique), "{:?} not all in {:?}", skills, unique);
        }
    }
}
