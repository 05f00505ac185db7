//! The roots walked into groups: each folder of a root is a group (hidden folders and
//! `node_modules` aside), each `NAME.tool.json` in it a tool. A folder whose name cannot be a
//! group's, a broken `group.json` or a broken manifest is reported and left out, never fatal:
//! the rest is served. Of two groups of one name the earlier root's wins.
//!
//! With the index, a tool whose manifest and script have the size and modification time the
//! root's index recorded is taken from it, manifest and digests, without reading either
//! file; the index is written again only when an entry changed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::index_file::{self, GroupEntry, Stamp, ToolEntry};
use super::manifest::{self, GROUP_FILE, GroupManifest, MANIFEST_SUFFIX, Manifest, Problem};
use super::{Digests, Group, MAX_GROUP_NAME, Script, tool_name, valid_name};
use crate::folders::{Indexes, sha256, skipped_folder};

/// The library name the tool roots' index files are kept under in the data folder.
const LIBRARY: &str = "tools";

/// The groups found and everything worth reporting about the folders.
#[derive(Debug, Default)]
pub struct Scan {
    pub groups: Vec<Group>,
    pub problems: Vec<Problem>,
}

/// Scans the roots in order; `reserved` are the names no folder may take (the built-in
/// groups'). With `indexes`, each root's index (in the data folder) is reused and refreshed, and
/// an `index.json` an earlier version wrote into the root is removed.
pub fn scan(roots: &[PathBuf], reserved: &[&str], indexes: Option<&Indexes>) -> Scan {
    let mut scan = Scan::default();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for root in roots {
        let index = indexes.and_then(|indexes| {
            crate::folders::remove_old_index(root, index_file::written_by_us);
            indexes.file(LIBRARY, root)
        });
        for group in scan_root(root, reserved, index, &mut scan.problems) {
            if let Some(winner) = seen.get(&group.name) {
                let message = format!(
                    "the group `{}` is hidden by the one at {} (the earlier root wins); rename \
                     one of the two folders to serve both",
                    group.name,
                    winner.display()
                );
                scan.problems
                    .push(Problem::skipped(&group.folder, None, message));
                continue;
            }
            seen.insert(group.name.clone(), group.folder.clone());
            scan.groups.push(group);
        }
    }
    scan
}

fn scan_root(
    root: &Path,
    reserved: &[&str],
    index: Option<PathBuf>,
    problems: &mut Vec<Problem>,
) -> Vec<Group> {
    let Ok(entries) = std::fs::read_dir(root) else {
        // `~/.synapse/tools` is looked in whether or not the user made it: no news.
        let at_home = std::env::home_dir().is_some_and(|home| super::home_root(&home) == root);
        if !at_home || root.exists() {
            problems.push(Problem::warning(
                root,
                "the tools folder does not exist or cannot be read",
            ));
        }
        return Vec::new();
    };
    let mut folders: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| {
            (
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            )
        })
        .filter(|(name, _)| !skipped_folder(name))
        .collect();
    folders.sort();
    let previous = index.as_deref().and_then(index_file::read);
    let mut known: HashMap<PathBuf, ToolEntry> = previous
        .iter()
        .flat_map(|index| &index.groups)
        .flat_map(|group| {
            let folder = PathBuf::from(&group.path);
            group
                .tools
                .iter()
                .map(move |tool| (folder.join(&tool.manifest_file), tool.clone()))
        })
        .collect();
    let mut groups = Vec::new();
    let mut entries = Vec::new();
    for (name, folder) in folders {
        if let Some((group, entry)) = read_group(&name, &folder, reserved, &mut known, problems) {
            groups.push(group);
            entries.push(entry);
        }
    }
    let unchanged = previous
        .as_ref()
        .is_some_and(|index| index.groups == entries);
    if let Some(index) = index.filter(|_| !unchanged) {
        let generated_at = previous.map(|index| index.generated_at);
        index_file::write(&index, generated_at.as_deref(), entries, SystemTime::now());
    }
    groups
}

