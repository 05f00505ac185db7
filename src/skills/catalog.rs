//! Builds the catalog from the roots: reads only the frontmatter of each SKILL.md (or nothing,
//! when the root's index still matches the file's size and modification time), checks
//! it, and resolves name collisions: the skill found first (earlier root, then path order)
//! keeps its name, and a later one with the same name is served under a name of its own
//! (its folder's, or one qualified by the folders above it) and reported, never dropped.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::discover::{self, Candidate, Root, RootKind};
use super::files::Location;
use super::frontmatter::{self, Frontmatter};
use super::index_file::{self, Cached, Entry};
use super::validate::{self, Diagnostic, Fields, Level};
use super::{SCRIPTS_FOLDER, Skill, script_id};
use crate::folders::{self, Indexes};

/// The library name the skill roots' index files are kept under in the data folder.
const LIBRARY: &str = "skills";

/// The skills found and everything worth reporting about them.
#[derive(Debug, Default)]
pub struct Catalog {
    pub skills: Vec<Skill>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Scans the roots in order. With `indexes`, each root's index is reused and refreshed: the
/// one in the data folder, or `index.json` in `~/.synapse/skills`, the server's own root.
pub fn build(roots: &[Root], indexes: Option<&Indexes>) -> Catalog {
    let mut catalog = Catalog::default();
    let mut found: Vec<(usize, &Root, Skill)> = Vec::new();
    for (position, root) in roots.iter().enumerate() {
        let skills = match root.kind {
            RootKind::Bundled => bundled(&mut catalog.diagnostics),
            // Not a finding: the home folder is made by the first save, and a git copy by its
            // first fetch (whose failure is reported on its own).
            RootKind::Home | RootKind::Git if !root.path.is_dir() => Vec::new(),
            // A git copy holds the repository's files only, and changes only by a fetch.
            RootKind::Git => on_disk(&root.path, None, &mut catalog.diagnostics),
            RootKind::Home => {
                let index = indexes.map(|_| root.path.join(folders::INDEX_FILE));
                on_disk(&root.path, index, &mut catalog.diagnostics)
            }
            RootKind::Configured | RootKind::User | RootKind::Project => {
                let index = indexes.and_then(|indexes| {
                    folders::remove_old_index(&root.path, index_file::written_by_us);
                    indexes.file(LIBRARY, &root.path)
                });
                on_disk(&root.path, index, &mut catalog.diagnostics)
            }
        };
        found.extend(skills.into_iter().map(|skill| (position, root, skill)));
    }
    let renamed = resolve_collisions(&found, &mut catalog.diagnostics);
    catalog.skills.reserve(found.len());
    for ((_, _, mut skill), name) in found.into_iter().zip(renamed) {
        if let Some(name) = name {
            skill.declared_name = Some(std::mem::replace(&mut skill.name, name).into_boxed_str());
        }
        catalog.skills.push(skill);
    }
    catalog
}

/// The name each skill that collides is served under (`None`: its own), with a warning naming
/// both folders. An earlier root wins; within one root, a skill in a folder of its own name
/// wins over one in a folder named otherwise (the specification asks the two to match), then
/// path order decides. Every declared name is reserved before any is made up, so that the name
/// given to a colliding skill never takes the one a later skill declares.
fn resolve_collisions(
    found: &[(usize, &Root, Skill)],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Option<String>> {
    let declared: HashSet<&str> = found
        .iter()
        .map(|(_, _, skill)| skill.name.as_str())
        .collect();
    let mut order: Vec<usize> = (0..found.len()).collect();
    // Stable: the scan's order stays within each (root, folder matches) group.
    order.sort_by_key(|&position| {
        let (root, _, skill) = &found[position];
        (*root, !folder_matches(skill))
    });
    let mut served: HashMap<String, String> = HashMap::with_capacity(found.len());
    let mut renamed = vec![None; found.len()];
    for position in order {
        let (_, root, skill) = &found[position];
        let place = skill.location.display();
        let Some(first) = served.get(&skill.name) else {
            served.insert(skill.name.clone(), place);
            continue;
        };
        let free =
            |candidate: &str| !declared.contains(candidate) && !served.contains_key(candidate);
        let name = alternative_name(skill, root, free);
        let message = format!(
            "skill `{}` at {place} has the name of the one at {first}, which wins; it is served as `{name}`",
            skill.name
        );
        tracing::warn!("{message}");
        let file = Path::new(&place).join(skill.file_name);
        diagnostics.push(Diagnostic::new(
            Level::Warning,
            file,
            "name-collision",
            message,
        ));
        served.insert(name.clone(), place);
        renamed[position] = Some(name);
    }
    renamed
}

/// Whether the skill's folder has the skill's name.
fn folder_matches(skill: &Skill) -> bool {
    match &skill.location {
        Location::Disk(folder) => folder.file_name().is_some_and(|name| *name == *skill.name),
        Location::Bundled(folder) => folder
            .path()
            .file_name()
            .is_some_and(|name| *name == *skill.name),
    }
}

/// A name of its own for a skill whose declared name an earlier skill holds, the first that
/// `free` accepts of: its folder's name (when that differs); that name qualified by the folders
/// above it, nearest first, up through its root's own path (`scientific-skills-pdf`); its
/// declared name numbered (`pdf-2`, `pdf-3`, …). Each is made a valid skill name (lower case,
/// other characters as `-`); one over 64 characters is passed over.
fn alternative_name(skill: &Skill, root: &Root, free: impl Fn(&str) -> bool) -> String {
    let (folder_name, qualifiers): (String, Vec<String>) = match &skill.location {
        Location::Disk(folder) => {
            let relative = folder.strip_prefix(&root.path).unwrap_or(folder);
            // Nearest first: the folders between the root and the skill, then the root's own.
            let above = relative
                .parent()
                .into_iter()
                .flat_map(Path::components)
                .rev();
            let qualifiers = above
                .chain(root.path.components().rev())
                .filter_map(|component| match component {
                    std::path::Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                    _ => None,
                })
                .collect();
            let own = folder
                .file_name()
                .map(|name| name.to_string_lossy().into_owned());
            (own.unwrap_or_default(), qualifiers)
        }
        Location::Bundled(folder) => (
            folder.path().display().to_string(),
            vec!["bundled".to_owned()],
        ),
    };
    let own = as_name(&folder_name);
    let mut candidate = if validate::valid_name(&own) {
        own
    } else {
        skill.name.clone()
    };
    if candidate != skill.name && free(&candidate) {
        return candidate;
    }
    for qualifier in qualifiers {
        let qualifier = as_name(&qualifier);
        if qualifier.is_empty() {
            continue;
        }
        candidate = format!("{qualifier}-{candidate}");
        if validate::valid_name(&candidate) && free(&candidate) {
            return candidate;
        }
    }
    // Finitely many names are taken, so one of these is free.
    (2..=u64::from(u32::MAX))
        .map(|number| format!("{}-{number}", skill.name))
        .find(|numbered| free(numbered))
        .unwrap_or_else(|| skill.name.clone())
}

/// `text` as a skill name: ASCII letters lower-cased, digits kept, runs of anything else as
/// one `-`, none at either end.
fn as_name(text: &str) -> String {
    let mut name = String::with_capacity(text.len());
    for character in text.chars() {
        if character.is_ascii_alphanumeric() {
            name.push(character.to_ascii_lowercase());
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    name.trim_end_matches('-').to_owned()
}

fn bundled(diagnostics: &mut Vec<Diagnostic>) -> Vec<Skill> {
    let mut skills = Vec::new();
    for folder in discover::bundled() {
        let Some(file) = folder.get_file(folder.path().join("SKILL.md")) else {
            continue;
        };
        let folder_name = folder.path().display().to_string();
        let text = String::from_utf8_lossy(file.contents());
        let display = Path::new("skills").join(&folder_name).join("SKILL.md");
        if let Some((name, fields, frontmatter)) = parse(&text, &folder_name, &display, diagnostics)
        {
            let mut skill = Skill::new(
                name,
                fields,
                &frontmatter,
                Location::Bundled(folder),
                "SKILL.md",
            );
            skill.size = file.contents().len() as u64;
            skills.push(skill);
        }
    }
    skills
}

/// The skills of a root on disk; with `index`, the index file reused and refreshed.
fn on_disk(root: &Path, index: Option<PathBuf>, diagnostics: &mut Vec<Diagnostic>) -> Vec<Skill> {
    let candidates = discover::walk(root, diagnostics);
    let previous = index.as_deref().and_then(index_file::read_cached);
    let generated_at = previous.as_ref().map(|index| index.generated_at.clone());
    let mut known: Vec<Cached> = previous
        .into_iter()
        .flat_map(|index| index.skills)
        .collect();
    let mut used = vec![false; known.len()];
    let mut changed = generated_at.is_none();
    let mut skills = Vec::with_capacity(candidates.len());
    // The scripts of each skill as the index lists them (`None`: list them when writing).
    let mut scripts: Vec<Scripts> = Vec::with_capacity(candidates.len());
    for candidate in &candidates {
        let path = candidate.folder.display().to_string();
        let position = known
            .binary_search_by(|entry| entry.path.as_str().cmp(&path))
            .ok();
        let previous_entry = position.map(|position| {
            used[position] = true;
            &mut known[position]
        });
        let fresh = previous_entry.as_ref().is_some_and(|entry| {
            entry.size == candidate.size
                && entry.modified_ns == folders::nanos(candidate.modified)
                && entry.skill_file == candidate.file_name
        });
        changed |= previous_entry.is_some() && !fresh;
        let reused = previous_entry.filter(|_| fresh);
        let skill = match reused.as_deref() {
            Some(entry) => Some(from_entry(entry, candidate)),
            None => read_candidate(candidate, &candidate.skill_file(), diagnostics),
        };
        let Some(mut skill) = skill else {
            continue;
        };
        skill.size = candidate.size;
        skill.modified = Some(candidate.modified);
        changed |= reused.is_none();
        // A script added or removed changes `scripts/`, not the SKILL.md: its listing is
        // reused only while the folder's modification time is the one the index saw.
        let modified_ns = scripts_modified(&candidate.folder);
        let tools = reused
            .filter(|entry| entry.scripts_modified_ns == modified_ns)
            .map(|entry| std::mem::take(&mut entry.tools));
        changed |= tools.is_none();
        scripts.push(Scripts { tools, modified_ns });
        skills.push(skill);
    }
    // Entries left over are skills that are gone.
    let gone = used.contains(&false);
    drop(known);
    if let Some(index) = index.filter(|_| changed || gone) {
        let entries = skills
            .iter()
            .zip(scripts)
            .map(|(skill, scripts)| entry(skill, scripts))
            .collect();
        index_file::write(&index, generated_at.as_deref(), entries, SystemTime::now());
    }
    skills
}

fn read_candidate(
    candidate: &Candidate,
    file: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Skill> {
    let head =
        std::fs::File::open(file).and_then(|opened| frontmatter::read_head(BufReader::new(opened)));
    let head = match head {
        Ok(head) => head,
        Err(error) => {
            let message = format!("cannot be read: {error}");
            diagnostics.push(Diagnostic::new(Level::Fatal, file, "unreadable", message));
            return None;
        }
    };
    let (name, fields, frontmatter) = parse(&head, &candidate.folder_name, file, diagnostics)?;
    let location = Location::Disk(candidate.folder.clone());
    Some(Skill::new(
        name,
        fields,
        &frontmatter,
        location,
        candidate.file_name,
    ))
}

fn from_entry(entry: &Cached, candidate: &Candidate) -> Skill {
    let (fields, _) = validate::check(
        &entry.frontmatter,
        &candidate.folder_name,
        &candidate.skill_file(),
        &BTreeMap::default(),
    );
    let location = Location::Disk(candidate.folder.clone());
    Skill::new(
        entry.name.clone(),
        fields,
        &entry.frontmatter,
        location,
        candidate.file_name,
    )
}

/// Parses and checks one frontmatter; `None` (with a fatal diagnostic) when the skill must be
/// skipped even in lenient mode.
pub fn parse(
    text: &str,
    folder_name: &str,
    file: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<(String, Fields, Frontmatter)> {
    let (parsed, lines) = read_yaml(text, file, diagnostics)?;
    let (fields, found) = validate::check(&parsed.frontmatter, folder_name, file, &lines);
    let fatal = found
        .iter()
        .any(|diagnostic| diagnostic.level == Level::Fatal);
    diagnostics.extend(found);
    if fatal {
        return None;
    }
    let name = fields
        .name
        .clone()
        .filter(|name| validate::valid_name(name))
        .unwrap_or_else(|| folder_name.to_owned());
    Some((name, fields, parsed.frontmatter))
}

/// The frontmatter and the line of each top-level key; `None` (with a fatal diagnostic) when
/// there is no frontmatter or its YAML cannot be parsed even leniently.
fn read_yaml(
    text: &str,
    file: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<(frontmatter::Parsed, BTreeMap<String, usize>)> {
    let text = frontmatter::normalise(text);
    let split = frontmatter::split(&text)
        .map_err(|error| {
            let message = error.to_string();
            diagnostics.push(
                Diagnostic::new(Level::Fatal, file, "frontmatter", message).at(Some(1), None),
            );
        })
        .ok()?;
    let parsed = frontmatter::parse(&split)
        .map_err(|error| {
            let message = format!("the YAML cannot be parsed: {}", error.message);
            diagnostics
                .push(Diagnostic::new(Level::Fatal, file, "yaml", message).at(error.line, None));
        })
        .ok()?;
    for (line, key) in &parsed.recovered {
        let message = "the value holds `: ` and must be quoted; it was read as quoted text";
        diagnostics.push(
            Diagnostic::new(
                Level::Error,
                file,
                "yaml-unquoted-colon",
                message.to_owned(),
            )
            .at(Some(*line), Some(key)),
        );
    }
    Some((parsed, validate::key_lines(split.yaml, split.yaml_line)))
}

/// A skill's scripts as its index entry lists them.
struct Scripts {
    /// Their ids, when the index listed them and `scripts/` did not change since; `None`:
    /// listed afresh.
    tools: Option<Vec<String>>,
    /// The modification time of `scripts/`, when there is one.
    modified_ns: Option<u128>,
}

/// The modification time of a skill's `scripts/` folder, which changes when a script is added,
/// removed or renamed.
fn scripts_modified(folder: &Path) -> Option<u128> {
    let metadata = std::fs::metadata(folder.join(SCRIPTS_FOLDER)).ok()?;
    metadata
        .is_dir()
        .then(|| metadata.modified().ok().map(folders::nanos))
        .flatten()
}

/// The index entry of a skill on disk, with its scripts' ids.
fn entry(skill: &Skill, scripts: Scripts) -> Entry {
    let tools = scripts.tools.unwrap_or_else(|| {
        skill
            .scripts()
            .iter()
            .map(|script| script_id(&skill.name, &script.name))
            .collect()
    });
    Entry {
        name: skill.name.clone(),
        title: skill
            .fields
            .title
            .clone()
            .unwrap_or_else(|| index_file::title_from_name(&skill.name)),
        description: skill.description.clone(),
        version: skill.fields.version.clone(),
        tags: skill.fields.tags.clone(),
        author: skill.fields.author.clone(),
        script_count: tools.len(),
        tools,
        path: skill.location.display(),
        has_skill_md: true,
        last_modified: folders::timestamp(skill.modified.unwrap_or(SystemTime::UNIX_EPOCH)),
        skill_file: skill.file_name.to_owned(),
        size: skill.size,
        modified_ns: folders::nanos(skill.modified.unwrap_or(SystemTime::UNIX_EPOCH)),
        scripts_modified_ns: scripts.modified_ns,
        frontmatter: skill.frontmatter(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn write(folder: &Path, name: &str) {
        std::fs::create_dir_all(folder).unwrap();
        let text = format!("---\nname: {name}\ndescription: The {name} skill.\n---\n# Body\n");
        std::fs::write(folder.join("SKILL.md"), text).unwrap();
    }

    fn served(catalog: &Catalog) -> Vec<(String, Option<String>)> {
        catalog
            .skills
            .iter()
            .map(|skill| {
                let declared = skill.declared_name.as_deref().map(str::to_owned);
                (skill.name.clone(), declared)
            })
            .collect()
    }

    #[test]
    fn a_colliding_skill_is_served_under_its_folder_or_a_qualified_name() {
        let directory = tempfile::tempdir().unwrap();
        let first = directory.path().join("first");
        let second = directory.path().join("team-skills");
        write(&first.join("pdf"), "pdf");
        write(&first.join("K-Dense-AI-pdf"), "pdf");
        write(&first.join("vendor/scientific/pdf"), "pdf");
        // Declared by a later skill: never given to a colliding one.
        write(&second.join("scientific-pdf"), "scientific-pdf");
        write(&second.join("pdf"), "pdf");
        write(&second.join("docx"), "docx");
        let roots = [&first, &second].map(|path| Root {
            kind: RootKind::Configured,
            path: path.clone(),
        });
        let catalog = build(&roots, None);
        let owned =
            |name: &str, declared: Option<&str>| (name.to_owned(), declared.map(str::to_owned));
        assert_eq!(
            served(&catalog),
            [
                owned("k-dense-ai-pdf", Some("pdf")),
                owned("pdf", None),
                owned("vendor-scientific-pdf", Some("pdf")),
                owned("docx", None),
                owned("team-skills-pdf", Some("pdf")),
                owned("scientific-pdf", None),
            ]
        );
        let collisions: Vec<&str> = catalog
            .diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.rule == "name-collision")
            .map(|diagnostic| diagnostic.message.as_str())
            .collect();
        assert_eq!(collisions.len(), 3, "{collisions:?}");
        let winner = first.join("pdf").display().to_string();
        let loser = first.join("K-Dense-AI-pdf").display().to_string();
        assert!(
            collisions.contains(&format!(
                "skill `pdf` at {loser} has the name of the one at {winner}, which wins; it is served as `k-dense-ai-pdf`"
            ).as_str()),
            "{collisions:?}"
        );
    }

    #[test]
    fn names_are_numbered_when_no_folder_tells_them_apart() {
        let notes = Skill::new(
            "notes".to_owned(),
            Fields::default(),
            &Frontmatter::new(),
            Location::Disk("/skills/notes".into()),
            "SKILL.md",
        );
        let root = Root {
            kind: RootKind::Configured,
            path: "/skills".into(),
        };
        assert_eq!(
            alternative_name(&notes, &root, |name| name == "skills-notes"),
            "skills-notes"
        );
        assert_eq!(
            alternative_name(&notes, &root, |name| name == "notes-3"),
            "notes-3"
        );
    }
}
