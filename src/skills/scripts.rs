//! A skill's scripts: the file to run is found through the same path checks as every other
//! skill file, so nothing outside the skill folder can run, and [`digest_set`] is what an
//! approval to run a skill's scripts is bound to. The run itself is [`crate::runner`]'s: in the
//! skill folder, with `SKILL_DIR` set, a scrubbed environment, a timeout and capped output.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::files::{self, FileError, Location};
use super::shelf::Shelf;
use super::{Error as SkillError, Skill};
use crate::folders::sha256;
use crate::runner;

/// The folder of a skill whose files are its scripts.
pub const SCRIPTS_FOLDER: &str = "scripts";

/// A script of a skill: its name in the script id, and its path in the skill folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptFile {
    /// `merge` (or `merge.py` when another file is `merge.sh`).
    pub name: String,
    /// `scripts/merge.py`.
    pub path: String,
}

/// The id under which the skills index lists a skill's script: `skill:{skill}:{script}`.
pub fn script_id(skill: &str, script: &str) -> String {
    format!("skill:{skill}:{script}")
}

/// The skill and script names of a script id, when `text` is one.
pub fn parse_script_id(text: &str) -> Option<(&str, &str)> {
    let (skill, script) = text.strip_prefix("skill:")?.split_once(':')?;
    (!skill.is_empty() && !script.is_empty()).then_some((skill, script))
}

impl Skill {
    /// The scripts the skill offers, the files directly in `scripts/`, each by its name in a
    /// script id (`skill:{name}:{script}`, [`script_id`]) and its path: the file name without its
    /// extension (`merge` for `scripts/merge.py`), or with it when two files share a stem.
    pub fn scripts(&self) -> Vec<ScriptFile> {
        let Ok(children) = self.location.children(SCRIPTS_FOLDER) else {
            return Vec::new();
        };
        let files: Vec<String> = children
            .into_iter()
            .filter(|child| !child.directory)
            .map(|child| child.name)
            .collect();
        let stem = |file: &str| {
            file.rsplit_once('.')
                .map_or(file, |(stem, _)| stem)
                .to_owned()
        };
        files
            .iter()
            .map(|file| {
                let shared = files
                    .iter()
                    .filter(|other| stem(other) == stem(file))
                    .count()
                    > 1;
                ScriptFile {
                    name: if shared { file.clone() } else { stem(file) },
                    path: format!("{SCRIPTS_FOLDER}/{file}"),
                }
            })
            .collect()
    }
}

/// Why a script cannot run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "skill `{skill}` is bundled into synapse-mcp and has no folder on disk, so its scripts cannot run; save a copy into a skills folder (SkillSave) to run them"
    )]
    Bundled { skill: String },
    #[error(transparent)]
    File(#[from] SkillError),
    #[error("the scripts of skill `{skill}` cannot run: {problem}")]
    Unbound { skill: String, problem: String },
    #[error(
        "which skill is `{script}` of? Give the skill's `name`, or the script's id as the skills index lists it, such as `skill:pdf-tools:merge`"
    )]
    NoSkill { script: String },
    #[error(
        "`{id}` is a script of skill `{skill}`, not of `{name}`; leave `name` out, or give the script's path in `{name}`"
    )]
    OtherSkill {
        id: String,
        skill: String,
        name: String,
    },
    #[error("skill `{skill}` has no script `{id}`; its scripts are: {known}")]
    UnknownScript {
        skill: String,
        id: String,
        known: String,
    },
    #[error(transparent)]
    Run(#[from] runner::Error),
}

/// How a call names a script: by its path in the skill folder, or by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named<'a> {
    /// `scripts/merge.py`.
    Path(&'a str),
    /// The script's name in its id `skill:{skill}:{script}` (`merge`).
    Id(&'a str),
}

/// The skill a call's script belongs to and how the script is named: `name` with a path, or a
/// script id (`skill:{name}:{script}`), with or without a `name` that agrees with it.
pub fn named<'a>(name: Option<&'a str>, script: &'a str) -> Result<(&'a str, Named<'a>), Error> {
    match (parse_script_id(script), name) {
        (Some((skill, _)), Some(name)) if name != skill => Err(Error::OtherSkill {
            id: script.to_owned(),
            skill: skill.to_owned(),
            name: name.to_owned(),
        }),
        (Some((skill, id)), _) => Ok((skill, Named::Id(id))),
        (None, Some(name)) => Ok((name, Named::Path(script))),
        (None, None) => Err(Error::NoSkill {
            script: script.to_owned(),
        }),
    }
}

/// Finds a script of the skill to run, by path or id (its `relative` is the path, cleaned:
/// `scripts/run.sh`); bundled skills and paths leaving the folder are refused.
pub fn locate(skill: &Skill, script: Named<'_>) -> Result<runner::Script, Error> {
    match script {
        Named::Path(path) => locate_path(skill, path),
        Named::Id(id) => {
            let scripts = skill.scripts();
            let Some(found) = scripts.iter().find(|script| script.name == id) else {
                let known: Vec<String> = scripts
                    .iter()
                    .map(|script| script_id(&skill.name, &script.name))
                    .collect();
                return Err(Error::UnknownScript {
                    skill: skill.name.clone(),
                    id: script_id(&skill.name, id),
                    known: if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    },
                });
            };
            locate_path(skill, &found.path)
        }
    }
}

