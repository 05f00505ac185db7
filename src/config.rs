//! Configuration: the command line (clap) and the optional TOML file it points at.
//!
//! ```toml
//! capacity = 1000              # variables kept before the least recently used are evicted
//! output_limit = 10000         # characters of a tool result shown to the model
//! approval_fallback = "deny"   # when a policy asks but the client cannot: "deny" or "allow"
//! workspace_max_bytes = 1073741824  # bytes of variable values and state a workspace may hold
//! skill_body_limit = 20000     # characters of a skill served whole; longer: opening + sections
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
//! `config/upstream.rs` checks the `[[upstream]]` tables.

pub mod upstream;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use serde::Deserialize;

use crate::store::Location;
use crate::tools::{ExecutorSettings, Fallback, Policy, ToolOverride};
use crate::vars::VariableSystem;

const EXAMPLES: &str = "\
Examples:
  synapse-mcp                                  serve over stdio with the embedded defaults
  synapse-mcp --config ~/.config/synapse-mcp/config.toml
  synapse-mcp --workspace research -v          a separate workspace, debug logs on stderr
  synapse-mcp --skills ./my-skills --skills ~/team-skills
  synapse-mcp --skills git+https://github.com/org/skills@v1.2#skills
  synapse-mcp skills update                    fetch the git skill sources again
  synapse-mcp --tools ./my-tools               script tools from ./my-tools besides ~/.synapse/tools
  synapse-mcp tools check                      report broken tool manifests

Claude Code:  claude mcp add synapse -- synapse-mcp
Logs go to stderr only; stdout carries the MCP protocol.";

/// Bytes a workspace may hold when the configuration does not say.
pub const DEFAULT_WORKSPACE_MAX_BYTES: u64 = 1 << 30;

/// The command line.
#[derive(Debug, Clone, Parser)]
#[command(name = "synapse-mcp", version, about, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A skills folder, or a git repository at a ref, `git+https://host/org/repo@REF[#SUBDIR]`
    /// or `git+file:///path/repo@REF[#SUBDIR]` (repeatable); replaces the default skill roots
    /// (the bundled skills, ~/.synapse/skills, ~/.agents/skills, ~/.claude/skills).
    #[arg(long = "skills", value_name = "DIR|GIT", global = true)]
    pub skills: Vec<PathBuf>,
    /// A folder of script tools (repeatable), served besides ~/.synapse/tools; each folder in
    /// it is a tool group (see docs/script-tools.md).
    #[arg(long = "tools", value_name = "DIR", global = true)]
    pub tools: Vec<PathBuf>,
    /// Also serve the project's skills (./.agents/skills, ./.claude/skills), which win over
    /// all others. Project skills are untrusted until you say so.
    #[arg(long, global = true)]
    pub trust_project: bool,
    /// Where the store keeps its data (default: $XDG_DATA_HOME/synapse-mcp).
    #[arg(long, value_name = "DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// The workspace whose variables and approvals this server uses (default `default`).
    #[arg(long, value_name = "NAME", global = true)]
    pub workspace: Option<String>,
    /// Where workspaces are stored: `memory` (nothing is kept), `sqlite://PATH` or
    /// `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (default: `DATA_DIR/synapse.db`).
    #[arg(long, value_name = "STORE", global = true)]
    pub store: Option<String>,
    /// Most bytes a workspace may hold, variable values and the state document together
    /// (default 1 GiB, or `workspace_max_bytes` in the config file); writes past it are refused.
    #[arg(long, value_name = "BYTES", global = true)]
    pub workspace_max_bytes: Option<u64>,
    /// Most characters of a skill's instructions (or of a markdown file of a skill) served
    /// whole (default 20000, or `skill_body_limit` in the config file); a longer one comes as
    /// its opening and a table of its sections, each loadable alone.
    #[arg(long, value_name = "CHARS", global = true)]
    pub skill_body_limit: Option<usize>,
    /// A TOML configuration file (groups, per-tool policies, capacity, output limit).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Log level on stderr: error, warn, info, debug, trace (or a tracing filter).
    #[arg(long, value_name = "LEVEL", global = true)]
    pub log_level: Option<String>,
    /// More logging on stderr (-v debug, -vv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// How log lines on stderr look: `text` (the default) or `json`, one object per line
    /// (or `log_format` in the config file).
    #[arg(long, value_name = "FORMAT", global = true)]
    pub log_format: Option<LogFormat>,
}

