//! The Agent Skills library (`docs/skills.md`): folders holding a `SKILL.md`, discovered in the roots,
//! checked against the specification, searched, and loaded progressively — the catalog
//! (name + description) at start-up, a body on first load, other files on demand.
//!
//! - [`discover`]: the roots and the bounded walk; the bundled skills compiled in.
//! - [`frontmatter`]: the splitter and the YAML parse, with the lenient recovery.
//! - [`validate`]: typed fields, the spec's rules, diagnostics.
//! - [`catalog`]: the start-up scan, index reuse, name collisions.
//! - [`index_file`]: the skills index of a root.
//! - [`search`]: BM25F with stemming and typo tolerance.
//! - [`sections`]: the sections of a long body or reference file, its opening and table of
//!   contents.
//! - [`rerank`]: the question that lets a model rerank search candidates, and its answer read.
//! - [`find`]: the `SkillSearch` use-case: ranking, a model's reordering, the best sections.
//! - [`served`]: what `SkillLoad` and `SkillReadFile` serve, written out for the model.
//! - [`files`]: skill files on disk or bundled, and the path checks.
//! - [`sources`]: skills from git repositories, pinned to a ref and copied into the data folder.
//! - [`scripts`]: running a skill's script in its folder, bounded and with a scrubbed
//!   environment, and the digest set an approval to run it is bound to.
//!
//! Nothing here knows MCP.

pub mod catalog;
pub mod check;
pub mod discover;
pub mod files;
pub mod find;
pub mod frontmatter;
pub mod index_file;
pub mod rerank;
pub mod save;
pub mod scripts;
pub mod search;
pub mod sections;
pub mod served;
pub mod shelf;
pub mod sources;
pub mod validate;

pub use scripts::{SCRIPTS_FOLDER, ScriptFile, parse_script_id, script_id};

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use self::discover::Root;
use self::files::{FileError, Location, PathProblem};
use self::frontmatter::Frontmatter;
use self::sections::Outline;
use self::validate::{Diagnostic, Fields};

/// The name the skill file is always served under (SEP-2640 URIs end in it).
pub const SKILL_MD: &str = "SKILL.md";

/// What went wrong with a request for a skill or one of its files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown skill `{name}`{suggestion}")]
    UnknownSkill { name: String, suggestion: String },
    #[error(
        "path `{path}` is refused: {problem}; give a path relative to the skill folder, such as `references/REFERENCE.md`"
    )]
    BadPath { path: String, problem: PathProblem },
    #[error("skill `{skill}` has no file `{path}`; its files are: {known}")]
    UnknownFile {
        skill: String,
        path: String,
        known: String,
    },
    #[error("`{path}` of skill `{skill}` cannot be read: {problem}")]
    Unreadable {
        skill: String,
        path: String,
        problem: String,
    },
    #[error("skill `{skill}` has no folder `{path}`")]
    UnknownFolder { skill: String, path: String },
    #[error("`{path}` of skill `{skill}` has no section `{section}`; its sections are: {known}")]
    UnknownSection {
        skill: String,
        path: String,
        section: String,
        known: String,
    },
    #[error(
        "`{path}` of skill `{skill}` is not markdown, so it has no sections; read it without `section`"
    )]
    NotMarkdown { skill: String, path: String },
    #[error("skill `{name}` is not valid: {problems}")]
    Invalid { name: String, problems: String },
    #[error("cannot save into `{root}`: the writable skills folders are {known}")]
    UnknownRoot { root: String, known: String },
    #[error("cannot read or write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} no longer has valid frontmatter: {message}")]
    Changed { path: String, message: String },
}

/// One skill of the catalog. The body and the file digests are read once, when first needed.
#[derive(Debug)]
pub struct Skill {
    /// The name the skill is served under, unique in the library: the frontmatter's `name`,
    /// unless an earlier skill holds that name (see `declared_name`).
    pub name: String,
    /// The frontmatter's `name` when another skill was found first with it, so that this one
    /// is served under a name of its own (`catalog` picks it) instead of being dropped.
    pub declared_name: Option<Box<str>>,
    pub description: String,
    /// The typed frontmatter fields, except `name` and `description`, which are the two above.
    pub fields: Fields,
    /// The frontmatter exactly as written (SEP-2640 `skills/list` serves it verbatim), kept as
    /// compact JSON text: a tree of JSON values per skill costs several times more memory, and
    /// only `skills/list`, `skills/get` and `SkillSave` read it. See [`Skill::frontmatter`].
    frontmatter: Box<str>,
    pub location: Location,
    /// `SKILL.md` or `skill.md`.
    pub file_name: &'static str,
    pub size: u64,
    pub modified: Option<SystemTime>,
    body: OnceLock<Arc<str>>,
    /// The body's sections, parsed on first need (a long body, or a section asked for).
    outline: OnceLock<Arc<Outline>>,
    manifest: OnceLock<Arc<[FileDigest]>>,
    /// The files `SkillLoad` lists, walked once (a change on disk reloads the library, and with
    /// it this list; approvals and digests always read the folder afresh).
    listed: OnceLock<Arc<[String]>>,
}

