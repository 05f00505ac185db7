//! The `scripts` group (`docs/skills.md#scripts`): `SkillRunScript`, a thin adapter over
//! [`crate::skills::scripts`]. The group is off unless the config file turns it on, and every
//! run asks the user once per script *and the digest set of its skill folder*
//! ([`TypedTool::consent`]), so a changed file anywhere in the folder (`.git` and
//! `node_modules` included) voids the approval, another script of the skill asks again, and a
//! folder with a symlink leaving it cannot run at all.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Asked;
use crate::runner::{self, MAX_TIMEOUT, OUTPUT_CAP};
use crate::skills::scripts;
use crate::skills::shelf::Shelf;
use crate::tools::{
    Annotations, Answered, Consent, Context, Declaration, Origin, ToolError, ToolGroup, TypedTool,
    declare, parse_arguments, typed,
};

pub const GROUP: &str = "scripts";

const DESCRIPTION: &str = "Run a script that a loaded skill provides (a file of the skill, \
    by its path relative to the skill folder, e.g. `scripts/extract.py`, or by its id \
    `skill:{name}:{script}`, e.g. `skill:pdf-tools:extract`), when the skill's instructions say \
    to run it. `.sh` runs with sh, `.py` with python3, `.js` with node, any \
    other executable file directly. It runs in the skill folder with `SKILL_DIR` set, `args` \
    as its arguments and `stdin` as its input, for at most `timeoutSeconds` (default 30, at \
    most 300). The answer gives the exit code, stdout and stderr (each cut at 1 MiB) and \
    whether it timed out. The user approves the first run of each script, and again \
    whenever a file of the skill changes.";

/// The group with its one tool.
pub fn group(shelf: Arc<Shelf>) -> ToolGroup {
    ToolGroup {
        name: GROUP.to_owned(),
        origin: Origin::BuiltIn,
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
    /// The skill's name, as `SkillSearch` returns it (may be left out when `script` is a
    /// script id).
    pub name: Option<String>,
    /// The script: its path relative to the skill folder, e.g. `scripts/extract.py`, or its id
    /// as the skills index lists it, e.g. `skill:pdf-tools:extract`.
    pub script: String,
    /// The script's command-line arguments.
    pub args: Option<Vec<String>>,
    /// Text written to the script's standard input (default: none, stdin is closed).
    pub stdin: Option<String>,
    /// How long the script may run, in seconds (1–300, default 30).
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
    const TOOL: Declaration = declare("SkillRunScript", "Run skill script", RUNS_CODE, DESCRIPTION)
        .changes_shared_state()
        .asks_once();

    async fn run(self, context: Context<'_, Scripts>) -> Answered<RunOutput> {
        let scripts = context.service;
        let approved = scripts.asked.take(&format!("{self:?}"));
        let (name, script) = scripts.locate(&self)?;
        if let Some(approved) = approved {
            scripts.check_unchanged(name, &approved)?;
        }
        let timeout = (self.timeout_seconds)
            .map(|seconds| Duration::from_secs(seconds.max(1)).min(MAX_TIMEOUT));
        let request = runner::Request {
            args: self.args.unwrap_or_default(),
            stdin: self.stdin,
            timeout,
            environment: Vec::new(),
        };
        let ran = scripts::run(&script, request, context.cancellation).await?;
        Ok(output(ran, timeout.unwrap_or(runner::DEFAULT_TIMEOUT)))
    }

    /// The script, its skill and the digest of every file of the skill folder as it is now; a
    /// bad call (or a folder that cannot be digested whole) is refused here, before the user is
    /// asked.
    fn consent(scripts: &Scripts, arguments: &Value) -> Result<Consent, ToolError> {
        let parsed: Self = parse_arguments(Self::TOOL.name, arguments.clone())?;
        let (name, script) = scripts.locate(&parsed)?;
        let library = scripts.shelf.library();
        let skill = library.get(name)?;
        let digest = scripts::digest_set(skill)?;
        scripts
            .asked
            .remember(format!("{parsed:?}"), digest.clone());
        let scope = format!(
            "script `{}` of skill `{}` only, while every file of the skill folder stays as it is now ({digest})",
            script.relative, skill.name
        );
        Ok(Consent::Asked { scope: Some(scope) })
    }
}

const RUNS_CODE: Annotations = Annotations {
    destructive: true,
    open_world: true,
    ..Annotations::NONE
};

/// What `SkillRunScript` is built with: the shelf, and the digest set each call was asked
/// about, by its arguments.
#[derive(Clone)]
pub struct Scripts {
    shelf: Arc<Shelf>,
    asked: Arc<Asked>,
}

impl Scripts {
    /// The skill's name and the script, found where the call says.
    fn locate<'a>(
        &self,
        arguments: &'a RunArguments,
    ) -> Result<(&'a str, runner::Script), ToolError> {
        let (name, script) = scripts::named(arguments.name.as_deref(), &arguments.script)?;
        let library = self.shelf.library();
        let skill = library.get(name)?;
        Ok((name, scripts::locate(skill, script)?))
    }

    /// Refuses a run whose skill changed after its digest set was approved.
    fn check_unchanged(&self, name: &str, approved: &str) -> Result<(), ToolError> {
        let library = self.shelf.library();
        let skill = library.get(name)?;
        if scripts::digest_set(skill)? == approved {
            return Ok(());
        }
        Err(ToolError::invalid(format!(
            "the files of skill `{name}` changed while the run waited for approval, so nothing \
             ran; call SkillRunScript again to ask about the new version"
        )))
    }
}

fn output(ran: runner::Ran, timeout: Duration) -> RunOutput {
    let mut notes = Vec::new();
    if ran.timed_out {
        notes.push(format!(
            "the script was killed after {} s; pass a larger `timeoutSeconds` (at most 300) if it needs longer",
            timeout.as_secs()
        ));
    }
    for (stream, cut) in [("stdout", ran.stdout_cut), ("stderr", ran.stderr_cut)] {
        if cut {
            notes.push(format!("{stream} was cut at {OUTPUT_CAP} bytes"));
        }
    }
    RunOutput {
        exit_code: ran.exit_code,
        stdout: ran.stdout,
        stderr: ran.stderr,
        timed_out: ran.timed_out,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}
