//! Keeping one upstream server running. A session starts the program (in a process group of its
//! own, stdout for the protocol, stderr into our log, never ours), connects as its client, lists
//! its tools and lists them again on each `tools/list_changed`. When the server exits, cannot
//! start or does not answer, the next try comes after a pause that doubles from 250 ms up to
//! 30 s (back to 250 ms once a session has lasted a minute), and meanwhile its tools answer why
//! they cannot run. Nothing an upstream does reaches past its task: synapse-mcp goes on serving.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::Tool as WireTool;
use rmcp::service::QuitReason;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::link::{Handler, Link, State};
use super::settings::Upstream;
use super::tool;
use super::wire::{self, Wire};
use crate::runner::kill_process_group;
use crate::tools::{Registry, ToolGroup};

/// How long a server may take to answer `initialize` and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// The first pause before a restart; each failed try doubles it, up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(250);
const LONGEST_PAUSE: Duration = Duration::from_secs(30);
/// A session that lasted this long was healthy: the next failure starts the pauses over.
const HEALTHY: Duration = Duration::from_mins(1);
/// Lines of the server's stderr kept to explain why it stopped.
const LAST_WORDS: usize = 3;
/// Bytes of one line of the server's stderr kept (in the log and its last words).
const STDERR_LINE: usize = 4 * 1024;
/// Bytes of the server's stderr logged per session; the rest is read and not logged.
const STDERR_LOGGED: usize = 1 << 20;
/// How long the rest of a stopped server's stderr may take to arrive.
const STDERR_DRAIN: Duration = Duration::from_secs(1);

/// A running supervisor; [`Supervised::stop`] ends it with the server's processes.
pub(super) struct Supervised {
    pub(super) upstream: Upstream,
    pub(super) link: Arc<Link>,
    stop: CancellationToken,
    process: Arc<Process>,
}

impl Supervised {
    /// Starts supervising `upstream`, whose group it keeps in `registry`; `first` hears when
    /// the first try ended (the tools listed, or the try failed).
    pub(super) fn start(
        upstream: Upstream,
        registry: Arc<Registry>,
        first: oneshot::Sender<()>,
    ) -> Self {
        let link = Arc::new(Link::new(&upstream.name));
        let stop = CancellationToken::new();
        let process = Arc::new(Process::default());
        let supervisor = Supervisor {
            upstream: upstream.clone(),
            link: Arc::clone(&link),
            registry,
            first: Some(first),
            published: None,
            process: Arc::clone(&process),
            stderr: None,
            stop: stop.clone(),
        };
        tokio::spawn(supervisor.run());
        Self {
            upstream,
            link,
            stop,
            process,
        }
    }

    /// Stops supervising: its tools answer that it was stopped, and its processes are killed.
    pub(super) fn stop(&self) {
        self.link.set(State::Stopped);
        self.stop.cancel();
        self.process.kill();
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The server's process group, while a session runs.
#[derive(Default)]
struct Process(Mutex<Option<u32>>);

impl Process {
    fn set(&self, leader: Option<u32>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = leader;
    }

    /// Kills the group: what the server started dies with it (an `npx` leaves a `node`).
    fn kill(&self) {
        if let Some(leader) = self.0.lock().unwrap_or_else(PoisonError::into_inner).take() {
            kill_process_group(leader);
        }
    }
}

struct Supervisor {
    upstream: Upstream,
    link: Arc<Link>,
    registry: Arc<Registry>,
    first: Option<oneshot::Sender<()>>,
    /// The listing the registry holds, so that an unchanged one is not published again.
    published: Option<Vec<WireTool>>,
    process: Arc<Process>,
    /// The session's stderr, read into our log: the task and the last lines it read.
    stderr: Option<(tokio::task::JoinHandle<()>, LastWords)>,
    /// Cancelled when the owner stops supervising: from then on the supervisor changes nothing.
    stop: CancellationToken,
}

/// The last lines a server wrote on stderr.
type LastWords = Arc<Mutex<VecDeque<String>>>;

impl Supervisor {
    async fn run(mut self) {
        let name = self.upstream.name.clone();
        let stop = self.stop.clone();
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let began = Instant::now();
            let reason = tokio::select! {
                biased;
                () = stop.cancelled() => return,
                reason = self.session() => reason,
            };
            self.process.kill();
            let reason = self.with_last_words(reason).await;
            if stop.is_cancelled() {
                return;
            }
            if began.elapsed() >= HEALTHY {
                attempt = 1;
            }
            let pause = pause(attempt);
            tracing::warn!(upstream = %name, attempt, "the MCP server stopped ({reason}); trying again in {:.1} s", pause.as_secs_f64());
            self.link.set(State::Down {
                reason,
                attempt,
                retry_at: Instant::now() + pause,
            });
            if let Some(first) = self.first.take() {
                // The first try failed: the group is served without tools until a try works
                // (after a reload, the tools of the server's earlier configuration go).
                self.replace(super::empty_group(&self.upstream));
                first.send(()).ok();
            }
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Starts the server's process in a process group of its own, its pipes taken; or why not.
    fn spawn(
        &self,
    ) -> Result<
        (
            tokio::process::Child,
            tokio::process::ChildStdin,
            tokio::process::ChildStdout,
        ),
        String,
    > {
        let upstream = &self.upstream;
        let mut command = tokio::process::Command::new(&upstream.command);
        command.args(&upstream.args).envs(&upstream.env);
        if let Some(folder) = &upstream.cwd {
            command.current_dir(folder);
        }
        #[cfg(unix)]
        command.process_group(0);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|error| format!("cannot start `{}`: {error}", upstream.command))?;
        self.process.set(child.id());
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!(
                "cannot start `{}`: its stdin or stdout is missing",
                upstream.command
            ));
        };
        Ok((child, stdin, stdout))
    }

