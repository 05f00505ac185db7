//! The configuration file's schema (serde, TOML): every table and key as written, and reading
//! the file. Nothing here knows what the values mean; `app/settings.rs` turns them into the
//! domain's settings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Error, LogFormat};

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
    /// List one prompt per skill (`skill-{name}`) besides the `skill` prompt, whose `name`
    /// argument completes to every skill (default false: a large library would fill the
    /// host's prompt menu).
    pub skill_prompts: Option<bool>,
    /// Limits on the chat snapshots' user functions.
    #[serde(default)]
    pub snapshots: SnapshotsConfig,
    /// Other MCP servers whose tools are served as tool groups, `{name}__{tool}`; the tables
    /// are read again when the file changes.
    #[serde(default)]
    pub upstream: Vec<UpstreamTable>,
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

// The approval policies, in the words of the file and of the executor alike (`tools::Policy`).
/// When to ask the user.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Never ask.
    #[default]
    #[serde(alias = "never")]
    Auto,
    /// Ask the first time a tool is called with a given argument shape (and scope, such as the
    /// skill a save writes); an approval the user marks "from now on" is remembered for the
    /// workspace.
    AskOnce,
    /// Ask every time.
    AskAlways,
}

// The fallback, in the words of the file and of the executor alike (`tools::Fallback`).
/// What happens when a policy asks but the client can neither elicit nor retry with input.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Fallback {
    #[default]
    Deny,
    Allow,
}

/// The most characters of one declared rule's text (`prompt` or `file`).
pub const DECLARED_RULE_LIMIT: usize = 20_000;

/// A rule as a script group's `group.json` or an `[[upstream]]` table declares it.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct DeclaredRule {
    /// The rule's name: its variable is `Rule/{group}/{name}` (letters, digits, `_`, `-`).
    pub name: String,
    /// One sentence for the rule index.
    pub description: String,
    /// The rule's text (markdown); or give `file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// A markdown file holding the rule's text, relative to the group folder (script groups) or
    /// to the configuration file's folder (upstream servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// When the model should read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Pinned in the instructions and inlined in the `tool-rules` prompt instead of read on
    /// demand.
    #[serde(
        default,
        alias = "alwaysLoad",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub always_load: bool,
    /// Tools the rule teaches (full names, `group__tool`): it is left out while any is off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
}

impl DeclaredRule {
    /// The rule with its text in `prompt`, its `file` read from `folder`; or why it cannot be
    /// served.
    pub fn read(&self, folder: &Path) -> Result<Self, String> {
        let valid = |character: char| character.is_ascii_alphanumeric() || "_-".contains(character);
        if self.name.is_empty() || self.name.len() > 64 || !self.name.chars().all(valid) {
            return Err(format!(
                "rule name `{}` must be 1 to 64 letters, digits, `_` or `-`",
                self.name.chars().take(80).collect::<String>()
            ));
        }
        let prompt = match (&self.prompt, &self.file) {
            (Some(prompt), None) => prompt.clone(),
            (None, Some(file)) => {
                let path = folder.join(file);
                if Path::new(file).is_absolute() || file.split('/').any(|part| part == "..") {
                    return Err(format!(
                        "rule `{}`: `file` {file:?} must be a path inside {}",
                        self.name,
                        folder.display()
                    ));
                }
                std::fs::read_to_string(&path).map_err(|error| {
                    format!(
                        "rule `{}`: cannot read {}: {error}",
                        self.name,
                        path.display()
                    )
                })?
            }
            _ => {
                return Err(format!(
                    "rule `{}` needs exactly one of `prompt` (its text) and `file` (a markdown file)",
                    self.name
                ));
            }
        };
        if prompt.chars().count() > DECLARED_RULE_LIMIT {
            return Err(format!(
                "rule `{}` is longer than {DECLARED_RULE_LIMIT} characters; shorten it or split it",
                self.name
            ));
        }
        Ok(Self {
            prompt: Some(prompt),
            file: None,
            ..self.clone()
        })
    }
}

/// One `[[upstream]]` table as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpstreamTable {
    /// The tool group's name (letters, digits, `_` and `-`, at most 40); its tools are served
    /// as `{name}__{tool}`.
    pub name: String,
    /// The program that serves MCP over stdio: a name looked up on `PATH`, or a path (a
    /// relative path is taken from the folder of this file).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for it, on top of synapse-mcp's own.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The folder it runs in (relative: to the folder of this file); default: synapse-mcp's.
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP servers are not supported yet; give `command` instead.
    pub url: Option<String>,
    /// Whether the group is on when no switch says otherwise (default `true`).
    pub enabled: Option<bool>,
    /// Approval before its tools run: `auto`, `ask-once` or `ask-always` (default: `auto` for
    /// tools the server marks read-only, `ask-once` for the others). `[tools."name__tool"]`
    /// overrides it for one tool.
    pub execution: Option<Policy>,
    /// Approval before their results reach the model (default `auto`).
    pub result: Option<Policy>,
    /// Seconds one tool call may wait for the server's answer before it fails (default 120).
    pub call_timeout_seconds: Option<u64>,
    /// The largest message read from the server, in bytes (default 16 MiB): a longer answer
    /// fails its call with an error saying so.
    pub max_message_bytes: Option<usize>,
    /// Requests of the server (a `ping`, a question for the user) answered per second (default
    /// 50); more are refused, and four times as many refusals in one second disconnect it.
    pub requests_per_second: Option<u32>,
    /// Rules for the model about this server's tools: `Rule/{name}/{rule}` variables listed in
    /// the `tool-rules` prompt (or pinned in the instructions with `always_load`).
    #[serde(default)]
    pub rules: Vec<DeclaredRule>,
}

/// Reads and parses the file; a capacity of 0 is refused.
pub fn read(path: &Path) -> Result<FileConfig, Error> {
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
