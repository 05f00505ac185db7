//! The command line (clap): the options every command takes, and the subcommands.

use std::path::PathBuf;

use clap::{Args as _, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use serde::Deserialize;

mod commands;

pub use commands::{SkillsCommand, TokenCommand, ToolsCommand, WorkspaceCommand};

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

/// The command line. Without a subcommand it serves over stdio with [`ServeOptions`]; each
/// subcommand takes the serve options it uses ([`Cli::parse_scoped`] hides the others from its
/// help, and still accepts them, with a notice, as every option was once accepted everywhere).
#[derive(Debug, Clone, Parser)]
#[command(name = "synapse-mcp", version, about, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Serving over stdio when no subcommand is given.
    #[command(flatten)]
    pub serve: ServeOptions,
    /// Log level on stderr: error, warn, info, debug, trace or off, or a filter such as
    /// `synapse_mcp=debug,warn`.
    #[arg(long, value_name = "LEVEL", global = true, value_parser = log_level)]
    pub log_level: Option<String>,
    /// More logging on stderr (-v debug, -vv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// How log lines on stderr look: `text` (the default) or `json`, one object per line
    /// (or `log_format` in the config file).
    #[arg(long, value_name = "FORMAT", global = true)]
    pub log_format: Option<LogFormat>,
    /// Options given where they no longer belong, each said once logging is set up: placed
    /// before the subcommand, or given to a subcommand that does not use them.
    #[arg(skip)]
    pub notices: Vec<String>,
}

/// The options of serving, which subcommands take in part (see `USES`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeOptions {
    /// A skills folder, or a git repository at a ref, `git+https://host/org/repo@REF[#SUBDIR]`
    /// or `git+file:///path/repo@REF[#SUBDIR]` (repeatable); replaces the default skill roots
    /// (the bundled skills, ~/.synapse/skills, ~/.agents/skills, ~/.claude/skills).
    #[arg(long = "skills", value_name = "DIR|GIT")]
    pub skills: Vec<PathBuf>,
    /// A folder of script tools (repeatable), served besides ~/.synapse/tools; each folder in
    /// it is a tool group (see docs/script-tools.md).
    #[arg(long = "tools", value_name = "DIR")]
    pub tools: Vec<PathBuf>,
    /// The tool groups to serve, comma-separated: group names, `default` (variables, plans,
    /// skills and `ToolGroups`) and `all` (every built-in group); the built-in groups not
    /// named are off. Replaces the config file's `[groups]` for the built-in groups. The model
    /// can switch groups on and off with `ToolGroups`.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub groups: Option<Vec<String>>,
    /// Also serve the project's skills (./.agents/skills, ./.claude/skills), which win over
    /// all others. Project skills are untrusted until you say so.
    #[arg(long)]
    pub trust_project: bool,
    /// Where the store keeps its data (default: $XDG_DATA_HOME/synapse-mcp).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The workspace whose variables and approvals this server uses (default `default`).
    #[arg(long, value_name = "NAME", value_parser = workspace_name)]
    pub workspace: Option<String>,
    /// Where workspaces are stored: `memory` (nothing is kept), `sqlite://PATH` or
    /// `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (default: `DATA_DIR/synapse.db`).
    #[arg(long, value_name = "STORE")]
    pub store: Option<String>,
    /// Most bytes a workspace may hold, variable values and the state document together
    /// (default 1 GiB, or `workspace_max_bytes` in the config file); writes past it are refused.
    #[arg(long, value_name = "BYTES")]
    pub workspace_max_bytes: Option<u64>,
    /// Most characters of a skill's instructions (or of a markdown file of a skill) served
    /// whole (default 20000, or `skill_body_limit` in the config file); a longer one comes as
    /// its opening and a table of its sections, each loadable alone.
    #[arg(long, value_name = "CHARS")]
    pub skill_body_limit: Option<usize>,
    /// A TOML configuration file (groups, per-tool policies, capacity, output limit).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
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
        #[command(flatten)]
        options: ServeOptions,
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
        #[command(flatten)]
        options: ServeOptions,
    },
}

/// `serve`: stdio unless `--http` (or `[http] listen` in the config file) gives an address.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub options: ServeOptions,
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

/// The serve options (by their clap ids) each subcommand uses; `serve` uses them all, and a
/// subcommand missing here uses none.
const USES: &[(&str, &[&str])] = &[
    ("token add", &["workspace", "groups"]),
    ("workspace list", STORE),
    ("workspace export", STORE),
    (
        "workspace import",
        &["config", "data_dir", "store", "workspace"],
    ),
    (
        "workspace put",
        &["config", "data_dir", "store", "workspace"],
    ),
    ("workspace delete", STORE),
    ("doctor", STORE),
    (
        "skills check",
        &["skills", "trust_project", "config", "data_dir"],
    ),
    ("skills update", &["skills", "config", "data_dir"]),
    ("tools check", &["tools", "config"]),
];