    /// One session, from start to its end; gives why it ended.
    async fn session(&mut self) -> String {
        let (mut child, stdin, stdout) = match self.spawn() {
            Ok(started) => started,
            Err(reason) => return reason,
        };
        let upstream = &self.upstream;
        let shared = Arc::new(wire::Shared::default());
        let transport = Wire::new(stdout, stdin, upstream.limits, Arc::clone(&shared));
        if let Some(stderr) = child.stderr.take() {
            let last_words = LastWords::default();
            let task = tokio::spawn(forward_stderr(
                upstream.name.clone(),
                stderr,
                Arc::clone(&last_words),
            ));
            self.stderr = Some((task, last_words));
        }
        let handler = Handler {
            link: Arc::clone(&self.link),
        };
        let connected = tokio::time::timeout(START_TIMEOUT, async {
            let running = handler
                .serve(transport)
                .await
                .map_err(|error| format!("`initialize` failed: {error}"))?;
            let tools = running
                .peer()
                .list_all_tools()
                .await
                .map_err(|error| format!("`tools/list` failed: {error}"))?;
            Ok::<_, String>((running, tools))
        })
        .await;
        let (running, tools) = match connected {
            Ok(Ok(connected)) => connected,
            Ok(Err(reason)) => return reason,
            Err(_) => {
                return format!(
                    "it did not answer `initialize` and `tools/list` within {} s",
                    START_TIMEOUT.as_secs()
                );
            }
        };
        let peer = running.peer().clone();
        let instructions = peer.peer_info().and_then(|info| info.instructions.clone());
        if self.stop.is_cancelled() {
            return "stopped".to_owned();
        }
        self.link.set(State::Up(peer.clone()));
        tracing::info!(upstream = %upstream.name, tools = tools.len(), "MCP server connected");
        self.publish(tools, instructions.as_deref());
        let mut waiting = std::pin::pin!(running.waiting());
        loop {
            tokio::select! {
                // The wire ended the session (a flood, a server that stopped reading): the
                // session stops at once, whatever rmcp still waits for.
                reason = shared.until_ended() => return reason,
                ended = &mut waiting => {
                    if let Some(reason) = shared.ended() {
                        return reason;
                    }
                    return match ended {
                        Ok(QuitReason::Closed) => "its connection closed: the process exited".to_owned(),
                        Ok(reason) => format!("its session ended: {reason:?}"),
                        Err(error) => format!("its session failed: {error}"),
                    };
                }
                () = self.link.relist.notified() => match peer.list_all_tools().await {
                    Ok(tools) => self.publish(tools, instructions.as_deref()),
                    Err(error) => {
                        tracing::warn!(upstream = %self.upstream.name, %error, "cannot list the tools again");
                    }
                },
            }
        }
    }

    /// Serves a listing, unless the registry holds the same one already; the first time, tells
    /// the owner.
    fn publish(&mut self, tools: Vec<WireTool>, instructions: Option<&str>) {
        if self.published.as_ref() != Some(&tools) {
            let group = tool::group(&self.upstream, &self.link, &tools, instructions);
            self.published = Some(tools);
            self.replace(group);
        }
        if let Some(first) = self.first.take() {
            first.send(()).ok();
        }
    }

    /// The reason a session ended, with the last lines the server wrote on stderr (read to its
    /// end first: the server's processes are gone by now).
    async fn with_last_words(&mut self, reason: String) -> String {
        let Some((task, last_words)) = self.stderr.take() else {
            return reason;
        };
        if tokio::time::timeout(STDERR_DRAIN, task).await.is_err() {
            tracing::debug!(upstream = %self.upstream.name, "its stderr stayed open");
        }
        let lines = last_words.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.is_empty() {
            return reason;
        }
        let said: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("{reason}; its last words on stderr: {}", said.join(" / "))
    }

