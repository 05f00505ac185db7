//! Running a skill's script: the file is found through the same path checks as
//! every other skill file, so nothing outside the skill folder can run; it runs in the skill
//! folder with a scrubbed environment, a timeout that kills its whole process group, its output
//! piped and capped (the server's stdout is the protocol, so it is never inherited), and stdin
//! given or closed. [`digest_set`] is what an approval to run a skill's scripts is bound to.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::files::{self, FileError, Location};
use super::{Error as SkillError, Skill, sha256};

/// How long a script may run unless the call says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_mins(5);
/// How much of stdout and of stderr is kept, each.
pub const OUTPUT_CAP: usize = 1024 * 1024;
/// How long the output pipes may stay open after the script ended (a background child of the
/// script may hold them).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Why a script cannot run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "skill `{skill}` is bundled into synapse-mcp and has no folder on disk, so its scripts cannot run; save a copy into a skills folder (SkillSave) to run them"
    )]
    Bundled { skill: String },
    #[error(transparent)]
    File(#[from] SkillError),
    #[error(
        "`{path}` of skill `{skill}` has no known extension (.sh, .py, .js) and is not executable; run a file under `scripts/` such as `scripts/run.sh`"
    )]
    NotRunnable { skill: String, path: String },
    #[error("cannot start `{program}` for `{path}`: {source}; is it installed and on PATH?")]
    Spawn {
        program: String,
        path: String,
        source: std::io::Error,
    },
    #[error("the scripts of skill `{skill}` cannot run: {problem}")]
    Unbound { skill: String, problem: String },
    #[error("cannot wait for `{path}`: {source}")]
    Wait {
        path: String,
        source: std::io::Error,
    },
}

/// A script that passed the path checks.
#[derive(Debug, Clone)]
pub struct Script {
    pub skill: String,
    /// As the caller gave it, cleaned (`scripts/run.sh`).
    pub relative: String,
    pub folder: PathBuf,
    pub path: PathBuf,
}

/// What to run the script with.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub args: Vec<String>,
    pub stdin: Option<String>,
    pub timeout: Option<Duration>,
}

/// How the script ended and what it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// `None` when the script was killed (by the timeout or a signal).
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub stdout_cut: bool,
    pub stderr_cut: bool,
}

/// Finds a file of the skill to run; bundled skills and paths leaving the folder are refused.
pub fn locate(skill: &Skill, path: &str) -> Result<Script, Error> {
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
    Ok(Script {
        skill: skill.name.clone(),
        relative,
        folder: folder.clone(),
        path: resolved,
    })
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

/// Runs the script to its end, its timeout, or the cancellation of the call.
pub async fn run(
    script: &Script,
    request: Request,
    cancellation: &CancellationToken,
) -> Result<Ran, Error> {
    let timeout = request.timeout.unwrap_or(DEFAULT_TIMEOUT).min(MAX_TIMEOUT);
    let mut command = command(script)?;
    command
        .args(&request.args)
        .current_dir(&script.folder)
        .stdin(if request.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    scrub_environment(&mut command, &script.folder);
    let marker = uuid::Uuid::new_v4().simple().to_string();
    command.env(RUN_MARKER, &marker);
    #[cfg(unix)]
    command.process_group(0);
    let program = command.as_std().get_program().display().to_string();
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        program,
        path: script.relative.clone(),
        source,
    })?;
    if let (Some(mut pipe), Some(input)) = (child.stdin.take(), request.stdin) {
        tokio::spawn(async move {
            // A script that does not read its stdin closes the pipe early; that is its choice.
            if let Err(error) = pipe.write_all(input.as_bytes()).await {
                tracing::debug!(%error, "a script did not read all of its stdin");
            }
        });
    }
    // Armed until the script is reaped: a cancelled call drops this future at an await, and
    // `kill_on_drop` alone reaches only the script, not what it started in its group.
    let mut group = ProcessGroup::of(&child, marker);
    let stdout = Captured::start(child.stdout.take());
    let stderr = Captured::start(child.stderr.take());
    let wait_error = |source| Error::Wait {
        path: script.relative.clone(),
        source,
    };
    let (status, timed_out) = tokio::select! {
        status = child.wait() => (Some(status.map_err(wait_error)?), false),
        () = tokio::time::sleep(timeout) => (None, true),
        () = cancellation.cancelled() => (None, false),
    };
    if status.is_none() {
        group.kill();
        if let Err(error) = child.kill().await {
            tracing::warn!(%error, script = %script.relative, "cannot kill a script");
        }
    }
    // The script is reaped; what it started and left running (in its group, or escaped into
    // a session of its own with `setsid`) dies now, so nothing holds the output pipes open.
    group.disarm();
    let (stdout, stdout_cut) = stdout.finish().await;
    let (stderr, stderr_cut) = stderr.finish().await;
    Ok(Ran {
        exit_code: status.and_then(|status| status.code()),
        stdout,
        stderr,
        timed_out,
        stdout_cut,
        stderr_cut,
    })
}

