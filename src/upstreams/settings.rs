//! `[[upstream]]`: other MCP servers whose tools synapse-mcp serves as tool groups. The file's
//! tables (`config::UpstreamTable`) are checked here, once, into [`Upstream`]s with their paths
//! resolved, both at start and when the file is read again while the server runs
//! (`upstreams/reload.rs`); a table that breaks a rule is refused with an error naming the table
//! and the key. An upstream may not take a built-in group's name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::config::{self, FileConfig, UpstreamTable};
use crate::groups;
use crate::tools::Policy;

/// The most characters of an upstream's name: its tools are served as `{name}__{tool}` within
/// the 64 characters clients allow, so at least 22 are left for the tool's own name.
pub const NAME_LIMIT: usize = 40;

/// What one upstream server may cost: time per call, bytes per message, requests per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub call_timeout: std::time::Duration,
    pub message_bytes: usize,
    pub requests_per_second: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            call_timeout: std::time::Duration::from_mins(2),
            message_bytes: 16 << 20,
            requests_per_second: 50,
        }
    }
}

/// An upstream server, checked, as synapse-mcp starts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    pub name: String,
    /// The program, with a relative path already resolved against the config file's folder.
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    /// Whether its group is on by default.
    pub enabled: bool,
    pub execution: Option<Policy>,
    pub result: Option<Policy>,
    pub limits: Limits,
    /// The rules its table declares, read.
    pub rules: Vec<crate::rules::SkillRule>,
}

/// The file's `[[upstream]]` tables, checked; `path` is the file, whose folder relative paths
/// are taken from.
pub fn checked(path: &Path, file: &FileConfig) -> Result<Vec<Upstream>, config::Error> {
    let folder = path.parent().unwrap_or_else(|| Path::new(""));
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    check(&file.upstream, folder).map_err(|message| config::Error::Invalid {
        path: path.to_owned(),
        message,
    })
}

/// Reads the file again for its `[[upstream]]` tables, checked; also gives the rest of the
/// file, with the tables taken out, to tell whether anything else changed.
pub fn read(path: &Path) -> Result<(Vec<Upstream>, FileConfig), config::Error> {
    let mut file = config::read(path)?;
    let upstreams = checked(path, &file)?;
    file.upstream.clear();
    Ok((upstreams, file))
}

/// Checks every table; `folder` is the config file's folder. The first table that breaks a
/// rule is refused with a message naming it and the key.
pub fn check(tables: &[UpstreamTable], folder: &Path) -> Result<Vec<Upstream>, String> {
    let mut seen = BTreeSet::new();
    let mut upstreams = Vec::with_capacity(tables.len());
    for (index, table) in tables.iter().enumerate() {
        let which = format!(
            "[[upstream]] number {} (name = {:?})",
            index + 1,
            table.name
        );
        check_name(&table.name).map_err(|problem| format!("{which}: `name` {problem}"))?;
        if !seen.insert(table.name.as_str()) {
            return Err(format!(
                "{which}: `name` is given to another [[upstream]] already; each needs its own"
            ));
        }
        if table.url.is_some() {
            return Err(format!(
                "{which}: `url` (MCP over HTTP) is not supported yet; start the server with \
                 `command` (and `args`) instead"
            ));
        }
        let Some(command) = table
            .command
            .as_deref()
            .filter(|command| !command.is_empty())
        else {
            return Err(format!(
                "{which}: `command` is missing: give the program that serves MCP over stdio, \
                 e.g. command = \"npx\", args = [\"-y\", \"@modelcontextprotocol/server-everything\"]"
            ));
        };
        upstreams.push(Upstream {
            name: table.name.clone(),
            command: resolve_command(command, folder),
            args: table.args.clone(),
            env: table.env.clone(),
            cwd: table.cwd.as_ref().map(|cwd| folder.join(cwd)),
            enabled: table.enabled.unwrap_or(true),
            execution: table.execution,
            result: table.result,
            limits: limits(table).map_err(|problem| format!("{which}: {problem}"))?,
            rules: (table.rules.iter())
                .map(|rule| rule.read(folder).map(Into::into))
                .collect::<Result<_, _>>()
                .map_err(|problem| format!("{which}: {problem}"))?,
        });
    }
    Ok(upstreams)
}