/// How log lines on stderr look.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields` (the message and
    /// the event's fields) and `span` (the request's method, id, tool, workspace, principal).
    Json,
}

#[derive(Debug, Clone, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "parsed once per process; `serve` has many options"
)]
pub enum Command {
    /// Serve MCP over stdio (the default), or over Streamable HTTP with `--http ADDR`.
    Serve(ServeArgs),
    /// Add, list or revoke the bearer tokens `serve --http` accepts.
    #[command(subcommand)]
    Token(TokenCommand),
    /// List, export, import or delete stored workspaces.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// Check the store: its path, schema version, sizes, integrity, and state documents
    /// nesting deeper than the limit.
    Doctor {
        /// Rewrite over-deep state documents: each branch past the nesting limit is kept, where
        /// it was, as a string holding its JSON text.
        #[arg(long)]
        repair: bool,
    },
    /// Work with skill folders.
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// Work with script tool folders.
    #[command(subcommand)]
    Tools(ToolsCommand),
}

/// `serve`: stdio unless `--http` (or `[http] listen` in the config file) gives an address.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// Serve MCP over Streamable HTTP on this address (`127.0.0.1:8080`) instead of stdio;
    /// the endpoint is `/mcp` (or `/mcp/{workspace}`), see docs/http.md.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// The bearer tokens file (`synapse-mcp token add` writes it); required over HTTP unless
    /// `--no-auth`.
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// Serve HTTP without authentication: refused unless the address is a loopback one.
    #[arg(long)]
    pub no_auth: bool,
    /// A `Host` the HTTP server answers besides the loopback names (repeatable): the public
    /// host name (and `host:port`) clients use.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// A browser page's origin allowed to call `/mcp` (repeatable; scheme, host and port as
    /// the browser sends them: `http://127.0.0.1:8000`, or `http://localhost:*` for any port).
    /// Requests with another `Origin` get 403; those origins also get CORS (preflights
    /// answered, `Authorization`, `Content-Type`, `Mcp-Session-Id`, `MCP-Protocol-Version` and
    /// `Last-Event-ID` allowed, `Mcp-Session-Id` exposed). None given: only loopback pages
    /// (`http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*`) may call, without CORS.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// Largest HTTP request body accepted, in bytes (default 4 MiB); larger ones get 413.
    #[arg(long, value_name = "BYTES")]
    pub max_body_bytes: Option<usize>,
    /// Seconds an initialize-era session may stay idle before it is closed (default 300).
    #[arg(long, value_name = "SECONDS")]
    pub session_idle_seconds: Option<u64>,
    /// Seconds a client may take to send a request's headers, and again its body, before the
    /// connection is closed (default 30).
    #[arg(long, value_name = "SECONDS")]
    pub read_timeout_seconds: Option<u64>,
    /// The URL clients reach this server at (`https://mcp.example.org`), for the OAuth
    /// metadata; default `http://` and the request's `Host`.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Accept JWT access tokens from this OAuth 2.1 authorization server (its `iss`); needs
    /// `--oauth-audience` and `--oauth-jwks` (docs/http.md).
    #[arg(long, value_name = "URL")]
    pub oauth_issuer: Option<String>,
    /// An audience the tokens must name in `aud` (repeatable): this server's URL, such as
    /// `https://mcp.example.org/mcp`; `aud` may also name a path below it.
    #[arg(long = "oauth-audience", value_name = "AUD")]
    pub oauth_audiences: Vec<String>,
    /// The authorization server's signing keys, a JWKS: a file (read again when it changes) or
    /// an `https://` (or `http://`) URL.
    #[arg(long, value_name = "FILE|URL")]
    pub oauth_jwks: Option<String>,
    /// The claim naming the principal (default `sub`).
    #[arg(long, value_name = "CLAIM")]
    pub oauth_principal_claim: Option<String>,
    /// The claim listing the workspaces the principal may use (default `workspaces`).
    #[arg(long, value_name = "CLAIM")]
    pub oauth_workspaces_claim: Option<String>,
    /// Serve Prometheus metrics at `http://ADDR/metrics` (`127.0.0.1:9464`), over stdio or
    /// HTTP alike; whoever reaches ADDR may read them, so keep it on loopback or an internal
    /// network (docs/operations.md).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
}