/// What a serve option means to a subcommand where it means something else than to `serve`.
const HELP: &[(&str, &str, &str)] = &[
    (
        "token add",
        "workspace",
        "The token's default workspace (required)",
    ),
    (
        "token add",
        "groups",
        "Tool groups the token's sessions turn on in a workspace that has not switched them, \
         without asking: `snapshots` for a role-play front end",
    ),
    (
        "workspace import",
        "workspace",
        "Import under this name instead of the one it was exported as",
    ),
    (
        "workspace put",
        "workspace",
        "The workspace to write into (default: the configured one, `default`)",
    ),
];

/// The options naming a store.
const STORE: &[&str] = &["config", "data_dir", "store"];

/// Whether the subcommand at `path` (`workspace list`) uses the serve option `id`.
fn uses(path: &str, id: &str) -> bool {
    path == "serve"
        || USES
            .iter()
            .any(|(command, ids)| *command == path && ids.contains(&id))
}

impl Cli {
    /// Parses the command line (exiting with clap's message when it does not parse), with each
    /// subcommand's help listing only the serve options it uses. Options placed as earlier
    /// versions accepted them still work, each with a notice naming the new form: one given
    /// before the subcommand moves to it when the subcommand uses it; one a subcommand does not
    /// use is ignored.
    pub fn parse_scoped(arguments: impl IntoIterator<Item = std::ffi::OsString>) -> Self {
        Self::try_parse_scoped(arguments).unwrap_or_else(|error| error.exit())
    }

    /// [`Cli::parse_scoped`], returning clap's error instead of exiting.
    pub fn try_parse_scoped(
        arguments: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<Self, clap::Error> {
        let ids = serve_option_ids();
        let mut command = Self::command().mut_subcommands(|sub| scope(sub, "", &ids));
        let matches = command.try_get_matches_from_mut(arguments)?;
        let mut cli = Self::from_arg_matches(&matches)?;
        let Some((path, leaf)) = leaf(&matches, "") else {
            return Ok(cli);
        };
        let given = |matches: &clap::ArgMatches, id: &str| {
            matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
        };
        let mut top = std::mem::take(&mut cli.serve);
        // Where the options a subcommand does not use go, unread.
        let mut ignored = ServeOptions::default();
        let Some(options) = cli.command.as_mut().map(Command::options_mut) else {
            return Ok(cli);
        };
        let mut notices = Vec::new();
        for (id, long) in &ids {
            let early = given(&matches, id);
            if uses(&path, id) {
                if early {
                    options.take(&mut top, id);
                    notices.push(format!(
                        "`{long}` before the subcommand is deprecated: write it after `{path}` \
                         (`synapse-mcp {path} {long} …`)"
                    ));
                }
            } else if early || given(leaf, id) {
                ignored.take(options, id);
                notices.push(format!(
                    "`{long}` does not apply to `{path}` and is ignored: leave it out"
                ));
            }
        }
        cli.notices = notices;
        Ok(cli)
    }

    /// The serve options in effect: the subcommand's, or the top level's without one.
    pub fn options(&self) -> &ServeOptions {
        self.command.as_ref().map_or(&self.serve, Command::options)
    }

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

impl ServeOptions {
    /// Moves the option `id` from `from` here, unless it is given here already.
    fn take(&mut self, from: &mut Self, id: &str) {
        fn fill<T: Default + PartialEq>(to: &mut T, from: &mut T) {
            if *to == T::default() {
                *to = std::mem::take(from);
            }
        }
        match id {
            "skills" => fill(&mut self.skills, &mut from.skills),
            "tools" => fill(&mut self.tools, &mut from.tools),
            "groups" => fill(&mut self.groups, &mut from.groups),
            "trust_project" => fill(&mut self.trust_project, &mut from.trust_project),
            "data_dir" => fill(&mut self.data_dir, &mut from.data_dir),
            "workspace" => fill(&mut self.workspace, &mut from.workspace),
            "store" => fill(&mut self.store, &mut from.store),
            "workspace_max_bytes" => {
                fill(&mut self.workspace_max_bytes, &mut from.workspace_max_bytes);
            }
            "skill_body_limit" => fill(&mut self.skill_body_limit, &mut from.skill_body_limit),
            "config" => fill(&mut self.config, &mut from.config),
            // Every option has its arm: `every_serve_option_given_first_reaches_the_subcommand`.
            _ => {}
        }
    }
}

/// The serve options of whichever subcommand `$command` is (a reference, shared or not).
macro_rules! options_of {
    ($command:expr) => {
        match $command {
            Command::Serve(ServeArgs { options, .. })
            | Command::Token(
                TokenCommand::Add { options, .. }
                | TokenCommand::List { options, .. }
                | TokenCommand::Revoke { options, .. },
            )
            | Command::Workspace(
                WorkspaceCommand::List { options }
                | WorkspaceCommand::Export { options, .. }
                | WorkspaceCommand::Import { options, .. }
                | WorkspaceCommand::Put { options, .. }
                | WorkspaceCommand::Delete { options, .. },
            )
            | Command::Doctor { options, .. }
            | Command::Skills(
                SkillsCommand::Check { options, .. } | SkillsCommand::Update { options },
            )
            | Command::Tools(ToolsCommand::Check { options, .. })
            | Command::Config { options, .. } => options,
        }
    };
}

impl Command {
    /// The serve options given with this subcommand.
    pub fn options(&self) -> &ServeOptions {
        options_of!(self)
    }

    fn options_mut(&mut self) -> &mut ServeOptions {
        options_of!(self)
    }
}

/// The serve options' clap ids, each with its flag (`data_dir`, `--data-dir`).
fn serve_option_ids() -> Vec<(String, String)> {
    ServeOptions::augment_args(clap::Command::new("serve"))
        .get_arguments()
        .map(|arg| {
            let long = arg.get_long().unwrap_or_default();
            (arg.get_id().to_string(), format!("--{long}"))
        })
        .collect()
}

/// Hides, in each subcommand below `command` (whose path is `parent`), the serve options it
/// does not use.
fn scope(command: clap::Command, parent: &str, ids: &[(String, String)]) -> clap::Command {
    let path = format!("{parent}{}", command.get_name());
    if command.has_subcommands() {
        let prefix = format!("{path} ");
        return command.mut_subcommands(|sub| scope(sub, &prefix, ids));
    }
    command.mut_args(|arg| {
        let id = arg.get_id().as_str();
        let help = HELP
            .iter()
            .find(|(command, option, _)| *command == path && *option == id);
        if let Some((_, _, help)) = help {
            arg.help(*help)
        } else if ids.iter().any(|(serve, _)| serve == id) && !uses(&path, id) {
            arg.hide(true)
        } else {
            arg
        }
    })
}

/// The path of the subcommand given (`workspace list`) and its matches.
fn leaf<'a>(matches: &'a clap::ArgMatches, parent: &str) -> Option<(String, &'a clap::ArgMatches)> {
    let (name, sub) = matches.subcommand()?;
    let path = if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent} {name}")
    };
    Some(leaf(sub, &path).unwrap_or((path, sub)))
}

