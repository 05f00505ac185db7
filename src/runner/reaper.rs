//! The script reaper: a small process between the server and one script, the binary itself
//! re-executed as `synapse-mcp __reap PROGRAM ARGS…` (Linux). It starts a session of its own,
//! becomes the child subreaper of what it starts (`PR_SET_CHILD_SUBREAPER`), runs the script in
//! a process group of its own, and when the script ends — by itself, or because the server sent
//! the reaper `SIGTERM` (the timeout, a cancelled call, the server's own exit, which it learns
//! from `PR_SET_PDEATHSIG`) — kills the script's group and every process left that was reparented
//! to it: a child that left the group (`setsid`, a new session, `env -i`) is still a descendant,
//! and an orphaned descendant comes to the subreaper, never to init. It exits with the script's
//! status (a script killed by a signal makes the reaper die of the same signal). The script and
//! what it starts have at most [`PROCESS_LIMIT`] processes at once (`runner/pids.rs`).
//!
//! Without unsafe code: `rustix` does the `prctl`s, `setsid`, `kill` and `waitpid`.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use super::pids::{Ceiling, PROCESS_LIMIT};

/// The hidden first argument that makes the binary a reaper.
pub const SUBCOMMAND: &str = "__reap";

/// Rounds of killing what is left before the reaper gives up (each waits [`ROUND`]).
const ROUNDS: usize = 200;
const ROUND: Duration = Duration::from_millis(10);

/// The program and arguments when the binary was started as a reaper.
pub fn asked() -> Option<(OsString, Vec<OsString>)> {
    let mut arguments = std::env::args_os().skip(1);
    if arguments.next()? != SUBCOMMAND {
        return None;
    }
    let program = arguments.next()?;
    Some((program, arguments.collect()))
}

/// Runs `program` with `arguments` as the reaper; gives the exit code to end with.
pub async fn serve(program: OsString, arguments: Vec<OsString>) -> ExitCode {
    use rustix::process::{Signal, getpid, set_child_subreaper, set_parent_process_death_signal};
    use std::os::unix::process::ExitStatusExt as _;
    // A session of our own: the script and what it starts are apart from the server's terminal
    // and group. Failing, the reaper still collects what it can.
    if let Err(error) = rustix::process::setsid() {
        eprintln_reaper(&format!("cannot start a session: {error}"));
    }
    if let Err(error) = set_child_subreaper(Some(getpid())) {
        eprintln_reaper(&format!("cannot become a subreaper: {error}"));
    }
    if let Err(error) = set_parent_process_death_signal(Some(Signal::TERM)) {
        eprintln_reaper(&format!("cannot follow the server's exit: {error}"));
    }
    let Ok(mut ended) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    else {
        eprintln_reaper("cannot watch for SIGTERM");
        return ExitCode::from(125);
    };
    // Whatever the script starts counts against its ceiling from here on.
    let ceiling = Ceiling::apply(PROCESS_LIMIT);
    let mut command = tokio::process::Command::new(&program);
    command.args(&arguments).process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            ceiling.release();
            eprintln_reaper(&format!("cannot start {}: {error}", program.display()));
            return ExitCode::from(127);
        }
    };
    let group = child.id();
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        _ = ended.recv() => None,
    };
    sweep(group);
    ceiling.release();
    if let Some(code) = status.and_then(|status| status.code()) {
        return ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1));
    }
    // Killed by a signal: die of the same one, so the server sees the script killed. Asked to
    // stop: everything is gone, and the reaper ends as killed.
    let signal = status
        .and_then(|status| status.signal())
        .and_then(Signal::from_named_raw)
        .unwrap_or(Signal::KILL);
    if let Err(error) = rustix::process::kill_process(getpid(), signal) {
        eprintln_reaper(&format!("cannot pass the script's end on: {error}"));
    }
    std::thread::sleep(ROUND);
    ExitCode::from(1)
}

/// Kills the script's group and every process left under the reaper, until none is left.
fn sweep(group: Option<u32>) {
    use rustix::process::{Pid, Signal, WaitOptions, getpid, kill_process, kill_process_group};
    if let Some(group) = group
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw)
    {
        // Gone already when the script's group had no one else.
        kill_process_group(group, Signal::KILL).ok();
    }
    let me = getpid();
    for _ in 0..ROUNDS {
        let left = children_of(me.as_raw_nonzero().get());
        if left.is_empty() {
            break;
        }
        for pid in left {
            // A child may exit between the listing and the kill.
            kill_process(pid, Signal::KILL).ok();
        }
        std::thread::sleep(ROUND);
        // Reap what was killed; they may have orphans of their own, which come to us next.
        while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
    }
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

/// The processes whose parent is `parent` (from `/proc/*/stat`, not yet reaped).
fn children_of(parent: i32) -> Vec<rustix::process::Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let id = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`; the name may hold spaces and parentheses.
            let after_name = &stat[stat.rfind(')')? + 1..];
            let mut fields = after_name.split_whitespace();
            let state = fields.next()?;
            let parent_of: i32 = fields.next()?.parse().ok()?;
            (parent_of == parent && state != "Z")
                .then(|| rustix::process::Pid::from_raw(id))
                .flatten()
        })
        .collect()
}

/// The reaper's own complaints go to its stderr, which is the script's: they reach the caller
/// with the script's output.
fn eprintln_reaper(message: &str) {
    use std::io::Write as _;
    let mut stderr = std::io::stderr().lock();
    writeln!(stderr, "synapse-mcp reaper: {message}").ok();
}