/// The interpreter by extension, or the file itself when it is executable (a shebang).
fn command(script: &Script) -> Result<Command, Error> {
    let interpreter = match script
        .path
        .extension()
        .and_then(|extension| extension.to_str())
    {
        Some("sh") => Some("sh"),
        Some("py") => Some("python3"),
        Some("js" | "mjs") => Some("node"),
        _ => None,
    };
    if let Some(interpreter) = interpreter {
        let mut command = Command::new(interpreter);
        command.arg(&script.path);
        return Ok(command);
    }
    if is_executable(&script.path) {
        return Ok(Command::new(&script.path));
    }
    Err(Error::NotRunnable {
        skill: script.skill.clone(),
        path: script.relative.clone(),
    })
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|metadata| metadata.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(_path: &Path) -> bool {
    false
}

/// Only what a script needs: no tokens or keys of the server's environment leak into it.
fn scrub_environment(command: &mut Command, folder: &Path) {
    command.env_clear();
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    command.env("PATH", path);
    for name in ["HOME", "LANG", "TMPDIR"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.env("SKILL_DIR", folder);
}

/// The variable that marks every process a run starts, inherited through forks and `setsid`.
const RUN_MARKER: &str = "SYNAPSE_SCRIPT_RUN";

/// A script's processes: its process group while the script lives, and everything carrying
/// the run's marker. Killed on drop, so that what the script started dies with it even when
/// the call's future is dropped mid-run.
struct ProcessGroup {
    leader: Option<u32>,
    marker: Option<String>,
}

impl ProcessGroup {
    fn of(child: &tokio::process::Child, marker: String) -> Self {
        Self {
            leader: child.id(),
            marker: Some(marker),
        }
    }

    fn kill(&mut self) {
        if let Some(leader) = self.leader.take() {
            kill_process_group(leader);
        }
        if let Some(marker) = self.marker.take() {
            kill_marked(&marker);
        }
    }

    /// The script was reaped: its id may be reused, so its group is left alone from now on;
    /// what carries the marker is killed.
    fn disarm(&mut self) {
        self.leader = None;
        self.kill();
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills a process group by its leader's id: a skill script's, or an upstream MCP server's
/// with whatever it started.
#[cfg(unix)]
pub fn kill_process_group(leader: u32) {
    let group = i32::try_from(leader)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(group) = group
        && let Err(error) =
            rustix::process::kill_process_group(group, rustix::process::Signal::KILL)
    {
        tracing::debug!(%error, "cannot kill a process group");
    }
}

#[cfg(not(unix))]
pub fn kill_process_group(_leader: u32) {}

/// Kills every process whose environment carries this run's marker (found in `/proc`), a few
/// rounds so that a process forked during a round is caught by the next.
#[cfg(target_os = "linux")]
fn kill_marked(marker: &str) {
    let wanted = format!("{RUN_MARKER}={marker}");
    for _ in 0..4 {
        let found = marked_processes(wanted.as_bytes());
        if found.is_empty() {
            return;
        }
        for pid in found {
            if let Err(error) = rustix::process::kill_process(pid, rustix::process::Signal::KILL) {
                tracing::debug!(%error, "cannot kill a process a script left running");
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn marked_processes(wanted: &[u8]) -> Vec<rustix::process::Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let environment = std::fs::read(entry.path().join("environ")).ok()?;
            environment
                .split(|byte| *byte == 0)
                .any(|variable| variable == wanted)
                .then(|| rustix::process::Pid::from_raw(pid))
                .flatten()
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn kill_marked(_marker: &str) {}

/// One output pipe read into a capped buffer beside the script; what was read is kept even if
/// the pipe never closes.
struct Captured {
    kept: Arc<Mutex<(Vec<u8>, bool)>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Captured {
    fn start(pipe: Option<impl AsyncRead + Unpin + Send + 'static>) -> Self {
        let kept = Arc::new(Mutex::new((Vec::new(), false)));
        let filling = kept.clone();
        let reader = tokio::spawn(async move {
            let Some(mut pipe) = pipe else {
                return;
            };
            let mut buffer = vec![0_u8; 16 * 1024];
            loop {
                let read = match pipe.read(&mut buffer).await {
                    Ok(0) => break,
                    Ok(read) => read,
                    Err(error) => {
                        tracing::debug!(%error, "cannot read a script's output");
                        break;
                    }
                };
                // Past the cap the pipe is still drained, so the script is never blocked.
                let mut kept = filling.lock().unwrap_or_else(PoisonError::into_inner);
                let room = OUTPUT_CAP.saturating_sub(kept.0.len());
                kept.0.extend_from_slice(&buffer[..read.min(room)]);
                kept.1 |= read > room;
            }
        });
        Self { kept, reader }
    }

    async fn finish(mut self) -> (String, bool) {
        if tokio::time::timeout(DRAIN_GRACE, &mut self.reader)
            .await
            .is_err()
        {
            self.reader.abort();
        }
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        (String::from_utf8_lossy(&kept.0).into_owned(), kept.1)
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn a_file_without_interpreter_or_execute_bit_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("data.txt"), "x").unwrap();
        let script = locate(&skill(folder.path()), "./data.txt").unwrap();
        assert_eq!(script.relative, "data.txt");
        let error = command(&script).unwrap_err();
        assert!(error.to_string().contains("no known extension"), "{error}");
    }

    #[tokio::test]
    async fn output_past_the_cap_is_cut_and_drained() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(
            folder.path().join("big.sh"),
            "head -c 2000000 /dev/zero | tr '\\0' x\necho done >&2\n",
        )
        .unwrap();
        let script = locate(&skill(folder.path()), "big.sh").unwrap();
        let ran = run(&script, Request::default(), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            (ran.exit_code, ran.stdout.len(), ran.stdout_cut),
            (Some(0), OUTPUT_CAP, true)
        );
        assert_eq!((ran.stderr.as_str(), ran.stderr_cut), ("done\n", false));
    }

    #[tokio::test]
    async fn a_timeout_kills_what_the_script_started() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(
            folder.path().join("hang.sh"),
            "sleep 60 &\necho $! > \"$SKILL_DIR/pid\"\nwait\n",
        )
        .unwrap();
        let script = locate(&skill(folder.path()), "hang.sh").unwrap();
        let request = Request {
            timeout: Some(Duration::from_millis(500)),
            ..Request::default()
        };
        let ran = run(&script, request, &CancellationToken::new())
            .await
            .unwrap();
        assert!(ran.timed_out && ran.exit_code.is_none(), "{ran:?}");
        let pid = std::fs::read_to_string(folder.path().join("pid")).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        for _ in 0..50 {
            let alive = std::fs::read_to_string(&stat).is_ok_and(|stat| !stat.contains(") Z "));
            if !alive {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the background `sleep` outlived the timeout");
    }
}
