//! Running a script file: a skill's script (`SkillRunScript`) and a script tool both run here,
//! through this one runner. The interpreter comes from the file's
//! extension (`.sh` sh, `.py` python3, `.js`/`.mjs` node), else the file runs itself when it is
//! executable. It runs in its folder with a scrubbed environment (only `PATH`, `HOME`, `LANG`,
//! `TMPDIR` and what the caller adds), its output piped and capped (the server's stdout is the
//! protocol, so it is never inherited), stdin given or closed, and a timeout; at the timeout, at
//! the cancellation of the call, and when it exits, whatever it started is killed. On Linux the
//! server runs each script under a reaper (`runner/reaper.rs`, the binary re-executed): a
//! session of its own, the subreaper of its script, which kills the script's group and every
//! descendant left (one that left the group or the session, or cleared its environment, too).
//! Elsewhere, and when the library runs without the binary, the script's process group and the
//! processes carrying the run's marker variable are killed.
//!
//! Where a script may be and what an approval to run it is bound to are the callers' business
//! (`skills/scripts.rs`, `script_tools`); nothing here knows skills or tools.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

#[cfg(target_os = "linux")]
pub mod pids;
#[cfg(target_os = "linux")]
pub mod reaper;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// How long a script may run unless the caller says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a caller may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_mins(5);
/// How much of stdout and of stderr is kept, each.
pub const OUTPUT_CAP: usize = 1024 * 1024;
/// How long the output pipes may stay open after the script ended (a background child of the
/// script may hold them).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Why a script did not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "`{path}` has no known extension (.sh, .py, .js, .mjs) and is not executable; give it one of these extensions, or a shebang line and the execute bit (chmod +x)"
    )]
    NotRunnable { path: String },
    #[error("cannot start `{program}` for `{path}`: {source}; is it installed and on PATH?")]
    Spawn {
        program: String,
        path: String,
        source: std::io::Error,
    },
    #[error("cannot wait for `{path}`: {source}")]
    Wait {
        path: String,
        source: std::io::Error,
    },
}

/// A script file that its caller found where it may be.
#[derive(Debug, Clone)]
pub struct Script {
    /// How errors name it: its path relative to its folder (`scripts/run.sh`).
    pub relative: String,
    /// Where it runs.
    pub folder: PathBuf,
    pub path: PathBuf,
}