/// `token`: the tokens file's entries.
#[derive(Debug, Clone, Subcommand)]
pub enum TokenCommand {
    /// Make a new token for `--workspace W` (its default workspace), and any `--allow`ed
    /// others: it is printed on stdout, once; the file keeps only its SHA-256 digest.
    Add {
        /// The tokens file (made when missing).
        #[arg(long, value_name = "FILE")]
        tokens: PathBuf,
        /// Who the token speaks for: approvals are remembered per principal.
        #[arg(long, value_name = "NAME")]
        principal: String,
        /// Another workspace the token may use, besides `--workspace` (repeatable).
        #[arg(long = "allow", value_name = "WORKSPACE")]
        also: Vec<String>,
        /// Only tools annotated read-only may run.
        #[arg(long)]
        read_only: bool,
        /// May change the skills every workspace of the server shares (`SkillSave`,
        /// `SkillRunScript`); without it a token changes its own workspaces only.
        #[arg(long, conflicts_with = "read_only")]
        write_skills: bool,
    },
    /// List the tokens: id, principal, workspaces, what they may do (read-only, read-write, or
    /// read-write+skills; never the tokens themselves).
    List {
        #[arg(long, value_name = "FILE")]
        tokens: PathBuf,
    },
    /// Revoke a token by its id (`token list` shows it), or every token of a principal.
    Revoke {
        #[arg(long, value_name = "FILE")]
        tokens: PathBuf,
        /// The token's id.
        #[arg(value_name = "ID", required_unless_present = "principal")]
        id: Option<String>,
        /// Revoke every token of this principal instead.
        #[arg(long, value_name = "NAME", conflicts_with = "id")]
        principal: Option<String>,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum ToolsCommand {
    /// Check the tool folders' manifests and print every problem. Exits non-zero when a group
    /// or a tool would be left out.
    Check {
        /// Tool folders to check (default: the ones the server would use).
        #[arg(value_name = "DIR")]
        dirs: Vec<PathBuf>,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum WorkspaceCommand {
    /// List the workspaces in the store.
    List,
    /// Write a workspace as JSON (schemas/workspace-export.json) to stdout or a file.
    Export {
        /// The workspace to export.
        name: String,
        /// Write to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Restore a workspace from an export, under `--workspace` or the name it was exported as.
    Import {
        /// The export file.
        file: PathBuf,
        /// Replace the workspace if it already holds anything.
        #[arg(long)]
        replace: bool,
    },
    /// Delete a workspace and everything in it.
    Delete {
        /// The workspace to delete.
        name: String,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum SkillsCommand {
    /// Check skills against the Agent Skills specification and print every finding. Exits
    /// non-zero when a skill would be skipped, or, with --strict, on any violation.
    Check {
        /// Skill folders to check (default: the roots the server would use).
        #[arg(value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Report every violation of the specification as an error.
        #[arg(long)]
        strict: bool,
    },
    /// Fetch the git skill sources (`--skills git+…`, or the config's `skills`) again and bring
    /// each copy to the commit its ref names now. Prints, per source, the old and the new
    /// commit, or that it is unchanged, or why it failed (the last good copy is kept). Exits
    /// non-zero when any failed.
    Update,
}

impl Cli {
    /// The stderr log's filter: `--log-level`, else `-v`/`-vv`, else `RUST_LOG`, else our own
    /// `info` with the SDK's chatter at `warn`. The default carries the request span (method, id, tool, workspace, principal on every line inside a
    /// request) when serving HTTP, where operators read logs by request, and leaves it out over
    /// stdio, where it would cost every call more than a `ping` costs without it.
    pub fn log_filter(&self, serves_http: bool) -> String {
        if let Some(level) = &self.log_level {
            return level.clone();
        }
        let default = if serves_http {
            "synapse_mcp=info,warn"
        } else {
            "synapse_mcp=info,synapse_mcp::request=off,warn"
        };
        match self.verbose {
            0 => std::env::var("RUST_LOG").unwrap_or_else(|_| default.to_owned()),
            1 => "debug".to_owned(),
            _ => "trace".to_owned(),
        }
    }
}

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
    #[error("{0}")]
    Store(String),
    #[error("{0}")]
    SkillSource(#[from] crate::skills::sources::Error),
    #[error(
        "git skill sources are copied into the data folder, and none was found: set XDG_DATA_HOME or HOME, or pass --data-dir"
    )]
    NoDataFolder,
}

/// The configuration file (TOML); every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Variables kept before the least recently used are evicted (default 1000).
    pub capacity: Option<usize>,
    /// Characters of a tool result shown to the model before it is truncated (default 10000).
    pub output_limit: Option<usize>,
    /// What happens when a policy asks but the client can neither elicit nor retry with input
    /// (default `deny`).
    pub approval_fallback: Option<Fallback>,
    /// Tool groups by name, on or off (`vars` is on by default).
    #[serde(default)]
    pub groups: BTreeMap<String, bool>,
    /// Per-tool settings, by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolConfig>,
    /// Skill roots, used when no `--skills` is given: folders, or git repositories at a ref
    /// (`git+https://host/org/repo@REF[#SUBDIR]`, `git+file:///path@REF[#SUBDIR]`).
    #[serde(default)]
    pub skills: Vec<PathBuf>,
    /// The hosts (`github.com`) or hosts and leading folders (`github.com/org`) that
    /// `git+https://` skill sources may name; without this key any host is allowed.
    /// `git+file://` sources are always allowed.
    pub skill_sources_allow: Option<Vec<String>>,
    /// How often the server updates its git skill sources while it runs (`"6h"`, `"30m"`; at
    /// least a minute); without it they change only with `synapse-mcp skills update`.
    pub skills_update_interval: Option<String>,
    /// Folders of script tools, served besides `~/.synapse/tools` (and before it: of two
    /// groups of one name, the folder listed first wins); `--tools` adds more.
    #[serde(default)]
    pub tool_folders: Vec<PathBuf>,
    /// Where workspaces are stored, as `--store` takes it (`memory`, `sqlite://PATH`,
    /// `postgres://USER:PASSWORD@HOST:PORT/DATABASE`); `--store` wins.
    pub store: Option<String>,
    /// Caps the store's database file, in bytes; writes past it fail as on a full disk.
    pub store_max_bytes: Option<u64>,
    /// Most bytes a workspace may hold, variable values and the state document's JSON text
    /// together (default 1 GiB); a write that would pass it is refused.
    pub workspace_max_bytes: Option<u64>,
    /// Most characters of a skill's instructions, or of a markdown file of a skill read
    /// without a window, served whole (default 20000); a longer one comes as its opening and a
    /// table of its sections, each loadable alone.
    pub skill_body_limit: Option<usize>,
    /// Limits on the chat snapshots' user functions.
    #[serde(default)]
    pub snapshots: SnapshotsConfig,
    /// Other MCP servers whose tools are served as tool groups, `{name}__{tool}`; the tables
    /// are read again when the file changes.
    #[serde(default)]
    pub upstream: Vec<upstream::UpstreamTable>,
    /// Serving over Streamable HTTP (`serve --http` wins over these).
    #[serde(default)]
    pub http: HttpTable,
    /// How log lines on stderr look: `text` (default) or `json`; `--log-format` wins.
    pub log_format: Option<LogFormat>,
    /// Prometheus metrics (`serve --metrics` wins).
    #[serde(default)]
    pub metrics: MetricsTable,
}

/// `[metrics]`: where Prometheus metrics are served.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsTable {
    /// The address whose `/metrics` serves them (`127.0.0.1:9464`); without it, none are kept.
    pub listen: Option<std::net::SocketAddr>,
}

/// `[http]`: serving over Streamable HTTP instead of stdio.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpTable {
    /// The address to listen on (`127.0.0.1:8080`); given, `serve` serves HTTP.
    pub listen: Option<std::net::SocketAddr>,
    /// The bearer tokens file.
    pub tokens: Option<PathBuf>,
    /// Serve without authentication (loopback addresses only).
    #[serde(default)]
    pub no_auth: bool,
    /// `Host` values answered besides the loopback names.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call (with their scheme).
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Largest request body accepted, in bytes (default 4 MiB).
    pub max_body_bytes: Option<usize>,
    /// Seconds an initialize-era session may stay idle before it is closed (default 300).
    pub session_idle_seconds: Option<u64>,
    /// Seconds a client may take to send a request's headers, and again its body (default 30).
    pub read_timeout_seconds: Option<u64>,
    /// The URL clients reach this server at, for the OAuth metadata.
    pub public_url: Option<String>,
    /// JWT access tokens from an OAuth 2.1 authorization server.
    #[serde(default)]
    pub oauth: OAuthTable,
}

/// `[http.oauth]`: OAuth 2.1 resource-server mode (docs/http.md).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuthTable {
    /// The authorization server whose tokens are accepted (their `iss`).
    pub issuer: Option<String>,
    /// The audiences a token may name in `aud` (one is enough).
    #[serde(default)]
    pub audiences: Vec<String>,
    /// The signing keys: a JWKS file or an `https://` (or `http://`) URL.
    pub jwks: Option<String>,
    /// The claim naming the principal (default `sub`).
    pub principal_claim: Option<String>,
    /// The claim listing the workspaces the principal may use (default `workspaces`).
    pub workspaces_claim: Option<String>,
}

/// How `serve --http` serves: the command line over the file's `[http]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    pub listen: std::net::SocketAddr,
    pub tokens: Option<PathBuf>,
    pub no_auth: bool,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub max_body_bytes: usize,
    /// `None`: rmcp's default (5 minutes).
    pub session_idle: Option<std::time::Duration>,
    /// How long a client may take to send a request's headers, and again its body.
    pub read_timeout: std::time::Duration,
    pub public_url: Option<String>,
    /// Given when an issuer is.
    pub oauth: Option<OAuthSettings>,
}