/// One group folder, with its index entry; `None` (reported) when nothing of it can be served.
fn read_group(
    name: &str,
    folder: &Path,
    reserved: &[&str],
    known: &mut HashMap<PathBuf, ToolEntry>,
    problems: &mut Vec<Problem>,
) -> Option<(Group, GroupEntry)> {
    if !valid_name(name, MAX_GROUP_NAME) {
        problems.push(Problem::skipped(
            folder,
            None,
            format!(
                "`{name}` cannot be a group name: use 1 to {MAX_GROUP_NAME} letters, digits, `_` \
                 or `-`; rename the folder"
            ),
        ));
        return None;
    }
    if reserved.contains(&name) {
        problems.push(Problem::skipped(
            folder,
            None,
            format!("`{name}` is the name of a built-in tool group; rename the folder"),
        ));
        return None;
    }
    let settings = read_settings(folder)
        .map_err(|problem| problems.push(problem))
        .ok()?;
    let manifests = manifests_in(folder);
    if manifests.is_empty() {
        problems.push(Problem::warning(
            folder,
            format!(
                "the folder holds no tools: a tool is a script with a manifest \
                 `NAME{MANIFEST_SUFFIX}` beside it (docs/script-tools.md)"
            ),
        ));
        return None;
    }
    let mut scripts = Vec::new();
    let mut tools = Vec::new();
    for (tool, file) in &manifests {
        let (read, found) = read_tool((name, tool), folder, file, known);
        problems.extend(found);
        if let Some((script, entry)) = read {
            scripts.push(Arc::new(script));
            tools.push(entry);
        }
    }
    if scripts.is_empty() {
        return None;
    }
    let mut distinct: Vec<&str> = scripts.iter().map(|s| s.manifest.script.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let enabled = settings.enabled.unwrap_or(true);
    let entry = GroupEntry {
        name: name.to_owned(),
        path: folder.display().to_string(),
        enabled,
        script_count: distinct.len(),
        last_modified: tools
            .iter()
            .map(|tool| tool.last_modified.clone())
            .max()
            .unwrap_or_default(),
        tools,
    };
    let rules = read_rules(folder, &settings.rules, problems);
    let group = Group {
        name: name.to_owned(),
        folder: folder.to_owned(),
        enabled,
        instructions: settings.instructions,
        rules,
        scripts,
    };
    Some((group, entry))
}

/// The tool manifests of a group folder, `(tool, file)` by tool name.
fn manifests_in(folder: &Path) -> Vec<(String, PathBuf)> {
    let mut manifests: Vec<(String, PathBuf)> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().to_string_lossy().into_owned();
            let tool = file.strip_suffix(MANIFEST_SUFFIX)?.to_owned();
            Some((tool, entry.path()))
        })
        .collect();
    manifests.sort();
    manifests
}

/// The rules `group.json` declares, their text read; one that cannot be read is reported and
/// left out.
fn read_rules(
    folder: &Path,
    declared: &[crate::config::DeclaredRule],
    problems: &mut Vec<Problem>,
) -> Vec<crate::config::DeclaredRule> {
    let file = folder.join(GROUP_FILE);
    (declared.iter())
        .filter_map(|rule| match rule.read(folder) {
            Ok(rule) => Some(rule),
            Err(message) => {
                problems.push(Problem::skipped(&file, Some("rules"), message));
                None
            }
        })
        .collect()
}

/// The group's `group.json`, or the defaults when it has none.
fn read_settings(folder: &Path) -> Result<GroupManifest, Problem> {
    let file = folder.join(GROUP_FILE);
    if !file.exists() {
        return Ok(GroupManifest::default());
    }
    manifest::read_json(&file).map(|(settings, _)| settings)
}

/// A tool as read: what the registry serves and what the index records.
type Read = (Script, ToolEntry);

/// One tool, from the index while its files are unchanged, else read and checked; `None` when it
/// cannot be served. The problems found come beside it.
fn read_tool(
    (group, tool): (&str, &str),
    folder: &Path,
    file: &Path,
    known: &mut HashMap<PathBuf, ToolEntry>,
) -> (Option<Read>, Vec<Problem>) {
    let manifest_stamp = Stamp::of(file);
    let cached = known.remove(file).filter(|entry| {
        Some(entry.manifest_stamp) == manifest_stamp
            && Stamp::of(&folder.join(&entry.manifest.script)) == Some(entry.script_stamp)
    });
    if let Some(entry) = cached {
        let script = script(group, tool, folder, file, entry.manifest.clone(), &entry);
        return (Some((script, entry)), Vec::new());
    }
    let (manifest, bytes) = match manifest::read_json::<Manifest>(file) {
        Ok(read) => read,
        Err(problem) => return (None, vec![problem]),
    };
    let mut problems = manifest::check(&manifest, file, folder, (group, tool));
    if problems.iter().any(|problem| problem.skipped) {
        return (None, problems);
    }
    let script_path = folder.join(&manifest.script);
    let script_stamp = Stamp::of(&script_path);
    let script_bytes = std::fs::read(&script_path);
    let (Some(manifest_stamp), Some(script_stamp), Ok(script_bytes)) =
        (manifest_stamp, script_stamp, script_bytes)
    else {
        let message = format!("`{}` cannot be read; try again", manifest.script);
        problems.push(Problem::skipped(file, Some("script"), message));
        return (None, problems);
    };
    let entry = ToolEntry {
        name: tool_name(group, tool),
        description: manifest.description.clone(),
        manifest_file: file
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default(),
        script: manifest.script.clone(),
        manifest_digest: sha256(&bytes),
        script_digest: sha256(&script_bytes),
        manifest_stamp,
        script_stamp,
        last_modified: ToolEntry::modified(manifest_stamp, script_stamp),
        manifest: manifest.clone(),
    };
    let script = script(group, tool, folder, file, manifest, &entry);
    (Some((script, entry)), problems)
}