/// What to run the script with.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub args: Vec<String>,
    pub stdin: Option<String>,
    pub timeout: Option<Duration>,
    /// Variables set besides the few kept from the server's environment (`SKILL_DIR`,
    /// `TOOL_DIR`).
    pub environment: Vec<(&'static str, OsString)>,
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

/// Runs the script to its end, its timeout, or the cancellation of the call.
pub async fn run(
    script: &Script,
    request: Request,
    cancellation: &CancellationToken,
) -> Result<Ran, Error> {
    let timeout = request.timeout.unwrap_or(DEFAULT_TIMEOUT).min(MAX_TIMEOUT);
    let (program, leading) = program(script)?;
    let reaper = REAPER.get();
    let mut command = match reaper {
        Some(reaper) => {
            let mut command = Command::new(reaper);
            command.arg(REAP_SUBCOMMAND).arg(&program);
            command
        }
        None => Command::new(&program),
    };
    command
        .args(&leading)
        .args(&request.args)
        .current_dir(&script.folder)
        .stdin(if request.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A dropped call stops the reaper with `SIGTERM` (it then kills the rest); a `SIGKILL`
        // on top would leave the rest to init.
        .kill_on_drop(reaper.is_none());
    scrub_environment(&mut command, &request.environment);
    let marker = uuid::Uuid::new_v4().simple().to_string();
    command.env(RUN_MARKER, &marker);
    // The reaper makes a session of its own, which a group leader cannot.
    #[cfg(unix)]
    if reaper.is_none() {
        command.process_group(0);
    }
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        program: program.display().to_string(),
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
    let mut group = ProcessGroup::of(&child, marker, reaper.is_some());
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
        // The reaper, told to stop, kills what is left and ends; a reaper that does not is
        // killed.
        let stopped = tokio::time::timeout(REAPER_GRACE, child.wait()).await;
        if !matches!(stopped, Ok(Ok(_)))
            && let Err(error) = child.kill().await
        {
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

/// Whether a file can run: it has a known extension, or it is executable.
pub fn runnable(path: &Path) -> bool {
    interpreter(path).is_some() || is_executable(path)
}

/// The interpreter a file's extension calls for.
fn interpreter(path: &Path) -> Option<&'static str> {
    match path.extension().and_then(|extension| extension.to_str()) {
        Some("sh") => Some("sh"),
        Some("py") => Some("python3"),
        Some("js" | "mjs") => Some("node"),
        _ => None,
    }
}

/// The program to run and its first arguments: the interpreter by extension with the file, or
/// the file itself when it is executable (a shebang).
fn program(script: &Script) -> Result<(OsString, Vec<OsString>), Error> {
    if let Some(interpreter) = interpreter(&script.path) {
        return Ok((
            interpreter.into(),
            vec![script.path.clone().into_os_string()],
        ));
    }
    if is_executable(&script.path) {
        return Ok((script.path.clone().into_os_string(), Vec::new()));
    }
    Err(Error::NotRunnable {
        path: script.relative.clone(),
    })
}

/// The binary that reaps scripts (`__reap`), once [`use_reaper`] set it.
static REAPER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
#[cfg(target_os = "linux")]
const REAP_SUBCOMMAND: &str = reaper::SUBCOMMAND;
#[cfg(not(target_os = "linux"))]
const REAP_SUBCOMMAND: &str = "__reap";
/// How long a reaper told to stop may take to kill what is left and end.
const REAPER_GRACE: Duration = Duration::from_secs(2);

/// Runs every script from now on under the reaper, the running binary re-executed (Linux; the
/// binary's `main` answers `__reap`). A library user without that binary keeps the group and
/// marker kills.
pub fn use_reaper() {
    #[cfg(target_os = "linux")]
    match std::env::current_exe() {
        Ok(binary) => {
            REAPER.set(binary).ok();
        }
        Err(error) => {
            tracing::warn!(%error, "cannot find the running binary; scripts run without the reaper");
        }
    }
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
fn scrub_environment(command: &mut Command, environment: &[(&'static str, OsString)]) {
    command.env_clear();
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    command.env("PATH", path);
    for name in ["HOME", "LANG", "TMPDIR"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    for (name, value) in environment {
        command.env(name, value);
    }
}

/// The variable that marks every process a run starts, inherited through forks and `setsid`.
const RUN_MARKER: &str = "SYNAPSE_SCRIPT_RUN";

/// A script's processes: its process group while the script lives, and everything carrying
/// the run's marker. Killed on drop, so that what the script started dies with it even when
/// the call's future is dropped mid-run.
struct ProcessGroup {
    leader: Option<u32>,
    marker: Option<String>,
    /// The leader is the reaper: it is told to stop (`SIGTERM`), and kills the rest itself.
    reaper: bool,
}

impl ProcessGroup {
    fn of(child: &tokio::process::Child, marker: String, reaper: bool) -> Self {
        Self {
            leader: child.id(),
            marker: Some(marker),
            reaper,
        }
    }

    /// Under a reaper, tells it to stop (it kills the rest itself; the marker would kill the
    /// reaper too); else kills the group and what carries the marker.
    fn kill(&mut self) {
        if let Some(leader) = self.leader.take() {
            if self.reaper {
                stop_reaper(leader);
                return;
            }
            kill_process_group(leader);
        }
        self.kill_marked();
    }

    fn kill_marked(&mut self) {
        if let Some(marker) = self.marker.take() {
            kill_marked(&marker);
        }
    }

    /// The script (or its reaper) was reaped: its id may be reused, so its group is left alone
    /// from now on; what carries the marker is killed.
    fn disarm(&mut self) {
        self.leader = None;
        self.kill_marked();
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills a process group by its leader's id: a script's, or an upstream MCP server's with
/// whatever it started.
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

/// Tells a reaper to kill its script and all it left, and end.
#[cfg(unix)]
fn stop_reaper(reaper: u32) {
    let pid = i32::try_from(reaper)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid
        && let Err(error) = rustix::process::kill_process(pid, rustix::process::Signal::TERM)
    {
        tracing::debug!(%error, "cannot stop a script's reaper");
    }
}

#[cfg(not(unix))]
fn stop_reaper(_reaper: u32) {}

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

    fn script(folder: &Path, name: &str, source: &str) -> Script {
        std::fs::write(folder.join(name), source).unwrap();
        Script {
            relative: name.to_owned(),
            folder: folder.to_owned(),
            path: folder.join(name),
        }
    }

    #[test]
    fn a_file_without_interpreter_or_execute_bit_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        let data = script(folder.path(), "data.txt", "x");
        let error = program(&data).unwrap_err();
        assert!(error.to_string().contains("no known extension"), "{error}");
    }

    #[tokio::test]
    async fn output_past_the_cap_is_cut_and_drained() {
        let folder = tempfile::tempdir().unwrap();
        let big = script(
            folder.path(),
            "big.sh",
            "head -c 2000000 /dev/zero | tr '\\0' x\necho done >&2\n",
        );
        let ran = run(&big, Request::default(), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            (ran.exit_code, ran.stdout.len(), ran.stdout_cut),
            (Some(0), OUTPUT_CAP, true)
        );
        assert_eq!((ran.stderr.as_str(), ran.stderr_cut), ("done\n", false));
    }

    #[tokio::test]
    async fn only_the_kept_and_given_variables_reach_the_script() {
        let folder = tempfile::tempdir().unwrap();
        let printer = script(
            folder.path(),
            "env.sh",
            "echo \"${TOOL_DIR:-none} ${CARGO_PKG_NAME:-unset}\"\n",
        );
        let request = Request {
            environment: vec![("TOOL_DIR", "/tools/text".into())],
            ..Request::default()
        };
        let ran = run(&printer, request, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(ran.stdout, "/tools/text unset\n");
    }

    #[tokio::test]
    async fn a_timeout_kills_what_the_script_started() {
        let folder = tempfile::tempdir().unwrap();
        let hang = script(
            folder.path(),
            "hang.sh",
            "sleep 60 &\necho $! > \"$PWD/pid\"\nwait\n",
        );
        let request = Request {
            timeout: Some(Duration::from_millis(500)),
            ..Request::default()
        };
        let ran = run(&hang, request, &CancellationToken::new())
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
