//! `SkillSave`: writes a skill through [`crate::skills::save`], then rescans the roots so the
//! catalog, `index.json`, resources, prompts and search see it at once. It asks the user once
//! per skill by default (its declared permission, and [`TypedTool::consent`]), since it
//! writes to disk.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Skills;
use crate::skills::save;
use crate::tools::{
    Annotations, Answered, Consent, Context, Declaration, ToolError, TypedTool, declare,
    parse_arguments,
};

const DESCRIPTION: &str = "Save a skill you wrote (or improved) so later sessions find it: a \
    SKILL.md of `name`, `description` (what and when) and markdown `body`, plus text `files`. \
    Checked against the Agent Skills specification first; an existing skill keeps its other files \
    and a backup. The user approves; the answer gives the folder.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveArguments {
    /// 1–64 lowercase letters, digits and single `-`; also its folder.
    pub name: String,
    /// What it does and when to use it (≤ 1,024 characters).
    pub description: String,
    /// Markdown instructions, steps first.
    pub body: String,
    /// Other files, by relative path, as text.
    pub files: Option<BTreeMap<String, String>>,
    /// The skills folder for a new skill (default: the first writable one).
    pub root: Option<PathBuf>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SaveOutput {
    pub name: String,
    /// The skill's folder.
    pub path: String,
    /// The skills folder it is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// `true` for a new skill, `false` for a new version of an existing one.
    pub created: bool,
    /// Where the previous version was moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
}

/// `SkillSave`: saving writes to disk, so it asks once per skill unless the configuration
/// says otherwise. It writes files and rescans every skill root, on the blocking pool.
impl TypedTool<Skills> for SaveArguments {
    type Output = SaveOutput;
    // Saving over an existing skill replaces its files.
    const TOOL: Declaration = declare! {
        "SkillSave", "Save skill", REPLACES, DESCRIPTION, changes_shared_state, pooled, asks_once
    };

    async fn run(self, context: Context<'_, Skills>) -> Answered<SaveOutput> {
        let request = save::Request::from(self);
        let saved = context.service.shelf.save(&request)?;
        Ok(SaveOutput::new(request.name, saved))
    }

    /// A save is checked before anyone is asked (a skill that breaks the specification, or
    /// that cannot go where it would, is refused without a question), and approved per skill:
    /// approving a save of one skill never covers another.
    fn consent(skills: &Skills, arguments: &Value) -> Result<Consent, ToolError> {
        let checked: SaveArguments = parse_arguments(Self::TOOL.name, arguments.clone())?;
        let request = save::Request::from(checked);
        skills.shelf.check(&request)?;
        let scope = Some(format!("skill `{}` only", request.name));
        Ok(Consent::Asked { scope })
    }
}

const REPLACES: Annotations = Annotations::OVERWRITES;

impl From<SaveArguments> for save::Request {
    fn from(arguments: SaveArguments) -> Self {
        Self {
            name: arguments.name,
            description: arguments.description,
            body: arguments.body,
            files: arguments.files.unwrap_or_default(),
            root: arguments.root,
        }
    }
}

impl SaveOutput {
    fn new(name: String, saved: save::Saved) -> Self {
        Self {
            name,
            path: saved.folder.display().to_string(),
            root: saved.root.map(|root| root.display().to_string()),
            created: saved.created,
            backup: saved.backup.map(|backup| backup.display().to_string()),
        }
    }
}