/// OAuth 2.1 resource-server mode: which JWT access tokens are accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthSettings {
    pub issuer: String,
    /// Empty: refused when serving (a token for any audience would do).
    pub audiences: Vec<String>,
    /// `None`: refused when serving.
    pub jwks: Option<String>,
    pub principal_claim: String,
    pub workspaces_claim: String,
}

/// The request body limit when none is configured.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;
/// Seconds a client may take to send a request's headers, and again its body.
pub const DEFAULT_READ_TIMEOUT_SECONDS: u64 = 30;

/// `[snapshots]`: bounds on each user function call (JavaScript in QuickJS).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotsConfig {
    /// Milliseconds one call may run before it is stopped (default 250).
    pub script_time_limit_ms: Option<u64>,
    /// MiB the JavaScript runtime may allocate (default 64).
    pub script_memory_mib: Option<usize>,
    /// Milliseconds all the function calls of one message (or one dry run's text) may run
    /// together before the rest are not run (default 2000).
    pub text_time_limit_ms: Option<u64>,
}

/// Settings of one tool.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// Approval before the tool runs: `auto`, `ask-once` or `ask-always`.
    pub execution: Option<Policy>,
    /// Approval before its result reaches the model: `auto`, `ask-once` or `ask-always`.
    pub result: Option<Policy>,
    /// This tool's output limit in characters.
    pub output_limit: Option<usize>,
    /// `false` hides the tool.
    pub enabled: Option<bool>,
}

