//! The command line (clap): the options every command takes, and the subcommands.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use serde::Deserialize;

const EXAMPLES: &str = "\
Examples:
  synapse-mcp                                  serve over stdio with the embedded defaults
  synapse-mcp --config ~/.config/synapse-mcp/config.toml
  synapse-mcp --workspace research -v          a separate workspace, debug logs on stderr
  synapse-mcp --groups default,snapshots       the default groups and the chat snapshot tools
  synapse-mcp --skills ./my-skills --skills ~/team-skills
  synapse-mcp --skills git+https://github.com/org/skills@v1.2#skills
  synapse-mcp skills update                    fetch the git skill sources again
  synapse-mcp --tools ./my-tools               script tools from ./my-tools besides ~/.synapse/tools
  synapse-mcp tools check                      report broken tool manifests

Claude Code:  claude mcp add synapse -- synapse-mcp
Logs go to stderr only; stdout carries the MCP protocol.";

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
    /// The tool groups to serve, comma-separated: group names, `default` (variables, plans,
    /// skills and `ToolGroups`) and `all` (every built-in group); the built-in groups not
    /// named are off. Replaces the config file's `[groups]` for the built-in groups. The model
    /// can switch groups on and off with `ToolGroups`.
    #[arg(long, value_name = "LIST", value_delimiter = ',', global = true)]
    pub groups: Option<Vec<String>>,
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
    /// Print the entry a host needs to start this binary (its absolute path), ready to paste:
    /// `claude-desktop`, `claude-code`, `cursor` or `vscode`; with --write, merge it into the
    /// host's file, keeping what is there and a copy of the file as it was.
    #[command(
        after_help = "Examples:\n  synapse-mcp config claude-desktop --write\n          synapse-mcp config vscode -- --workspace notes"
    )]
    Config {
        /// The host: claude-desktop, claude-code, cursor or vscode.
        host: String,
        /// Merge the entry into the host's file (Claude Desktop's and Cursor's of this user,
        /// Claude Code's `.mcp.json` and VS Code's `.vscode/mcp.json` of the current folder).
        #[arg(long)]
        write: bool,
        /// The server's name in the host.
        #[arg(long, default_value = "synapse")]
        name: String,
        /// Arguments the host passes to synapse-mcp (after `--`).
        #[arg(last = true, value_name = "ARGS")]
        arguments: Vec<String>,
    },
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