/// One file of a skill with its SEP-2640 digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigest {
    /// Relative to the skill folder, `/`-separated.
    pub path: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    pub size: u64,
}

impl Skill {
    pub fn new(
        name: String,
        mut fields: Fields,
        frontmatter: &Frontmatter,
        location: Location,
        file_name: &'static str,
    ) -> Self {
        let frontmatter = serde_json::to_string(frontmatter).unwrap_or_else(|error| {
            tracing::error!(%error, skill = %name, "cannot keep the frontmatter as JSON");
            "{}".to_owned()
        });
        fields.name = None;
        Self {
            description: fields.description.take().unwrap_or_default(),
            name,
            declared_name: None,
            fields,
            frontmatter: frontmatter.into_boxed_str(),
            location,
            file_name,
            size: 0,
            modified: None,
            body: OnceLock::new(),
            outline: OnceLock::new(),
            manifest: OnceLock::new(),
            listed: OnceLock::new(),
        }
    }

    /// The frontmatter exactly as written, key order kept.
    pub fn frontmatter(&self) -> Frontmatter {
        serde_json::from_str(&self.frontmatter).unwrap_or_else(|error| {
            tracing::error!(%error, skill = %self.name, "the kept frontmatter does not parse");
            Frontmatter::new()
        })
    }

    /// The markdown after the frontmatter, read on first use and kept.
    pub fn body(&self) -> Result<Arc<str>, Error> {
        if let Some(body) = self.body.get() {
            return Ok(body.clone());
        }
        let body: Arc<str> = Arc::from(self.read_body()?);
        Ok(self.body.get_or_init(|| body).clone())
    }

    /// The sections of the body, parsed once.
    pub fn outline(&self) -> Result<Arc<Outline>, Error> {
        if let Some(outline) = self.outline.get() {
            return Ok(outline.clone());
        }
        let outline = Arc::new(Outline::parse(&self.body()?));
        Ok(self.outline.get_or_init(|| outline).clone())
    }

    /// The name the frontmatter declares (the served name unless a collision renamed it).
    pub fn frontmatter_name(&self) -> &str {
        self.declared_name.as_deref().unwrap_or(&self.name)
    }

    /// Where the skill is in the `skill://` namespace: its name, or, for a skill served under
    /// another name than its own, that name then its own (`k-dense-ai-pdf/pdf`), so that the
    /// last segment is always the frontmatter's `name`.
    pub fn skill_path(&self) -> String {
        match &self.declared_name {
            Some(declared) => format!("{}/{declared}", self.name),
            None => self.name.clone(),
        }
    }

    /// A whole text file of the skill, by a client-given relative path.
    pub fn read_text(&self, path: &str) -> Result<String, Error> {
        String::from_utf8(self.read_file(path)?).map_err(|_| Error::Unreadable {
            skill: self.name.clone(),
            path: path.to_owned(),
            problem: FileError::Binary.to_string(),
        })
    }

    /// The error for a section that the file at `path` does not have: its ids, or, when it
    /// has many, the closest few.
    pub fn unknown_section(&self, path: &str, unknown: sections::UnknownSection) -> Error {
        const LISTED: usize = 12;
        let mut known = unknown.known;
        let count = known.len();
        if count > LISTED {
            known.sort_by_key(|id| strsim::levenshtein(id, &unknown.section));
            known.truncate(5);
        }
        let mut listed: Vec<String> = known.iter().map(|id| format!("`{id}`")).collect();
        if count > LISTED {
            listed.push(format!(
                "… ({count} in all: read it without `section` for its table of sections)"
            ));
        } else if count == 0 {
            listed.push("none (it has no headings)".to_owned());
        }
        Error::UnknownSection {
            skill: self.name.clone(),
            path: path.to_owned(),
            section: unknown.section,
            known: listed.join(", "),
        }
    }

