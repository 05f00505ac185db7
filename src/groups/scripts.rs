//! The `scripts` group (`docs/skills.md#scripts`): `SkillRunScript`, a thin adapter over
//! [`crate::skills::scripts`]. The group is off unless the config file turns it on, and every
//! run asks the user once per script *and the digest set of its skill folder*
//! ([`TypedTool::consent`]), so a changed file anywhere in the folder (`.git` and
//! `node_modules` included) voids the approval, another script of the skill asks again, and a
//! folder with a symlink leaving it cannot run at all.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::skills::scripts;
use crate::skills::shelf::Shelf;
use crate::tools::{
    Annotations, Answered, Asked, Consent, Context, Declaration, Origin, ToolError, ToolGroup,
    TypedTool, declare, parse_arguments, typed,
};

pub const GROUP: &str = "scripts";

const DESCRIPTION: &str = "Run a script a loaded skill provides, when its instructions say to: by \
    path in the skill folder (`scripts/extract.py`) or id (`skill:pdf-tools:extract`). `.sh` runs \
    with sh, `.py` python3, `.js` node, other executables directly, in the skill folder with \
    `SKILL_DIR` set. Answers the exit code, stdout and stderr (each ≤ 1 MiB). The user approves \
    each script's first run and again after the skill changes.";

/// The group with its one tool.
pub fn group(shelf: Arc<Shelf>) -> ToolGroup {
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
        about: Some("run the scripts a loaded skill provides (`SkillRunScript`)"),
        tools: vec![typed::<RunArguments, _>(Scripts {
            shelf,
            asked: Arc::default(),
        })],
        rule_prompt: None,
        rules: Vec::new(),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunArguments {
    /// The skill's name (not needed with a script id).
    pub name: Option<String>,
    /// Its path in the skill folder, or its id.
    pub script: String,
    /// Command-line arguments.
    pub args: Option<Vec<String>>,
    /// Text for its standard input.
    pub stdin: Option<String>,
    /// Most seconds it may run (1–300, default 30).
    pub timeout_seconds: Option<u64>,
}

/// How the script ended and what it wrote.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunOutput {
    /// The exit code; absent when the script was killed (timeout or signal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// `true` when the script was killed at its timeout.
    pub timed_out: bool,
    /// What was cut or killed, when something was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `SkillRunScript`: running code needs the user's consent, so it asks once per script and
/// digest set unless the configuration says otherwise.
impl TypedTool<Scripts> for RunArguments {
    type Output = RunOutput;
    const TOOL: Declaration = declare! {
        "SkillRunScript", "Run skill script", RUNS_CODE, DESCRIPTION,
        changes_shared_state, asks_once
    };

    async fn run(self, context: Context<'_, Scripts>) -> Answered<RunOutput> {
        let Scripts { shelf, asked } = context.service;
        let approved = asked.take(&format!("{self:?}"));
        let run = scripts::run_named(
            shelf,
            self.into(),
            approved.as_deref(),
            context.cancellation,
        );
        Ok(run.await?.map_err(ToolError::invalid)?.into())
    }

    /// The script, its skill and the digest of every file of the skill folder as it is now; a
    /// bad call (or a folder that cannot be digested whole) is refused here, before the user is
    /// asked.
    fn consent(service: &Scripts, arguments: &Value) -> Result<Consent, ToolError> {
        let parsed: Self = parse_arguments(Self::TOOL.name, arguments.clone())?;
        let (name, script) = (parsed.name.as_deref(), &parsed.script);
        let (scope, digest) = scripts::approval(&service.shelf, name, script)?;
        service.asked.remember(format!("{parsed:?}"), digest);
        Ok(Consent::Asked { scope: Some(scope) })
    }
}

const RUNS_CODE: Annotations = Annotations::DESTRUCTIVE.open_world();

/// What `SkillRunScript` is built with: the shelf, and the digest set each call was asked
/// about, by its arguments.
#[derive(Clone)]
pub struct Scripts {
    shelf: Arc<Shelf>,
    asked: Arc<Asked>,
}

impl From<RunArguments> for scripts::RunRequest {
    fn from(arguments: RunArguments) -> Self {
        Self {
            name: arguments.name,
            script: arguments.script,
            args: arguments.args.unwrap_or_default(),
            stdin: arguments.stdin,
            timeout_seconds: arguments.timeout_seconds,
        }
    }
}

impl From<scripts::Finished> for RunOutput {
    fn from(finished: scripts::Finished) -> Self {
        let ran = finished.ran;
        RunOutput {
            exit_code: ran.exit_code,
            stdout: ran.stdout,
            stderr: ran.stderr,
            timed_out: ran.timed_out,
            note: finished.note,
        }
    }
}