    /// Puts the group in the registry, unless the owner stopped supervising meanwhile (the
    /// group may be gone, and must not come back).
    fn replace(&self, group: ToolGroup) {
        if self.stop.is_cancelled() {
            return;
        }
        if let Err(error) = self.registry.replace(group, self.upstream.enabled) {
            tracing::error!(upstream = %self.upstream.name, %error, "cannot serve the server's tools");
        }
    }
}

/// The pause before try number `attempt` + 1.
fn pause(attempt: u32) -> Duration {
    let doubled = FIRST_PAUSE.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
    doubled.min(LONGEST_PAUSE)
}

/// Writes the server's stderr into our log, line by line, keeping the last few: each line cut
/// to [`STDERR_LINE`] bytes (the rest skipped, and counted), and no more than [`STDERR_LOGGED`]
/// bytes of a session logged.
async fn forward_stderr(upstream: String, stderr: ChildStderr, last: LastWords) {
    let mut reader = BufReader::new(stderr);
    let mut line = StderrLine::default();
    let mut logged = 0usize;
    loop {
        let (consumed, ended) = match reader.fill_buf().await {
            Ok([]) => (0, true),
            Ok(available) => {
                let newline = available.iter().position(|byte| *byte == b'\n');
                let take = newline.map_or(available.len(), |index| index + 1);
                line.push(&available[..take]);
                (take, false)
            }
            Err(error) => {
                tracing::debug!(%upstream, %error, "cannot read the server's stderr");
                (0, true)
            }
        };
        reader.consume(consumed);
        let Some(said) = (if ended { line.flush() } else { line.complete() }) else {
            if ended {
                return;
            }
            continue;
        };
        if logged < STDERR_LOGGED {
            logged += said.len();
            tracing::info!(%upstream, "stderr: {said}");
            if logged >= STDERR_LOGGED {
                tracing::info!(%upstream, "its stderr is not logged further this session ({STDERR_LOGGED} bytes were)");
            }
        }
        let mut kept = last.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() == LAST_WORDS {
            kept.pop_front();
        }
        kept.push_back(said);
        if ended {
            return;
        }
    }
}

/// One line of stderr being read: its first [`STDERR_LINE`] bytes and how many more there were.
#[derive(Default)]
struct StderrLine {
    kept: Vec<u8>,
    skipped: usize,
    complete: bool,
}

impl StderrLine {
    fn push(&mut self, bytes: &[u8]) {
        let (text, complete) = match bytes.strip_suffix(b"\n") {
            Some(text) => (text.strip_suffix(b"\r").unwrap_or(text), true),
            None => (bytes, false),
        };
        let room = STDERR_LINE.saturating_sub(self.kept.len());
        let taken = text.len().min(room);
        self.kept.extend_from_slice(&text[..taken]);
        self.skipped += text.len() - taken;
        self.complete = complete;
    }

    /// The line, when its newline was read.
    fn complete(&mut self) -> Option<String> {
        if self.complete { self.flush() } else { None }
    }

    /// The line so far (the stream ended), unless it is empty.
    fn flush(&mut self) -> Option<String> {
        self.complete = false;
        let skipped = std::mem::take(&mut self.skipped);
        let kept = std::mem::take(&mut self.kept);
        if kept.is_empty() && skipped == 0 {
            return None;
        }
        let mut said = String::from_utf8_lossy(&kept).into_owned();
        if skipped > 0 {
            write!(said, "… ({skipped} more bytes of this line skipped)").ok();
        }
        Some(said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stderr_line_keeps_its_head_and_counts_the_rest() {
        let mut line = StderrLine::default();
        line.push(&vec![b'w'; STDERR_LINE + 10]);
        assert_eq!(line.complete(), None);
        line.push(b"www\r\n");
        let said = line.complete().unwrap();
        assert_eq!(
            said,
            format!(
                "{}… (13 more bytes of this line skipped)",
                "w".repeat(STDERR_LINE)
            )
        );
        line.push(b"short\n");
        assert_eq!(line.complete().as_deref(), Some("short"));
        line.push(b"no newline");
        assert_eq!(line.flush().as_deref(), Some("no newline"));
        assert_eq!(line.flush(), None);
    }

    #[test]
    fn pauses_double_up_to_the_longest() {
        let pauses: Vec<u128> = (1..=9).map(|attempt| pause(attempt).as_millis()).collect();
        assert_eq!(
            pauses,
            [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]
        );
        assert_eq!(pause(u32::MAX), LONGEST_PAUSE);
    }
}