    /// The error for `section` asked of a file that is not markdown.
    pub fn not_markdown(&self, path: &str) -> Error {
        Error::NotMarkdown {
            skill: self.name.clone(),
            path: path.to_owned(),
        }
    }

    /// The body read afresh, without keeping it (the search index reads every body once).
    pub fn read_body(&self) -> Result<String, Error> {
        let bytes = self
            .read(self.file_name)
            .map_err(|error| self.file_error(self.file_name, error))?;
        let text = String::from_utf8_lossy(&bytes);
        let text = frontmatter::normalise(&text);
        let split = frontmatter::split(&text).map_err(|error| Error::Changed {
            path: self.file_name.to_owned(),
            message: error.to_string(),
        })?;
        Ok(split.body.to_owned())
    }

    /// A file of the skill by a client-given relative path.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, Error> {
        let relative = files::clean_relative(path).map_err(|problem| Error::BadPath {
            path: path.to_owned(),
            problem,
        })?;
        self.read(&relative).map_err(|error| match error {
            FileError::Missing => Error::UnknownFile {
                skill: self.name.clone(),
                path: path.to_owned(),
                known: self.files().join(", "),
            },
            other => self.file_error(path, other),
        })
    }

    /// Reads a cleaned path; `SKILL.md` always names the skill file, even a `skill.md`.
    fn read(&self, relative: &str) -> Result<Vec<u8>, FileError> {
        if relative == SKILL_MD {
            self.location.read(self.file_name)
        } else {
            self.location.read(relative)
        }
    }

    /// A window of a text file of the skill, in characters, by a client-given relative path;
    /// only the part up to the window's end is read.
    pub fn read_window(
        &self,
        path: &str,
        start: usize,
        length: usize,
    ) -> Result<files::Window, Error> {
        let relative = files::clean_relative(path).map_err(|problem| Error::BadPath {
            path: path.to_owned(),
            problem,
        })?;
        let relative = if relative == SKILL_MD {
            self.file_name.to_owned()
        } else {
            relative
        };
        self.location
            .read_window(&relative, start, length)
            .map_err(|error| match error {
                FileError::Missing => Error::UnknownFile {
                    skill: self.name.clone(),
                    path: path.to_owned(),
                    known: self.files().join(", "),
                },
                other => self.file_error(path, other),
            })
    }

    fn file_error(&self, path: &str, error: FileError) -> Error {
        match error {
            problem @ (FileError::NotRegular | FileError::TooLarge { .. } | FileError::Binary) => {
                Error::Unreadable {
                    skill: self.name.clone(),
                    path: path.to_owned(),
                    problem: problem.to_string(),
                }
            }
            FileError::Refused(problem) => Error::BadPath {
                path: path.to_owned(),
                problem,
            },
            FileError::Io { path, source } => Error::Io { path, source },
            FileError::Missing => Error::UnknownFolder {
                skill: self.name.clone(),
                path: path.to_owned(),
            },
        }
    }

    /// Every file of the skill, relative and sorted; the skill file is always `SKILL.md`.
    pub fn files(&self) -> Vec<String> {
        let mut files: Vec<String> = self
            .location
            .files()
            .into_iter()
            .map(|file| {
                if file == self.file_name {
                    SKILL_MD.to_owned()
                } else {
                    file
                }
            })
            .collect();
        files.sort();
        files
    }

    /// The other files (what `<skill_resources>` lists).
    pub fn resources(&self) -> Arc<[String]> {
        let listed = self.listed.get_or_init(|| {
            self.files()
                .into_iter()
                .filter(|file| file != SKILL_MD)
                .collect()
        });
        Arc::clone(listed)
    }

    /// The direct children of a folder of the skill (`""`: the skill folder).
    pub fn children(&self, path: &str) -> Result<Vec<files::Child>, Error> {
        let relative = if path.trim_matches('/').is_empty() {
            String::new()
        } else {
            files::clean_relative(path).map_err(|problem| Error::BadPath {
                path: path.to_owned(),
                problem,
            })?
        };
        self.location
            .children(&relative)
            .map_err(|error| self.file_error(path, error))
    }

    /// Every file with its digest, computed once.
    pub fn manifest(&self) -> Result<Arc<[FileDigest]>, Error> {
        if let Some(manifest) = self.manifest.get() {
            return Ok(manifest.clone());
        }
        let mut digests = Vec::new();
        for path in self.files() {
            let relative = if path == SKILL_MD {
                self.file_name
            } else {
                &path
            };
            // Hashed in blocks; a file too large to be read whole is not served, so it is
            // not listed either (and never read here).
            let (digest, size) = match self.location.digest(relative, Some(files::MAX_READ_BYTES)) {
                Ok(found) => found,
                Err(error @ (FileError::TooLarge { .. } | FileError::NotRegular)) => {
                    tracing::warn!(skill = %self.name, %path, %error, "a file of the skill is left out of its listing");
                    continue;
                }
                Err(error) => return Err(self.file_error(&path, error)),
            };
            digests.push(FileDigest { path, digest, size });
        }
        let manifest: Arc<[FileDigest]> = digests.into();
        Ok(self.manifest.get_or_init(|| manifest).clone())
    }
}

