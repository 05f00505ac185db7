//! The domain's settings, made from the command line and the file (`config`): the store's
//! location, the executor's policies and limits, the skill roots (git sources resolved), the
//! script limits, the checked upstream servers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{self, Cli, Command, FileConfig, HttpSettings, LogFormat, ServeArgs};
use crate::store::Location;
use crate::tools::{ExecutorSettings, ToolOverride};
use crate::upstreams::settings::Upstream;
use crate::vars::VariableSystem;

/// Bytes a workspace may hold when the configuration does not say.
pub const DEFAULT_WORKSPACE_MAX_BYTES: u64 = 1 << 30;

/// Why the settings could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    File(#[from] config::Error),
    #[error("{0}")]
    Store(String),
    #[error("{0}")]
    SkillSource(#[from] crate::skills::sources::Error),
    #[error(
        "git skill sources are copied into the data folder, and none was found: set XDG_DATA_HOME or HOME, or pass --data-dir"
    )]
    NoDataFolder,
    #[error("{0}")]
    Groups(String),
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
pub struct Settings {
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
    /// List one `skill-{name}` prompt per skill too (`skill_prompts` in the file).
    pub skill_prompts: bool,
    pub capacity: usize,
    pub groups: BTreeMap<String, bool>,
    pub disabled_tools: Vec<String>,
    pub executor: ExecutorSettings,
    pub script_limits: crate::snapshots::javascript::Limits,
    /// The MCP servers to start, checked.
    pub upstreams: Vec<Upstream>,
    /// The configuration file, watched for changes to its `[[upstream]]` tables.
    pub file: Option<PathBuf>,
    /// Serve over HTTP (`serve --http` or `[http] listen`); `None`: stdio.
    pub http: Option<HttpSettings>,
    /// Serve Prometheus metrics on this address (`serve --metrics` or `[metrics] listen`).
    pub metrics: Option<std::net::SocketAddr>,
    /// How log lines look (`--log-format`, else the file's `log_format`).
    pub log_format: LogFormat,
}

impl Default for Settings {
    fn default() -> Self {
        Self::from_parts(
            &FileConfig::default(),
            "default".to_owned(),
            None,
            Vec::new(),
        )
    }
}

impl Settings {
    /// Reads the file named on the command line, if any, and merges the two.
    pub fn load(cli: &Cli) -> Result<Self, Error> {
        let options = cli.options();
        let file = match &options.config {
            Some(path) => crate::config::read(path)?,
            None => FileConfig::default(),
        };
        let listed = if options.skills.is_empty() {
            &file.skills
        } else {
            &options.skills
        };
        let skills = skill_roots(
            listed,
            file.skill_sources_allow.as_deref(),
            options.data_dir.as_deref(),
        )?;
        let workspace = options
            .workspace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let mut config = Self::from_parts(&file, workspace, options.data_dir.clone(), skills);
        if let Some(path) = &options.config {
            config.skills_update_interval = update_interval(path, &file)?;
            config.upstreams = crate::upstreams::settings::checked(path, &file)?;
            config.file = Some(path.clone());
        }
        let store = options.store.as_deref().or(file.store.as_deref());
        config.store =
            Location::resolve(store, options.data_dir.as_deref()).map_err(Error::Store)?;
        config.trust_project = options.trust_project;
        config.tool_folders = options
            .tools
            .iter()
            .chain(&file.tool_folders)
            .cloned()
            .collect();
        if let Some(bytes) = options.workspace_max_bytes {
            config.workspace_max_bytes = bytes;
        }
        if let Some(characters) = options.skill_body_limit {
            config.skill_body_limit = characters;
        }
        if let Some(Command::Serve(serve)) = &cli.command {
            config.http = crate::config::http::settings(serve, &file.http);
            config.metrics = serve.metrics.or(file.metrics.listen);
        } else if cli.command.is_none() {
            config.http = crate::config::http::settings(&ServeArgs::default(), &file.http);
            config.metrics = file.metrics.listen;
        }
        config.log_format = cli.log_format.or(file.log_format).unwrap_or_default();
        if let Some(listed) = &options.groups {
            config.groups.extend(groups_listed(listed)?);
        }
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
            skill_prompts: file.skill_prompts.unwrap_or(false),
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

    /// Where the indexes of the skill and tool folders are kept: in the data folder (`--data-dir`,
    /// else the default one); `None` when there is none, and then no index is kept.
    pub fn indexes(&self) -> Option<crate::folders::Indexes> {
        let data_folder = self
            .data_dir
            .clone()
            .or_else(crate::store::default_data_dir)?;
        Some(crate::folders::Indexes::new(&data_folder))
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

/// What `--groups LIST` switches: every built-in group on when listed (by name, or as one of
/// `default` or `all`) and off otherwise; other names (script folders, MCP servers) on.
fn groups_listed(listed: &[String]) -> Result<BTreeMap<String, bool>, Error> {
    let mut groups = BTreeMap::new();
    let listed: Vec<&str> = listed.iter().map(|name| name.trim()).collect();
    if let Some(empty) = listed.iter().position(|name| name.is_empty()) {
        return Err(Error::Groups(format!(
            "--groups: item {} is empty; give group names separated by commas, or `default` or `all`",
            empty + 1
        )));
    }
    for group in crate::groups::switchable() {
        let on = listed.iter().any(|&name| {
            name == group.name || name == "all" || (name == "default" && group.enabled)
        });
        groups.insert(group.name.to_owned(), on);
    }
    for name in listed {
        if !matches!(name, "all" | "default") {
            groups.insert(name.to_owned(), true);
        }
    }
    Ok(groups)
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
    let invalid = |problem: String| config::Error::Invalid {
        path: path.to_owned(),
        message: format!("skills_update_interval `{text}` {problem}"),
    };
    let interval = humantime::parse_duration(text).map_err(|error| {
        invalid(format!(
            "is not a duration ({error}); write one like \"6h\" or \"30m\""
        ))
    })?;
    if interval < std::time::Duration::from_mins(1) {
        return Err(invalid("is shorter than a minute".to_owned()).into());
    }
    Ok(Some(interval))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Fallback, Policy};
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
        let config = Settings::from_parts(&file, "w".into(), None, Vec::new());
        assert_eq!(config.capacity, 50);
        assert_eq!(config.workspace_max_bytes, 5000);
        assert_eq!(config.skill_body_limit, 300);
        assert_eq!(
            Settings::default().workspace_max_bytes,
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