/// `--log-level`: a level, or a filter whose every directive without `=` is a level (a bare
/// word is a target name to tracing, so `loud` would silence every log).
fn log_level(text: &str) -> Result<String, String> {
    const LEVELS: [&str; 6] = ["error", "warn", "info", "debug", "trace", "off"];
    let unknown = text.split(',').find(|directive| {
        !directive.contains('=') && !LEVELS.contains(&directive.trim().to_lowercase().as_str())
    });
    if let Some(directive) = unknown {
        return Err(format!(
            "`{directive}` is not a log level: give error, warn, info, debug, trace or off, or \
             a filter such as `synapse_mcp=debug,warn`"
        ));
    }
    tracing_subscriber::EnvFilter::try_new(text)
        .map(|_| text.to_owned())
        .map_err(|error| {
            format!(
                "`{text}` is not a log filter ({error}): write one such as `synapse_mcp=debug,warn`"
            )
        })
}

/// `--workspace`: a name, not empty.
fn workspace_name(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err(
            "a workspace needs a name: give one such as `default` or `research`".to_owned(),
        );
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Every serve option, each with a value where it takes one.
    fn every_option() -> Vec<std::ffi::OsString> {
        let serve = ServeOptions::augment_args(clap::Command::new("serve"));
        serve
            .get_arguments()
            .flat_map(|arg| {
                let flag = format!("--{}", arg.get_long().unwrap_or_default());
                let value = arg.get_action().takes_values().then(|| "1".to_owned());
                std::iter::once(flag).chain(value)
            })
            .map(Into::into)
            .collect()
    }

    #[test]
    fn every_serve_option_given_first_reaches_the_subcommand() {
        let program = || std::iter::once(std::ffi::OsString::from("synapse-mcp"));
        let serve = || std::iter::once(std::ffi::OsString::from("serve"));
        let before = Cli::try_parse_scoped(program().chain(every_option()).chain(serve())).unwrap();
        let after = Cli::try_parse_scoped(program().chain(serve()).chain(every_option())).unwrap();
        assert_eq!(
            format!("{:?}", before.options()),
            format!("{:?}", after.options())
        );
        assert_eq!(before.notices.len(), serve_option_ids().len());
        assert_eq!(after.notices, Vec::<String>::new());
    }
}