fn locate_path(skill: &Skill, path: &str) -> Result<runner::Script, Error> {
    let Location::Disk(folder) = &skill.location else {
        return Err(Error::Bundled {
            skill: skill.name.clone(),
        });
    };
    let relative = files::clean_relative(path).map_err(|problem| SkillError::BadPath {
        path: path.to_owned(),
        problem,
    })?;
    let resolved = match skill.location.disk_path(&relative) {
        Some(Ok(resolved)) => resolved,
        Some(Err(FileError::Missing)) => {
            return Err(SkillError::UnknownFile {
                skill: skill.name.clone(),
                path: path.to_owned(),
                known: skill.files().join(", "),
            }
            .into());
        }
        Some(Err(FileError::Refused(problem))) => {
            return Err(SkillError::BadPath {
                path: path.to_owned(),
                problem,
            }
            .into());
        }
        Some(Err(
            problem @ (FileError::NotRegular | FileError::TooLarge { .. } | FileError::Binary),
        )) => {
            return Err(SkillError::Unreadable {
                skill: skill.name.clone(),
                path: path.to_owned(),
                problem: problem.to_string(),
            }
            .into());
        }
        Some(Err(FileError::Io { path, source })) => {
            return Err(SkillError::Io { path, source }.into());
        }
        None => {
            return Err(Error::Bundled {
                skill: skill.name.clone(),
            });
        }
    };
    Ok(runner::Script {
        relative,
        folder: folder.clone(),
        path: resolved,
    })
}

/// Runs a script of a skill in the skill folder, with `SKILL_DIR` naming that folder.
pub async fn run(
    script: &runner::Script,
    mut request: runner::Request,
    cancellation: &CancellationToken,
) -> Result<runner::Ran, Error> {
    request
        .environment
        .push(("SKILL_DIR", script.folder.clone().into_os_string()));
    Ok(runner::run(script, request, cancellation).await?)
}

/// One digest over every file of the skill folder as it is on disk now (read afresh in
/// blocks, not the cached manifest): `sha256` of the sorted `path digest` lines. Nothing is
/// skipped — `.git`, `node_modules` and deep folders count too — and a folder that cannot be
/// digested whole (a symlink leaving it, too many entries) cannot be approved, so nothing in
/// it runs.
pub fn digest_set(skill: &Skill) -> Result<String, Error> {
    let walk = skill.location.walk(files::EVERYTHING);
    if let Some(path) = walk.leaving.first() {
        return Err(Error::Unbound {
            skill: skill.name.clone(),
            problem: format!(
                "`{path}` is a symlink that leaves the skill folder, so what the script may use cannot be approved; replace the link with the file itself"
            ),
        });
    }
    if walk.truncated {
        return Err(Error::Unbound {
            skill: skill.name.clone(),
            problem: format!(
                "the folder has more than {} entries or is deeper than {} levels, so it cannot be digested whole for an approval",
                files::EVERYTHING.entries,
                files::EVERYTHING.depth
            ),
        });
    }
    let mut lines = String::new();
    for path in &walk.files {
        let (digest, _) =
            skill
                .location
                .digest(path, None)
                .map_err(|error| SkillError::Unreadable {
                    skill: skill.name.clone(),
                    path: path.clone(),
                    problem: error.to_string(),
                })?;
        lines.push_str(path);
        lines.push(' ');
        lines.push_str(&digest);
        lines.push('\n');
    }
    for path in &walk.special {
        lines.push_str(path);
        lines.push_str(" special\n");
    }
    Ok(sha256(lines.as_bytes()))
}

/// A run of a skill's script as a call asks for it: the script by `name` and `script` as
/// [`named`] reads them, its arguments, its input, and its timeout in seconds (1–300; the
/// default when `None`).
pub struct RunRequest {
    pub name: Option<String>,
    pub script: String,
    pub args: Vec<String>,
    pub stdin: Option<String>,
    pub timeout_seconds: Option<u64>,
}

/// How a run ended, and a note of what was cut or killed, when something was.
pub struct Finished {
    pub ran: runner::Ran,
    pub note: Option<String>,
}

/// The skill's files changed while the run waited for approval: nothing ran.
#[derive(Debug)]
pub struct Changed {
    pub skill: String,
}

impl std::fmt::Display for Changed {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "the files of skill `{}` changed while the run waited for approval, so nothing \
             ran; call SkillRunScript again to ask about the new version",
            self.skill
        )
    }
}

/// What the user approves before a script of a skill runs: the scope they read, and the digest
/// set of every file of the skill folder as it is now, which the approval is bound to. A bad
/// call, or a folder that cannot be digested whole, is refused here, before anyone is asked.
pub fn approval(
    shelf: &Shelf,
    name: Option<&str>,
    script: &str,
) -> Result<(String, String), Error> {
    let (name, script) = named(name, script)?;
    let library = shelf.library();
    let skill = library.get(name)?;
    let script = locate(skill, script)?;
    let digest = digest_set(skill)?;
    let scope = format!(
        "script `{}` of skill `{}` only, while every file of the skill folder stays as it is now ({digest})",
        script.relative, skill.name
    );
    Ok((scope, digest))
}

