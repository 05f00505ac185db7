//! The index of a tool root (`docs/script-tools.md#the-index`), kept in the data folder
//! ([`crate::folders::Indexes`]), in the spirit of the skills' index: the groups with their
//! tools, script counts, digests and timestamps (`generatedAt`, `updatedAt`, each tool's
//! `lastModified`). Each tool keeps what a warm start needs so that it reads neither its
//! manifest nor its script: both files' sizes and exact modification times, their digests, and
//! the manifest as read. Written atomically, only when an entry changed; an index that cannot be
//! written is skipped silently.

use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::Manifest;
use crate::folders::{self, timestamp};

const FORMAT_VERSION: &str = "1.0.0";

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexFile {
    pub version: String,
    pub groups: Vec<GroupEntry>,
    pub total_groups: usize,
    pub total_tools: usize,
    pub total_scripts: usize,
    pub generated_at: String,
    pub updated_at: String,
}

/// One group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupEntry {
    pub name: String,
    /// The group folder.
    pub path: String,
    /// Whether the group is on by default (`group.json`).
    pub enabled: bool,
    /// How many different scripts the tools run.
    pub script_count: usize,
    /// The latest modification of a manifest or script of the group.
    pub last_modified: String,
    pub tools: Vec<ToolEntry>,
}

/// One tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolEntry {
    /// The name clients see, `{group}__{tool}`.
    pub name: String,
    pub description: String,
    /// The manifest's file name (`count.tool.json`).
    pub manifest_file: String,
    pub script: String,
    pub manifest_digest: String,
    pub script_digest: String,
    pub manifest_stamp: Stamp,
    pub script_stamp: Stamp,
    pub last_modified: String,
    /// The manifest as read.
    pub manifest: Manifest,
}

/// A file's size and modification time: while both are the same, the file is taken as unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stamp {
    pub size: u64,
    pub modified_ns: u128,
}

impl Stamp {
    /// The stamp of a file as it is now; `None` when it cannot be read.
    pub fn of(path: &Path) -> Option<Self> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(Self {
            size: metadata.len(),
            modified_ns: folders::nanos(metadata.modified().ok()?),
        })
    }

    fn time(self) -> SystemTime {
        let nanos = u64::try_from(self.modified_ns).unwrap_or(u64::MAX);
        SystemTime::UNIX_EPOCH + std::time::Duration::from_nanos(nanos)
    }
}

impl ToolEntry {
    /// When the later of its two files was modified.
    pub fn modified(manifest: Stamp, script: Stamp) -> String {
        timestamp(manifest.time().max(script.time()))
    }
}

/// The keys of the file, exactly: an `index.json` with these and nothing else is one the server
/// wrote.
const KEYS: [&str; 7] = [
    "version",
    "groups",
    "totalGroups",
    "totalTools",
    "totalScripts",
    "generatedAt",
    "updatedAt",
];

/// The index in `file`, when there is a readable one.
pub fn read(file: &Path) -> Option<IndexFile> {
    folders::read_index(file)
}

/// Whether a parsed `index.json` is a tool index the server wrote: this format's keys and
/// nothing else, its version, and groups that read as this format's.
pub fn written_by_us(value: &serde_json::Value) -> bool {
    folders::has_exactly_keys(value, &KEYS)
        && value["version"] == FORMAT_VERSION
        && IndexFile::deserialize(value).is_ok()
}

/// Writes the index into `file` (the caller knows its entries changed).
pub fn write(file: &Path, generated_at: Option<&str>, groups: Vec<GroupEntry>, now: SystemTime) {
    let total_tools = groups.iter().map(|group| group.tools.len()).sum();
    let total_scripts = groups.iter().map(|group| group.script_count).sum();
    let index = IndexFile {
        version: FORMAT_VERSION.to_owned(),
        total_groups: groups.len(),
        total_tools,
        total_scripts,
        generated_at: generated_at.map_or_else(|| timestamp(now), str::to_owned),
        updated_at: timestamp(now),
        groups,
    };
    folders::write_index(file, &index);
}