/// One configured skill root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillRoot {
    Folder(PathBuf),
    /// A git source and the place of its copy.
    Git(crate::skills::sources::Checkout),
}

/// Everything the server needs, from the command line and the file together.
#[derive(Debug, Clone)]
pub struct Config {
    pub workspace: String,
    pub store: Location,
    pub store_max_bytes: Option<u64>,
    /// Most bytes a workspace may hold.
    pub workspace_max_bytes: u64,
    pub data_dir: Option<PathBuf>,
    /// The configured skill roots, in priority order.
    pub skills: Vec<SkillRoot>,
    /// How often a running server updates its git skill sources.
    pub skills_update_interval: Option<std::time::Duration>,
    /// Script tool folders besides `~/.synapse/tools`: `--tools`, then the file's `tool_folders`.
    pub tool_folders: Vec<PathBuf>,
    /// Serve `./.agents/skills` and `./.claude/skills` too.
    pub trust_project: bool,
    /// Most characters of a skill body or markdown skill file served whole.
    pub skill_body_limit: usize,
    pub capacity: usize,
    pub groups: BTreeMap<String, bool>,
    pub disabled_tools: Vec<String>,
    pub executor: ExecutorSettings,
    pub script_limits: crate::snapshots::javascript::Limits,
    /// The MCP servers to start, checked.
    pub upstreams: Vec<upstream::Upstream>,
    /// The configuration file, watched for changes to its `[[upstream]]` tables.
    pub file: Option<PathBuf>,
    /// Serve over HTTP (`serve --http` or `[http] listen`); `None`: stdio.
    pub http: Option<HttpSettings>,
    /// Serve Prometheus metrics on this address (`serve --metrics` or `[metrics] listen`).
    pub metrics: Option<std::net::SocketAddr>,
    /// How log lines look (`--log-format`, else the file's `log_format`).
    pub log_format: LogFormat,
}

