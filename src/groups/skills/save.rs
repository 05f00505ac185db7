//! `SkillSave`: writes a skill through [`crate::skills::save`], then rescans the roots so the
//! catalog, `index.json`, resources, prompts and search see it at once. It asks the user once
//! per skill by default (`Tool::permission`, `Tool::approval_scope`), since it writes to disk.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Shared;
use crate::groups::structured;
use crate::skills::{Error, save};
use crate::tools::{ToolError, ToolOutput, parse_arguments};

pub(super) const DESCRIPTION: &str = "Save a skill you wrote (or an improved version of one) \
    so that later sessions find it with SkillSearch: a SKILL.md made of `name` and \
    `description` (what it does and when to use it) and the markdown `body`, plus optional \
    text files by relative path (e.g. `references/details.md`). The skill is checked against \
    the Agent Skills specification before anything is written; an existing skill keeps its \
    other files and its previous version is backed up. Asks the user before saving a skill.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveArguments {
    /// The skill's name: 1–64 of lowercase letters, digits and single `-`; also its folder name.
    pub name: String,
    /// What the skill does and when to use it, in the third person (at most 1,024 characters).
    pub description: String,
    /// The instructions: markdown, starting with the steps to follow.
    pub body: String,
    /// Other files of the skill, by path relative to its folder, as text.
    pub files: Option<BTreeMap<String, String>>,
    /// The skills folder for a new skill (default: the first writable one).
    pub root: Option<PathBuf>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SaveOutput {
    pub name: String,
    /// The skill's folder.
    pub path: String,
    /// `true` for a new skill, `false` for a new version of an existing one.
    pub created: bool,
    /// Where the previous version was moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
}

pub(super) fn run(shared: &Shared, arguments: Value) -> Result<ToolOutput, ToolError> {
    let arguments: SaveArguments = parse_arguments("SkillSave", arguments)?;
    let request = save::Request {
        name: arguments.name,
        description: arguments.description,
        body: arguments.body,
        files: arguments.files.unwrap_or_default(),
        root: arguments.root,
    };
    let library = shared.shelf.library();
    let saved =
        save::save(&library, shared.shelf.roots(), &request).map_err(|error| match error {
            Error::Io { .. } => ToolError::Internal(error.to_string()),
            other => ToolError::invalid(other),
        })?;
    let library = shared.shelf.reload();
    // The new library's search index is built beside the session, as at start-up.
    std::thread::spawn(move || library.warm_up());
    structured(&SaveOutput {
        name: request.name,
        path: saved.folder.display().to_string(),
        created: saved.created,
        backup: saved.backup.map(|backup| backup.display().to_string()),
    })
}