/// Runs the script a call names, unless the skill's files changed since `approved` (the digest
/// set the user approved, when they were asked).
pub async fn run_named(
    shelf: &Shelf,
    request: RunRequest,
    approved: Option<&str>,
    cancellation: &CancellationToken,
) -> Result<Result<Finished, Changed>, Error> {
    let (name, script) = named(request.name.as_deref(), &request.script)?;
    let script = locate(shelf.library().get(name)?, script)?;
    if let Some(approved) = approved
        && digest_set(shelf.library().get(name)?)? != approved
    {
        let skill = name.to_owned();
        return Ok(Err(Changed { skill }));
    }
    let timeout = (request.timeout_seconds)
        .map(|seconds| Duration::from_secs(seconds.max(1)).min(runner::MAX_TIMEOUT));
    let request = runner::Request {
        args: request.args,
        stdin: request.stdin,
        timeout,
        environment: Vec::new(),
    };
    let ran = run(&script, request, cancellation).await?;
    let note = note(&ran, timeout.unwrap_or(runner::DEFAULT_TIMEOUT));
    Ok(Ok(Finished { ran, note }))
}

/// What was cut or killed, when something was.
fn note(ran: &runner::Ran, timeout: Duration) -> Option<String> {
    let mut notes = Vec::new();
    if ran.timed_out {
        notes.push(format!(
            "the script was killed after {} s; pass a larger `timeoutSeconds` (at most 300) if it needs longer",
            timeout.as_secs()
        ));
    }
    for (stream, cut) in [("stdout", ran.stdout_cut), ("stderr", ran.stderr_cut)] {
        if cut {
            notes.push(format!("{stream} was cut at {} bytes", runner::OUTPUT_CAP));
        }
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::skills::frontmatter::Frontmatter;
    use crate::skills::validate::Fields;

    fn skill(folder: &Path) -> Skill {
        Skill::new(
            "runner".to_owned(),
            Fields::default(),
            &Frontmatter::new(),
            Location::Disk(folder.to_owned()),
            crate::skills::SKILL_MD,
        )
    }

    #[test]
    fn the_digest_set_changes_with_any_file() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("SKILL.md"), "---\nname: runner\n---\n").unwrap();
        std::fs::create_dir(folder.path().join("scripts")).unwrap();
        std::fs::write(folder.path().join("scripts/a.sh"), "echo a\n").unwrap();
        let skill = skill(folder.path());
        let first = digest_set(&skill).unwrap();
        assert_eq!(digest_set(&skill).unwrap(), first);
        std::fs::write(folder.path().join("scripts/a.sh"), "echo b\n").unwrap();
        let changed = digest_set(&skill).unwrap();
        assert_ne!(changed, first);
        std::fs::write(folder.path().join("notes.md"), "new\n").unwrap();
        assert_ne!(
            digest_set(&skill).unwrap(),
            changed,
            "a new file counts too"
        );
    }

    #[tokio::test]
    async fn a_script_is_found_by_its_cleaned_path_and_runs_in_its_skill_folder() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("where.sh"), "echo \"$SKILL_DIR|$PWD\"\n").unwrap();
        let script = locate(&skill(folder.path()), Named::Path("./where.sh")).unwrap();
        assert_eq!(script.relative, "where.sh");
        let ran = run(
            &script,
            runner::Request::default(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        let folder = folder.path().display();
        assert_eq!(ran.stdout, format!("{folder}|{folder}\n"));
    }

    #[test]
    fn a_script_id_names_its_skill_and_a_file_of_scripts() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir(folder.path().join("scripts")).unwrap();
        for file in ["merge.py", "split.sh", "split.py"] {
            std::fs::write(folder.path().join("scripts").join(file), "").unwrap();
        }
        let skill = skill(folder.path());
        let names: Vec<String> = skill.scripts().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["merge", "split.py", "split.sh"]);

        let (name, script) = named(None, "skill:runner:merge").unwrap();
        assert_eq!((name, script), ("runner", Named::Id("merge")));
        let found = locate(&skill, script).unwrap();
        assert_eq!(found.relative, "scripts/merge.py");
        assert_eq!(
            named(Some("runner"), "scripts/merge.py").unwrap(),
            ("runner", Named::Path("scripts/merge.py"))
        );

        let unknown = locate(&skill, Named::Id("split")).unwrap_err().to_string();
        assert_eq!(
            unknown,
            "skill `runner` has no script `skill:runner:split`; its scripts are: \
             skill:runner:merge, skill:runner:split.py, skill:runner:split.sh"
        );
        let other = named(Some("pdf"), "skill:runner:merge").unwrap_err();
        assert!(other.to_string().contains("not of `pdf`"), "{other}");
        let neither = named(None, "scripts/merge.py").unwrap_err();
        assert!(
            neither.to_string().contains("skill:pdf-tools:merge"),
            "{neither}"
        );
    }
}
