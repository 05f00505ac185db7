//! Script tools (`docs/script-tools.md`): folders of scripts served as MCP tools. A root (the
//! user's `~/.synapse/tools`, and the folders given with `--tools` or `tool_folders`) holds
//! groups, a folder each; a group holds tools, each a script beside its manifest
//! `NAME.tool.json`, served as `{group}__{NAME}`.
//!
//! - [`manifest`]: the manifests, read and checked; a problem names the file, the field and the
//!   fix, and keeps only what it concerns from being served.
//! - [`scan`]: the roots walked into groups, reusing `index.json` while files are unchanged.
//! - [`index_file`]: `index.json`, the index a writable root keeps of its groups and tools.
//! - [`call`]: one call: the arguments checked against the input schema and passed as JSON on
//!   stdin or on the command line, the script run by [`crate::runner`], its output read (as
//!   JSON checked against the output schema when the manifest declares one).
//! - [`check`]: the `synapse-mcp tools check` report.
//!
//! Nothing here knows MCP or the registry: the `groups` layer turns a [`Group`] into a tool
//! group and replaces it when its folder changes.

pub mod call;
pub mod check;
pub mod index_file;
pub mod manifest;
pub mod scan;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::folders::sha256;
use crate::text::truncate_content;

pub use manifest::{Approval, Hints, Manifest, Passing, Problem, Word};

/// The user's tool root, below the home folder.
pub const HOME_ROOT: &str = ".synapse/tools";
/// Between a group's name and a tool's in the name clients see.
pub const SEPARATOR: &str = "__";
/// The longest group name.
pub const MAX_GROUP_NAME: usize = 40;
/// The longest tool name clients see.
pub const MAX_TOOL_NAME: usize = 64;

/// A folder of tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The folder's name.
    pub name: String,
    pub folder: PathBuf,
    /// Whether the group is on when nothing else says (`group.json`; default on).
    pub enabled: bool,
    /// What the model reads about the group (`group.json`).
    pub instructions: Option<String>,
    /// The rules it declares (`group.json`), their text read.
    pub rules: Vec<crate::config::DeclaredRule>,
    /// Its tools, by name.
    pub scripts: Vec<Arc<Script>>,
}

/// One tool of a folder: its manifest and script as they were read, with their digests.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The name clients see: `{group}__{tool}`.
    pub name: String,
    pub group: String,
    /// The group folder, where the script runs.
    pub folder: PathBuf,
    /// `NAME.tool.json`.
    pub manifest_file: PathBuf,
    pub manifest: Manifest,
    pub digests: Digests,
}

/// What an approval to run a script tool is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digests {
    /// `sha256:` of the script file.
    pub script: String,
    /// `sha256:` of the manifest file.
    pub manifest: String,
}

impl Script {
    /// The script file.
    pub fn path(&self) -> PathBuf {
        self.folder.join(&self.manifest.script)
    }

    /// The digests of the script and the manifest as they are on disk now.
    pub fn digests_now(&self) -> Result<Digests, Error> {
        Ok(Digests {
            script: digest_file(&self.name, &self.path())?,
            manifest: digest_file(&self.name, &self.manifest_file)?,
        })
    }
}

/// The name clients see for a tool of a group.
pub fn tool_name(group: &str, tool: &str) -> String {
    format!("{group}{SEPARATOR}{tool}")
}

/// Whether `name` has 1 to `max` characters, each a letter, a digit, `_` or `-`.
pub fn valid_name(name: &str, max: usize) -> bool {
    (1..=max).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// The user's tool root under a home folder.
pub fn home_root(home: &Path) -> PathBuf {
    home.join(HOME_ROOT)
}

/// A JSON Schema (2020-12) compiled for validation, or why it does not compile.
pub fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::draft202012::new(schema)
        .map_err(|error| format!("does not compile as JSON Schema 2020-12: {error}"))
}