/// A search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub skill: Arc<Skill>,
    pub score: f32,
}

/// Libraries larger than this answer searches from names and descriptions until the body index,
/// built in the background by [`Library::warm_up`], is ready; smaller ones build it on the spot.
pub const METADATA_FIRST_ABOVE: usize = 1_000;

/// The catalog, its diagnostics and the search indexes (the full one built on the first search
/// or by [`Library::warm_up`] in the background; a metadata-only one meanwhile, for large
/// libraries).
#[derive(Debug)]
pub struct Library {
    skills: Vec<Arc<Skill>>,
    /// Positions in `skills`, ordered by name (binary search; no second copy of the names).
    by_name: Vec<u32>,
    diagnostics: Vec<Diagnostic>,
    index: OnceLock<search::Index>,
    /// Dropped once the full index is ready, which answers every search from then on.
    metadata_index: Mutex<Option<Arc<search::Index>>>,
    /// The git sources (as written) whose first fetch was under way when this library was
    /// installed: their skills are not in it yet.
    loading: Vec<String>,
}

impl PartialEq for Skill {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.location.display() == other.location.display()
    }
}

impl Library {
    /// Scans the roots; with `indexes`, reusing and refreshing their indexes.
    pub fn load(roots: &[Root], indexes: Option<&crate::folders::Indexes>) -> Self {
        let catalog = catalog::build(roots, indexes);
        for diagnostic in &catalog.diagnostics {
            if diagnostic.level == validate::Level::Fatal || diagnostic.rule == "root-missing" {
                tracing::warn!("{diagnostic}");
            }
        }
        Self::from_catalog(catalog)
    }

    pub fn from_catalog(catalog: catalog::Catalog) -> Self {
        // A fresh vector: collecting in place would keep the catalog's whole buffer of `Skill`s
        // (hundreds of bytes each) alive to hold eight-byte pointers.
        let mut skills = Vec::with_capacity(catalog.skills.len());
        skills.extend(catalog.skills.into_iter().map(Arc::new));
        let mut by_name: Vec<u32> = (0..u32::try_from(skills.len()).unwrap_or(u32::MAX)).collect();
        by_name.sort_unstable_by(|left, right| {
            skills[*left as usize]
                .name
                .cmp(&skills[*right as usize].name)
        });
        let mut diagnostics = catalog.diagnostics;
        diagnostics.shrink_to_fit();
        Self {
            skills,
            by_name,
            diagnostics,
            index: OnceLock::new(),
            metadata_index: Mutex::new(None),
            loading: Vec::new(),
        }
    }

    /// The git sources whose first fetch was under way when this library was installed.
    pub fn loading(&self) -> &[String] {
        &self.loading
    }

    /// The skills in root order, then path order.
    pub fn skills(&self) -> &[Arc<Skill>] {
        &self.skills
    }

    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    pub fn find(&self, name: &str) -> Option<&Arc<Skill>> {
        self.by_name
            .binary_search_by(|&position| self.skills[position as usize].name.as_str().cmp(name))
            .ok()
            .map(|found| &self.skills[self.by_name[found] as usize])
    }

    /// A skill by name, or an error that suggests the closest names.
    pub fn get(&self, name: &str) -> Result<&Arc<Skill>, Error> {
        self.find(name).ok_or_else(|| Error::UnknownSkill {
            name: name.to_owned(),
            suggestion: self.suggestion(name),
        })
    }