fn script(
    group: &str,
    tool: &str,
    folder: &Path,
    file: &Path,
    manifest: Manifest,
    entry: &ToolEntry,
) -> Script {
    Script {
        name: tool_name(group, tool),
        group: group.to_owned(),
        folder: folder.to_owned(),
        manifest_file: file.to_owned(),
        manifest,
        digests: Digests {
            script: entry.script_digest.clone(),
            manifest: entry.manifest_digest.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const COUNT: &str = r#"{"description": "Counts.", "script": "count.sh",
        "inputSchema": {"type": "object"}}"#;

    fn root() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let text = root.path().join("text");
        std::fs::create_dir(&text).unwrap();
        std::fs::write(text.join("count.sh"), "echo 1\n").unwrap();
        std::fs::write(text.join("count.tool.json"), COUNT).unwrap();
        std::fs::write(text.join("broken.tool.json"), "{\"description\": 5}").unwrap();
        std::fs::create_dir(root.path().join("vars")).unwrap();
        std::fs::create_dir(root.path().join("bad name")).unwrap();
        std::fs::create_dir(root.path().join(".hidden")).unwrap();
        root
    }

    fn names(scan: &Scan) -> Vec<String> {
        scan.groups
            .iter()
            .flat_map(|group| group.scripts.iter().map(|script| script.name.clone()))
            .collect()
    }

    #[test]
    fn broken_folders_and_manifests_are_reported_and_the_rest_served() {
        let root = root();
        let scan = scan(&[root.path().to_owned()], &["vars"], None);
        assert_eq!(names(&scan), ["text__count"]);
        let problems: Vec<String> = scan
            .problems
            .iter()
            .map(|problem| {
                let file = problem.file.strip_prefix(root.path()).unwrap();
                format!("{} {}", file.display(), problem.skipped)
            })
            .collect();
        assert_eq!(
            problems,
            ["bad name true", "text/broken.tool.json true", "vars true"]
        );
        assert!(
            !root.path().join("index.json").exists(),
            "a check writes nothing"
        );
    }

    #[test]
    fn the_index_is_reused_while_the_files_are_unchanged() {
        let root = root();
        let roots = [root.path().to_owned()];
        let data = tempfile::tempdir().unwrap();
        let indexes = Indexes::new(data.path());
        let file = indexes.file(LIBRARY, root.path()).unwrap();
        let first = scan(&roots, &[], Some(&indexes));
        assert!(
            !root.path().join("index.json").exists(),
            "the root is only read"
        );
        let index = index_file::read(&file).unwrap();
        assert_eq!(
            (index.total_groups, index.total_tools, index.total_scripts),
            (1, 1, 1)
        );
        // An edit of the index, not of the manifest, shows: the manifest was not read.
        let mut edited = index.clone();
        edited.groups[0].tools[0].manifest.description = "FROM THE INDEX".to_owned();
        crate::folders::write_index(&file, &edited);
        let warm = scan(&roots, &[], Some(&indexes));
        assert_eq!(
            warm.groups[0].scripts[0].manifest.description,
            "FROM THE INDEX"
        );
        assert_eq!(
            warm.groups[0].scripts[0].digests,
            first.groups[0].scripts[0].digests
        );
        // A changed script is read again, and its digest changes.
        std::fs::write(root.path().join("text/count.sh"), "echo 22\n").unwrap();
        let changed = scan(&roots, &[], Some(&indexes));
        assert_eq!(changed.groups[0].scripts[0].manifest.description, "Counts.");
        assert_ne!(
            changed.groups[0].scripts[0].digests,
            first.groups[0].scripts[0].digests
        );
    }

    #[test]
    fn the_earlier_root_wins_a_group_name() {
        let first = root();
        let second = root();
        let scan = scan(
            &[first.path().to_owned(), second.path().to_owned()],
            &[],
            None,
        );
        assert_eq!(names(&scan), ["text__count"]);
        assert_eq!(scan.groups[0].folder, first.path().join("text"));
        assert!(
            scan.problems
                .iter()
                .any(|problem| problem.message.contains("hidden by the one at")),
            "{:?}",
            scan.problems
        );
    }
}
