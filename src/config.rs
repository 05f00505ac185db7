//! Configuration: the command line (clap) and the optional TOML file it points at.
//!
//! ```toml
//! capacity = 1000              # variables kept before the least recently used are evicted
//! output_limit = 10000         # characters of a tool result shown to the model
//! approval_fallback = "deny"   # when a policy asks but the client cannot: "deny" or "allow"
//! workspace_max_bytes = 1073741824  # bytes of variable values and state a workspace may hold
//! skill_body_limit = 20000     # characters of a skill served whole; longer: opening + sections
//! skill_prompts = false        # also list one prompt per skill (the `skill` prompt is always there)
//!
//! tool_folders = ["~/work/tools"]  # script tool folders besides ~/.synapse/tools
//!
//! # skill roots: folders, or git repositories pinned to a ref (copied into the data folder)
//! skills = ["~/team-skills", "git+https://github.com/org/skills@v1.2#skills"]
//! skill_sources_allow = ["github.com/org"]   # hosts or host/org that git+https may name
//!
//! [groups]                     # which tool groups are on
//! vars = true
//!
//! [tools.WriteVar]             # per-tool policies and limits
//! execution = "ask-once"       # auto | ask-once | ask-always
//! result = "auto"
//! output_limit = 20000
//! enabled = true
//!
//! [[upstream]]                 # another MCP server, served as the tool group `everything`
//! name = "everything"
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! ```
//!
//! Plain data on the ground floor: it imports nothing of the crate. `config/cli.rs` is the
//! command line, `config/file.rs` the file's schema, `config/http.rs` the HTTP settings merged
//! from both; `app/settings.rs` turns the rest into the domain's settings, and
//! `upstreams/settings.rs` checks the `[[upstream]]` tables.

pub mod cli;
pub mod file;
pub mod http;

use std::path::PathBuf;

pub use cli::{
    Cli, Command, LogFormat, ServeArgs, SkillsCommand, TokenCommand, ToolsCommand, WorkspaceCommand,
};
pub use file::{
    DeclaredRule, Fallback, FileConfig, HttpTable, MetricsTable, OAuthTable, Policy,
    SnapshotsConfig, ToolConfig, UpstreamTable, read,
};
pub use http::{DEFAULT_MAX_BODY_BYTES, DEFAULT_READ_TIMEOUT_SECONDS, HttpSettings, OAuthSettings};

/// Why the file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid config file {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}