    fn suggestion(&self, name: &str) -> String {
        let mut near: Vec<(usize, &str)> = self
            .skills
            .iter()
            .map(|skill| (strsim::levenshtein(&skill.name, name), skill.name.as_str()))
            .collect();
        near.sort_unstable();
        let closest: Vec<String> = near
            .iter()
            .take(3)
            .map(|(_, name)| format!("`{name}`"))
            .collect();
        if closest.is_empty() {
            "; no skills are installed".to_owned()
        } else {
            format!(
                "; the closest names are {} (SkillSearch finds skills by topic)",
                closest.join(", ")
            )
        }
    }

    /// Ranked skills for a query; with `tags`, only skills carrying every tag.
    pub fn search(&self, query: &str, tags: &[String], limit: usize) -> Vec<Hit> {
        let keep = |position: usize| {
            let carried = &self.skills[position].fields.tags;
            tags.iter()
                .all(|tag| carried.iter().any(|has| has.eq_ignore_ascii_case(tag)))
        };
        let metadata = match self.index.get() {
            None if self.skills.len() > METADATA_FIRST_ABOVE => self.metadata_index(),
            _ => None,
        };
        let found = match metadata {
            Some(metadata) => metadata.search(query, keep, limit),
            None => self.index().search(query, keep, limit),
        };
        found
            .into_iter()
            .map(|(position, score)| Hit {
                skill: self.skills[position].clone(),
                score,
            })
            .collect()
    }

    /// Builds the search index now (call it on a background thread after start-up).
    pub fn warm_up(&self) {
        // Large libraries answer from the metadata index until the full one is ready: build it
        // here first rather than in the first search, so that both builds reuse one thread's
        // memory instead of leaving freed memory behind in two.
        if self.skills.len() > METADATA_FIRST_ABOVE {
            self.metadata_index();
        }
        self.index();
        self.metadata_index
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// Whether searches already cover the skills' bodies.
    pub fn bodies_indexed(&self) -> bool {
        self.index.get().is_some()
    }

    /// Names, descriptions and tags only: no SKILL.md body is read, so it is ready at once.
    /// `None` once the full index is ready. Checked under the lock that [`Library::warm_up`]
    /// takes after the full index is set, so a search racing it never builds this again.
    fn metadata_index(&self) -> Option<Arc<search::Index>> {
        let mut metadata = self
            .metadata_index
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.index.get().is_some() {
            return None;
        }
        let index = metadata.get_or_insert_with(|| {
            Arc::new(search::Index::build(self.skills.iter().map(|skill| {
                search::Document {
                    name: skill.name.replace('-', " "),
                    description: format!("{} {}", skill.description, skill.fields.tags.join(" ")),
                    headings: String::new(),
                    body: String::new(),
                }
            })))
        });
        Some(Arc::clone(index))
    }

    fn index(&self) -> &search::Index {
        self.index.get_or_init(|| {
            search::Index::build(self.skills.iter().map(|skill| {
                let body = skill.read_body().unwrap_or_default();
                search::Document {
                    name: skill.name.replace('-', " "),
                    description: format!("{} {}", skill.description, skill.fields.tags.join(" ")),
                    headings: search::headings(&body),
                    body,
                }
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn large_libraries_search_metadata_until_the_body_index_is_ready() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path().join("skills");
        for number in 0..=METADATA_FIRST_ABOVE {
            let folder = root.join(format!("skill-{number}"));
            std::fs::create_dir_all(&folder).unwrap();
            let body = if number == 7 {
                "Explains the zanzibar protocol."
            } else {
                "Nothing special."
            };
            let text = format!(
                "---\nname: skill-{number}\ndescription: Skill number {number} about widgets.\n---\n# Usage\n{body}\n"
            );
            std::fs::write(folder.join("SKILL.md"), text).unwrap();
        }
        let root = Root {
            kind: discover::RootKind::Configured,
            path: root,
        };
        let roots = discover::roots(&[root], false, None, directory.path());
        let library = Library::load(&roots, None);
        assert_eq!(library.skills().len(), METADATA_FIRST_ABOVE + 1);

        assert!(
            library.search("zanzibar", &[], 5).is_empty(),
            "bodies are not indexed yet"
        );
        assert!(
            !library.search("widgets", &[], 5).is_empty(),
            "metadata answers at once"
        );
        assert!(!library.bodies_indexed());

        library.warm_up();
        let hits = library.search("zanzibar", &[], 5);
        assert_eq!(
            hits.first().map(|hit| hit.skill.name.as_str()),
            Some("skill-7")
        );
    }
}
