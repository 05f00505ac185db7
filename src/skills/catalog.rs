//! Builds the catalog from the roots: reads only the frontmatter of each SKILL.md (or nothing,
//! when the root's `index.json` still matches the file's size and modification time), checks
//! it, and resolves name collisions (the earlier root wins, and the loser is reported).

use std::collections::{BTreeMap, HashMap};
use std::io::BufReader;
use std::path::Path;
use std::time::SystemTime;

use super::discover::{self, Candidate, Root, RootKind};
use super::files::Location;
use super::frontmatter::{self, Frontmatter};
use super::index_file::{self, Cached, Entry};
use super::validate::{self, Diagnostic, Fields, Level};
use super::{SCRIPTS_FOLDER, Skill, script_id};
use crate::folders;

/// The skills found and everything worth reporting about them.
#[derive(Debug, Default)]
pub struct Catalog {
    pub skills: Vec<Skill>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Scans the roots in order. With `use_index`, a root's `index.json` is reused and refreshed.
pub fn build(roots: &[Root], use_index: bool) -> Catalog {
    let mut catalog = Catalog::default();
    let mut seen: HashMap<String, String> = HashMap::new();
    for root in roots {
        let found = match root.kind {
            RootKind::Bundled => bundled(&mut catalog.diagnostics),
            _ => on_disk(&root.path, use_index, &mut catalog.diagnostics),
        };
        for skill in found {
            let place = skill.location.display();
            if let Some(winner) = seen.get(&skill.name) {
                let message = format!(
                    "skill `{}` at {place} is hidden by the one at {winner} (the earlier root wins)",
                    skill.name
                );
                tracing::warn!("{message}");
                let file = Path::new(&place).join(skill.file_name);
                catalog.diagnostics.push(Diagnostic::new(
                    Level::Warning,
                    file,
                    "name-collision",
                    message,
                ));
                continue;
            }
            seen.insert(skill.name.clone(), place);
            catalog.skills.push(skill);
        }
    }
    catalog
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

fn on_disk(root: &Path, use_index: bool, diagnostics: &mut Vec<Diagnostic>) -> Vec<Skill> {
    let candidates = discover::walk(root, diagnostics);
    let previous = use_index.then(|| index_file::read_cached(root)).flatten();
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
    if use_index && (changed || gone) {
        let entries = skills
            .iter()
            .zip(scripts)
            .map(|(skill, scripts)| entry(skill, scripts))
            .collect();
        index_file::write(root, generated_at.as_deref(), entries, SystemTime::now());
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