impl Default for Config {
    fn default() -> Self {
        Self::from_parts(
            &FileConfig::default(),
            "default".to_owned(),
            None,
            Vec::new(),
        )
    }
}

impl Config {
    /// Reads the file named on the command line, if any, and merges the two.
    pub fn load(cli: &Cli) -> Result<Self, Error> {
        let file = match &cli.config {
            Some(path) => read_file(path)?,
            None => FileConfig::default(),
        };
        let listed = if cli.skills.is_empty() {
            &file.skills
        } else {
            &cli.skills
        };
        let skills = skill_roots(
            listed,
            file.skill_sources_allow.as_deref(),
            cli.data_dir.as_deref(),
        )?;
        let workspace = cli
            .workspace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let mut config = Self::from_parts(&file, workspace, cli.data_dir.clone(), skills);
        if let Some(path) = &cli.config {
            config.skills_update_interval = update_interval(path, &file)?;
            config.upstreams = checked_upstreams(path, &file)?;
            config.file = Some(path.clone());
        }
        let store = cli.store.as_deref().or(file.store.as_deref());
        config.store = Location::resolve(store, cli.data_dir.as_deref()).map_err(Error::Store)?;
        config.trust_project = cli.trust_project;
        config.tool_folders = cli
            .tools
            .iter()
            .chain(&file.tool_folders)
            .cloned()
            .collect();
        if let Some(bytes) = cli.workspace_max_bytes {
            config.workspace_max_bytes = bytes;
        }
        if let Some(characters) = cli.skill_body_limit {
            config.skill_body_limit = characters;
        }
        if let Some(Command::Serve(serve)) = &cli.command {
            config.http = http_settings(serve, &file.http);
            config.metrics = serve.metrics.or(file.metrics.listen);
        } else if cli.command.is_none() {
            config.http = http_settings(&ServeArgs::default(), &file.http);
            config.metrics = file.metrics.listen;
        }
        config.log_format = cli.log_format.or(file.log_format).unwrap_or_default();
        Ok(config)
    }

    fn from_parts(
        file: &FileConfig,
        workspace: String,
        data_dir: Option<PathBuf>,
        skills: Vec<SkillRoot>,
    ) -> Self {
        let overrides = file
            .tools
            .iter()
            .map(|(name, tool)| {
                let over = ToolOverride {
                    execution: tool.execution,
                    result: tool.result,
                    output_limit: tool.output_limit,
                };
                (name.clone(), over)
            })
            .collect();
        let defaults = ExecutorSettings::default();
        let script_defaults = crate::snapshots::javascript::Limits::default();
        let script_limits = crate::snapshots::javascript::Limits {
            time: file
                .snapshots
                .script_time_limit_ms
                .map_or(script_defaults.time, std::time::Duration::from_millis),
            memory_bytes: file
                .snapshots
                .script_memory_mib
                .map_or(script_defaults.memory_bytes, |mib| mib << 20),
            // A function's error is cut to the output limit (when that is 0, to the default one).
            error_characters: file
                .output_limit
                .filter(|&limit| limit > 0)
                .unwrap_or(defaults.output_limit),
            text_time: file
                .snapshots
                .text_time_limit_ms
                .map_or(script_defaults.text_time, std::time::Duration::from_millis),
        };
        Self {
            workspace,
            store: Location::Memory,
            store_max_bytes: file.store_max_bytes,
            workspace_max_bytes: file
                .workspace_max_bytes
                .unwrap_or(DEFAULT_WORKSPACE_MAX_BYTES),
            data_dir,
            skills,
            skills_update_interval: None,
            tool_folders: file.tool_folders.clone(),
            trust_project: false,
            skill_body_limit: file
                .skill_body_limit
                .unwrap_or(crate::skills::sections::DEFAULT_BODY_LIMIT),
            capacity: file.capacity.unwrap_or(VariableSystem::DEFAULT_CAPACITY),
            groups: file.groups.clone(),
            disabled_tools: file
                .tools
                .iter()
                .filter(|(_, tool)| tool.enabled == Some(false))
                .map(|(name, _)| name.clone())
                .collect(),
            executor: ExecutorSettings {
                output_limit: file.output_limit.unwrap_or(defaults.output_limit),
                fallback: file.approval_fallback.unwrap_or(defaults.fallback),
                overrides,
            },
            script_limits,
            upstreams: Vec::new(),
            file: None,
            http: None,
            metrics: None,
            log_format: LogFormat::default(),
        }
    }