/// The table's limits, the defaults where it gives none; a limit of zero is refused.
fn limits(table: &UpstreamTable) -> Result<Limits, String> {
    let defaults = Limits::default();
    let positive = |key: &str, value: Option<u64>| match value {
        Some(0) => Err(format!("`{key}` must be at least 1")),
        _ => Ok(()),
    };
    positive("call_timeout_seconds", table.call_timeout_seconds)?;
    positive(
        "max_message_bytes",
        table.max_message_bytes.map(|bytes| bytes as u64),
    )?;
    positive(
        "requests_per_second",
        table.requests_per_second.map(u64::from),
    )?;
    Ok(Limits {
        call_timeout: table
            .call_timeout_seconds
            .map_or(defaults.call_timeout, std::time::Duration::from_secs),
        message_bytes: table.max_message_bytes.unwrap_or(defaults.message_bytes),
        requests_per_second: table
            .requests_per_second
            .unwrap_or(defaults.requests_per_second),
    })
}

/// Why `name` cannot name an upstream, if it cannot.
fn check_name(name: &str) -> Result<(), String> {
    let valid = |character: char| character.is_ascii_alphanumeric() || "_-".contains(character);
    if name.is_empty() || name.chars().count() > NAME_LIMIT || !name.chars().all(valid) {
        return Err(format!(
            "must be 1 to {NAME_LIMIT} letters, digits, `_` or `-` (it prefixes the tool names, \
             `{{name}}__{{tool}}`)"
        ));
    }
    if let Some(taken) = groups::BUILT_IN
        .into_iter()
        .find(|group| group.eq_ignore_ascii_case(name))
    {
        return Err(format!(
            "is the built-in tool group `{taken}`; choose another name"
        ));
    }
    Ok(())
}

/// A command with a path separator is a path; a relative one is taken from `folder`.
fn resolve_command(command: &str, folder: &Path) -> String {
    let path = Path::new(command);
    if command.contains('/') && path.is_relative() {
        folder.join(path).display().to_string()
    } else {
        command.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn table(name: &str) -> UpstreamTable {
        UpstreamTable {
            name: name.to_owned(),
            command: Some("server".to_owned()),
            ..UpstreamTable::default()
        }
    }

    #[test]
    fn relative_paths_are_taken_from_the_config_folder() {
        let mut relative = table("local");
        relative.command = Some("./bin/server".to_owned());
        relative.cwd = Some(PathBuf::from("work"));
        let checked = check(&[relative, table("path")], Path::new("/etc/synapse")).unwrap();
        assert_eq!(checked[0].command, "/etc/synapse/./bin/server");
        assert_eq!(checked[0].cwd, Some(PathBuf::from("/etc/synapse/work")));
        assert_eq!(checked[1].command, "server");
        assert!(checked[1].enabled);
    }

    #[test]
    fn a_table_that_breaks_a_rule_is_named_with_its_key() {
        let folder = Path::new("/");
        let cases = [
            (
                vec![table("vars")],
                "number 1 (name = \"vars\"): `name` is the built-in tool group `vars`",
            ),
            (
                vec![table("Tools")],
                "`name` is the built-in tool group `tools`",
            ),
            (vec![table("a.b")], "`name` must be 1 to 40 letters, digits"),
            (vec![table(&"x".repeat(41))], "`name` must be 1 to 40"),
            (
                vec![table("a"), table("a")],
                "number 2 (name = \"a\"): `name` is given to another",
            ),
            (
                vec![UpstreamTable {
                    url: Some("http://x".into()),
                    ..table("web")
                }],
                "`url` (MCP over HTTP) is not supported yet",
            ),
            (
                vec![UpstreamTable {
                    command: None,
                    ..table("none")
                }],
                "`command` is missing",
            ),
        ];
        for (tables, expected) in cases {
            let error = check(&tables, folder).unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
    }
}
