//! The skill index of a root (`docs/skills.md`): kept in the data folder for the roots the server
//! only reads ([`crate::folders::Indexes`]), and as `index.json` in `~/.synapse/skills`, the
//! server's own root.
//!
//! The index's own fields come first (`name`, `title`, `description`, `version`, `tags`, `author`,
//! `tools`, `scriptCount`, `path`, `hasSkillMd`, `lastModified`; `totalSkills`, `totalTools`,
//! `generatedAt`, `updatedAt`). Each entry also keeps what a warm start needs so that it reads
//! no SKILL.md: the file name, its size and exact modification time, and the frontmatter
//! verbatim. The file is written atomically (temporary file, then rename), only when an entry
//! changed; one that cannot be written is skipped silently.

use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::frontmatter::Frontmatter;
use crate::folders::{self, timestamp};

const FORMAT_VERSION: &str = "1.0.0";

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexFile {
    pub version: String,
    pub skills: Vec<Entry>,
    pub total_skills: usize,
    pub total_tools: usize,
    pub generated_at: String,
    pub updated_at: String,
}

/// One skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub name: String,
    pub title: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// `skill:{name}:{script}` for every file in `scripts/` (see [`super::Skill::scripts`]).
    #[serde(default)]
    pub tools: Vec<String>,
    pub script_count: usize,
    /// The skill folder.
    pub path: String,
    pub has_skill_md: bool,
    pub last_modified: String,
    /// `SKILL.md` or `skill.md`.
    pub skill_file: String,
    /// Size of the SKILL.md in bytes.
    pub size: u64,
    /// Modification time of the SKILL.md in nanoseconds since the Unix epoch.
    pub modified_ns: u128,
    /// Modification time of the `scripts/` folder, when there is one: `tools` is listed again
    /// when it changes, even if the SKILL.md did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripts_modified_ns: Option<u128>,
    pub frontmatter: Frontmatter,
}

/// What a start needs of an entry to reuse it instead of reading the SKILL.md; the rest of an
/// entry is derived again from the skill when the file is rewritten. Reading only this keeps a
/// warm start of a large library from holding every entry whole at once.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cached {
    pub name: String,
    pub path: String,
    pub skill_file: String,
    pub size: u64,
    pub modified_ns: u128,
    pub frontmatter: Frontmatter,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub scripts_modified_ns: Option<u128>,
}

/// The cached entries of an index, sorted by path, and when the index was first generated.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedIndex {
    pub skills: Vec<Cached>,
    pub generated_at: String,
}

/// The keys of the file, exactly: an `index.json` with these and nothing else is one the server
/// wrote.
const KEYS: [&str; 6] = [
    "version",
    "skills",
    "totalSkills",
    "totalTools",
    "generatedAt",
    "updatedAt",
];

/// The index in `file`, when there is a readable one.
pub fn read(file: &Path) -> Option<IndexFile> {
    folders::read_index(file)
}

/// What a start reuses of the index in `file`, entries sorted by path.
pub fn read_cached(file: &Path) -> Option<CachedIndex> {
    let mut index: CachedIndex = folders::read_index(file)?;
    index
        .skills
        .sort_unstable_by(|left, right| left.path.cmp(&right.path));
    Some(index)
}

/// Whether a parsed `index.json` is a skill index the server wrote: this format's keys and
/// nothing else, its version, and entries that read as this format's.
pub fn written_by_us(value: &serde_json::Value) -> bool {
    folders::has_exactly_keys(value, &KEYS)
        && value["version"] == FORMAT_VERSION
        && IndexFile::deserialize(value).is_ok()
}

/// Writes the index into `file` (the caller knows its entries changed). Failures (a read-only
/// folder) are logged at debug level and otherwise ignored: the index only makes starts faster.
pub fn write(file: &Path, generated_at: Option<&str>, mut entries: Vec<Entry>, now: SystemTime) {
    entries.sort_by(|left, right| left.path.cmp(&right.path));
    let total_tools = entries.iter().map(|entry| entry.tools.len()).sum();
    let index = IndexFile {
        version: FORMAT_VERSION.to_owned(),
        total_skills: entries.len(),
        total_tools,
        generated_at: generated_at.map_or_else(|| timestamp(now), str::to_owned),
        updated_at: timestamp(now),
        skills: entries,
    };
    folders::write_index(file, &index);
}

/// A title for a skill without one: its name in words, each capitalised.
pub fn title_from_name(name: &str) -> String {
    name.split('-')
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut characters = word.chars();
            characters.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(characters).collect()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entry(name: &str) -> Entry {
        Entry {
            name: name.to_owned(),
            title: title_from_name(name),
            description: "d".to_owned(),
            version: None,
            tags: Vec::new(),
            author: None,
            tools: vec![format!("skill:{name}:run")],
            script_count: 1,
            path: format!("/skills/{name}"),
            has_skill_md: true,
            last_modified: timestamp(SystemTime::UNIX_EPOCH),
            skill_file: "SKILL.md".to_owned(),
            size: 10,
            modified_ns: 5,
            scripts_modified_ns: None,
            frontmatter: Frontmatter::new(),
        }
    }

    #[test]
    fn the_index_round_trips_and_keeps_its_generation_time() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("index.json");
        let now = SystemTime::UNIX_EPOCH;
        write(&file, None, vec![entry("b"), entry("a")], now);
        let index = read(&file).unwrap();
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(written_by_us(&written));
        assert_eq!(index.total_skills, 2);
        assert_eq!(index.total_tools, 2);
        assert_eq!(index.skills[0].name, "a");
        assert_eq!(index.generated_at, "1970-01-01T00:00:00.000Z");
        let later = now + std::time::Duration::from_mins(1);
        write(&file, Some(&index.generated_at), vec![entry("a")], later);
        let changed = read(&file).unwrap();
        assert_eq!(changed.total_skills, 1);
        assert_eq!(changed.generated_at, index.generated_at);
        assert_eq!(changed.updated_at, "1970-01-01T00:01:00.000Z");
    }

    #[test]
    fn an_index_json_of_another_shape_is_not_ours() {
        for foreign in [
            serde_json::json!({"skills": []}),
            serde_json::json!({"version": "1.0.0", "skills": [], "totalSkills": 0,
                "totalTools": 0, "generatedAt": "x", "updatedAt": "y", "owner": "me"}),
            serde_json::json!({"version": "2.0.0", "skills": [], "totalSkills": 0,
                "totalTools": 0, "generatedAt": "x", "updatedAt": "y"}),
            serde_json::json!({"version": "1.0.0", "skills": [{"name": "a"}], "totalSkills": 1,
                "totalTools": 0, "generatedAt": "x", "updatedAt": "y"}),
            serde_json::json!([1, 2]),
        ] {
            assert!(!written_by_us(&foreign), "{foreign}");
        }
    }

    #[test]
    fn titles_come_from_names() {
        assert_eq!(
            title_from_name("code-quality-analyzer"),
            "Code Quality Analyzer"
        );
    }
}