    /// The skill roots in priority order (see [`crate::skills::discover::roots`]).
    pub fn skill_roots(&self) -> Vec<crate::skills::discover::Root> {
        use crate::skills::discover::{Root, RootKind};
        let cwd = std::env::current_dir().unwrap_or_default();
        let home = std::env::home_dir();
        let configured: Vec<Root> = self
            .skills
            .iter()
            .map(|root| match root {
                SkillRoot::Folder(path) => Root {
                    kind: RootKind::Configured,
                    path: path.clone(),
                },
                SkillRoot::Git(checkout) => Root {
                    kind: RootKind::Git,
                    path: checkout.root(),
                },
            })
            .collect();
        crate::skills::discover::roots(&configured, self.trust_project, home.as_deref(), &cwd)
    }

    /// The git skill sources, in the order they were configured.
    pub fn skill_sources(&self) -> Vec<crate::skills::sources::Checkout> {
        self.skills
            .iter()
            .filter_map(|root| match root {
                SkillRoot::Git(checkout) => Some(checkout.clone()),
                SkillRoot::Folder(_) => None,
            })
            .collect()
    }

    /// The script tool roots in priority order: the configured folders, then `~/.synapse/tools`.
    pub fn tool_roots(&self) -> Vec<PathBuf> {
        let home = std::env::home_dir().map(|home| crate::script_tools::home_root(&home));
        self.tool_folders.iter().cloned().chain(home).collect()
    }

    /// Whether a group is on: the file decides, else the group's own default.
    pub fn group_enabled(&self, group: &str, default: bool) -> bool {
        self.groups.get(group).copied().unwrap_or(default)
    }
}

/// The HTTP settings when an address is given, on the command line or in the file: each list
/// of the command line replaces the file's.
fn http_settings(serve: &ServeArgs, table: &HttpTable) -> Option<HttpSettings> {
    let listen = serve.http.or(table.listen)?;
    let or_file = |given: &Vec<String>, file: &Vec<String>| {
        if given.is_empty() {
            file.clone()
        } else {
            given.clone()
        }
    };
    Some(HttpSettings {
        listen,
        tokens: serve.tokens.clone().or_else(|| table.tokens.clone()),
        no_auth: serve.no_auth || table.no_auth,
        allowed_hosts: or_file(&serve.allowed_hosts, &table.allowed_hosts),
        allowed_origins: or_file(&serve.allowed_origins, &table.allowed_origins),
        max_body_bytes: serve
            .max_body_bytes
            .or(table.max_body_bytes)
            .unwrap_or(DEFAULT_MAX_BODY_BYTES),
        session_idle: serve
            .session_idle_seconds
            .or(table.session_idle_seconds)
            .map(std::time::Duration::from_secs),
        read_timeout: std::time::Duration::from_secs(
            serve
                .read_timeout_seconds
                .or(table.read_timeout_seconds)
                .unwrap_or(DEFAULT_READ_TIMEOUT_SECONDS),
        ),
        public_url: serve
            .public_url
            .clone()
            .or_else(|| table.public_url.clone()),
        oauth: oauth_settings(serve, &table.oauth),
    })
}

/// The OAuth settings when an issuer is given, on the command line or in the file.
fn oauth_settings(serve: &ServeArgs, table: &OAuthTable) -> Option<OAuthSettings> {
    let issuer = serve
        .oauth_issuer
        .clone()
        .or_else(|| table.issuer.clone())?;
    let audiences = if serve.oauth_audiences.is_empty() {
        table.audiences.clone()
    } else {
        serve.oauth_audiences.clone()
    };
    let claim = |given: &Option<String>, file: &Option<String>, default: &str| {
        given
            .clone()
            .or_else(|| file.clone())
            .unwrap_or_else(|| default.to_owned())
    };
    Some(OAuthSettings {
        issuer,
        audiences,
        jwks: serve.oauth_jwks.clone().or_else(|| table.jwks.clone()),
        principal_claim: claim(&serve.oauth_principal_claim, &table.principal_claim, "sub"),
        workspaces_claim: claim(
            &serve.oauth_workspaces_claim,
            &table.workspaces_claim,
            "workspaces",
        ),
    })
}