fn digest_file(tool: &str, path: &Path) -> Result<String, Error> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(sha256(&bytes)),
        Err(source) if source.kind() == std::io::ErrorKind::NotFound => Err(Error::Gone {
            tool: tool.to_owned(),
            path: path.to_owned(),
        }),
        Err(source) => Err(Error::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// How much of a script's stdout or stderr an error quotes, in characters (head and tail).
const QUOTED_CHARS: usize = 4000;

/// Why a call of a script tool did not give a result.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "invalid arguments for `{tool}`: {problems}; its inputSchema in tools/list says what it takes"
    )]
    Arguments { tool: String, problems: String },
    #[error(
        "`{tool}` failed: its script exited with code {code}{}",
        streams(stdout, stderr)
    )]
    Exited {
        tool: String,
        code: i32,
        stdout: String,
        stderr: String,
    },
    #[error(
        "`{tool}` failed: its script was killed by a signal{}",
        streams(stdout, stderr)
    )]
    Killed {
        tool: String,
        stdout: String,
        stderr: String,
    },
    #[error(
        "`{tool}` failed: its script was killed after {seconds} s, the timeout its manifest sets (`timeoutSeconds`, at most 300){}",
        streams(stdout, stderr)
    )]
    TimedOut {
        tool: String,
        seconds: u64,
        stdout: String,
        stderr: String,
    },
    #[error(
        "`{tool}` failed: its manifest declares an output schema, so its script must print one JSON object, but {problem}{}",
        streams(stdout, stderr)
    )]
    NotJson {
        tool: String,
        problem: String,
        stdout: String,
        stderr: String,
    },
    #[error(
        "`{tool}` failed: its script's output does not match the manifest's output schema: {problems}{}",
        streams(stdout, "")
    )]
    Mismatch {
        tool: String,
        problems: String,
        stdout: String,
    },
    #[error(
        "the script or the manifest of `{tool}` changed while the run waited for approval, so nothing ran; call it again to be asked about the new version"
    )]
    Changed { tool: String },
    #[error(
        "the manifest of `{tool}` changed on disk and the tool is being reloaded, so nothing ran; call it again in a moment (tools/list shows the new version)"
    )]
    Reloading { tool: String },
    #[error(
        "{} of `{tool}` is gone, so nothing ran; the tool leaves tools/list once its folder is rescanned",
        path.display()
    )]
    Gone { tool: String, path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Run(#[from] crate::runner::Error),
}

/// The streams an error quotes, each cut to its head and tail.
fn streams(stdout: &str, stderr: &str) -> String {
    let mut text = String::new();
    for (name, stream) in [("stderr", stderr), ("stdout", stdout)] {
        if stream.trim().is_empty() {
            continue;
        }
        let quoted = truncate_content(stream, QUOTED_CHARS)
            .map_or_else(|| stream.to_owned(), |cut| cut.text);
        write!(text, "\n\n{name}:\n{}", quoted.trim_end()).ok();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_letters_digits_underscores_and_dashes() {
        for (name, valid) in [
            ("text", true),
            ("my-tools_2", true),
            ("", false),
            ("with space", false),
            ("dots.no", false),
            (&"x".repeat(41), false),
        ] {
            assert_eq!(valid_name(name, MAX_GROUP_NAME), valid, "{name}");
        }
        assert_eq!(tool_name("text", "count"), "text__count");
    }

    #[test]
    fn an_error_quotes_stderr_before_stdout_and_cuts_long_streams() {
        let error = Error::Exited {
            tool: "text__count".to_owned(),
            code: 2,
            stdout: "x".repeat(10_000),
            stderr: "Traceback: boom\n".to_owned(),
        };
        let message = error.to_string();
        assert!(
            message.starts_with(
                "`text__count` failed: its script exited with code 2\n\nstderr:\nTraceback: boom\n\nstdout:\nxxx"
            ),
            "{message}"
        );
        assert!(message.contains("characters omitted"), "{message}");
        assert!(message.len() < 4200, "{}", message.len());
    }
}