/// The configured skill roots: folders as they are, git sources read, checked against the
/// allowlist and placed in the data folder.
fn skill_roots(
    listed: &[PathBuf],
    allow: Option<&[String]>,
    data_dir: Option<&Path>,
) -> Result<Vec<SkillRoot>, Error> {
    use crate::skills::sources::{Checkout, Source, is_source};
    listed
        .iter()
        .map(
            |entry| match entry.to_str().filter(|text| is_source(text)) {
                None => Ok(SkillRoot::Folder(entry.clone())),
                Some(text) => {
                    let source = Source::parse(text)?;
                    source.allowed(allow)?;
                    let data_folder = data_dir
                        .map(Path::to_path_buf)
                        .or_else(crate::store::default_data_dir)
                        .ok_or(Error::NoDataFolder)?;
                    Ok(SkillRoot::Git(Checkout::new(source, &data_folder)))
                }
            },
        )
        .collect()
}

/// `skills_update_interval`, read and checked.
fn update_interval(path: &Path, file: &FileConfig) -> Result<Option<std::time::Duration>, Error> {
    let Some(text) = &file.skills_update_interval else {
        return Ok(None);
    };
    let invalid = |problem: String| Error::Invalid {
        path: path.to_owned(),
        message: format!("skills_update_interval `{text}` {problem}"),
    };
    let interval = humantime::parse_duration(text).map_err(|error| {
        invalid(format!(
            "is not a duration ({error}); write one like \"6h\" or \"30m\""
        ))
    })?;
    if interval < std::time::Duration::from_mins(1) {
        return Err(invalid("is shorter than a minute".to_owned()));
    }
    Ok(Some(interval))
}

/// Reads the file again for its `[[upstream]]` tables, checked; also gives the rest of the
/// file, with the tables taken out, to tell whether anything else changed.
pub fn read_upstreams(path: &Path) -> Result<(Vec<upstream::Upstream>, FileConfig), Error> {
    let mut file = read_file(path)?;
    let upstreams = checked_upstreams(path, &file)?;
    file.upstream.clear();
    Ok((upstreams, file))
}

fn checked_upstreams(path: &Path, file: &FileConfig) -> Result<Vec<upstream::Upstream>, Error> {
    let folder = path.parent().unwrap_or_else(|| Path::new(""));
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    upstream::check(&file.upstream, folder).map_err(|message| Error::Invalid {
        path: path.to_owned(),
        message,
    })
}

fn read_file(path: &Path) -> Result<FileConfig, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    let file: FileConfig = toml::from_str(&text).map_err(|error| Error::Parse {
        path: path.to_owned(),
        message: error.to_string(),
    })?;
    if file.capacity == Some(0) {
        return Err(Error::Invalid {
            path: path.to_owned(),
            message: "capacity must be at least 1".to_owned(),
        });
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn file_sets_groups_policies_and_limits() {
        let file: FileConfig = toml::from_str(
            r#"
            capacity = 50
            output_limit = 300
            workspace_max_bytes = 5000
            skill_body_limit = 300
            approval_fallback = "allow"
            [groups]
            vars = false
            [tools.WriteVar]
            execution = "ask-once"
            enabled = false
            "#,
        )
        .unwrap();
        let config = Config::from_parts(&file, "w".into(), None, Vec::new());
        assert_eq!(config.capacity, 50);
        assert_eq!(config.workspace_max_bytes, 5000);
        assert_eq!(config.skill_body_limit, 300);
        assert_eq!(
            Config::default().workspace_max_bytes,
            DEFAULT_WORKSPACE_MAX_BYTES
        );
        assert_eq!(config.executor.output_limit, 300);
        assert_eq!(config.executor.fallback, Fallback::Allow);
        assert!(!config.group_enabled("vars", true));
        assert_eq!(config.disabled_tools, ["WriteVar"]);
        assert_eq!(
            config.executor.overrides["WriteVar"].execution,
            Some(Policy::AskOnce)
        );
    }

    #[test]
    fn unknown_keys_are_refused_with_their_name() {
        let error = toml::from_str::<FileConfig>("capacty = 5").unwrap_err();
        assert!(error.to_string().contains("capacty"), "{error}");
    }
}
