//! The host entries of `synapse-mcp config HOST`: what Claude Desktop, Claude Code, Cursor and
//! VS Code need in their own configuration files to start this binary over stdio, printed ready
//! to paste, or (`--write`) merged into the host's file with a backup of what was there. Pure
//! data and one file write: nothing here knows MCP.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// A host whose configuration file `config` can print or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    VsCode,
}

/// Why a host's entry could not be made or merged.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("there is no host `{given}`; give one of {}", Host::names())]
    Unknown { given: String },
    #[error(
        "{} is not a JSON object ({reason}), so the entry cannot be merged into it; fix the \
         file, or add the entry printed by `synapse-mcp config {host}` by hand",
        file.display()
    )]
    NotAnObject {
        file: PathBuf,
        host: &'static str,
        reason: String,
    },
    #[error("cannot {action} {}: {source}", file.display())]
    Io {
        action: &'static str,
        file: PathBuf,
        source: std::io::Error,
    },
}

/// The folders a host's file is found from: the user's home, the folder `config` runs in (for
/// the hosts whose file belongs to a project), and the platform's configuration folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    pub home: PathBuf,
    pub current: PathBuf,
    /// `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` elsewhere when it is set.
    pub config_home: Option<PathBuf>,
}

/// What `--write` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub file: PathBuf,
    /// Where the file as it was is kept, when there was one.
    pub backup: Option<PathBuf>,
    /// Whether an entry of the same name was replaced.
    pub replaced: bool,
}

impl Host {
    pub const ALL: [Self; 4] = [
        Self::ClaudeDesktop,
        Self::ClaudeCode,
        Self::Cursor,
        Self::VsCode,
    ];

    /// The name `config` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => "claude-desktop",
            Self::ClaudeCode => "claude-code",
            Self::Cursor => "cursor",
            Self::VsCode => "vscode",
        }
    }

    fn names() -> String {
        Self::ALL
            .iter()
            .map(|host| format!("`{}`", host.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The host called `name`.
    pub fn parse(name: &str) -> Result<Self, HostError> {
        Self::ALL
            .into_iter()
            .find(|host| host.name() == name)
            .ok_or_else(|| HostError::Unknown {
                given: name.to_owned(),
            })
    }

    /// The member of the file's top object that holds the servers.
    fn servers_member(self) -> &'static str {
        match self {
            Self::VsCode => "servers",
            Self::ClaudeDesktop | Self::ClaudeCode | Self::Cursor => "mcpServers",
        }
    }

    /// One server's entry: the command and its arguments (and the transport, where the host's
    /// format names it).
    pub fn server_entry(self, command: &Path, arguments: &[String]) -> Value {
        let mut entry = Map::new();
        if matches!(self, Self::ClaudeCode | Self::VsCode) {
            entry.insert("type".to_owned(), json!("stdio"));
        }
        entry.insert("command".to_owned(), json!(command.display().to_string()));
        entry.insert("args".to_owned(), json!(arguments));
        Value::Object(entry)
    }

    /// The host's whole file holding just this server: what to paste into an empty file.
    pub fn snippet(self, name: &str, entry: Value) -> Value {
        let mut servers = Map::new();
        servers.insert(name.to_owned(), entry);
        let mut file = Map::new();
        file.insert(self.servers_member().to_owned(), Value::Object(servers));
        Value::Object(file)
    }

    /// The file `--write` merges the entry into: Claude Desktop's and Cursor's file for the
    /// user, Claude Code's and VS Code's of the project in the current folder.
    pub fn file(self, places: &Places) -> PathBuf {
        match self {
            Self::ClaudeDesktop => claude_desktop_folder(places).join("claude_desktop_config.json"),
            Self::ClaudeCode => places.current.join(".mcp.json"),
            Self::Cursor => places.home.join(".cursor").join("mcp.json"),
            Self::VsCode => places.current.join(".vscode").join("mcp.json"),
        }
    }

    /// What `config HOST` prints: where the entry goes, the entry, and for Claude Code the
    /// command that adds it for the user instead.
    pub fn instructions(
        self,
        name: &str,
        command: &Path,
        arguments: &[String],
        places: &Places,
    ) -> String {
        let entry = self.server_entry(command, arguments);
        let snippet = serde_json::to_string_pretty(&self.snippet(name, entry)).unwrap_or_default();
        let file = self.file(places);
        let mut text = format!(
            "# {} reads {}: merge this into it (or run `synapse-mcp config {} --write`)\n{snippet}\n",
            self.title(),
            file.display(),
            self.name(),
        );
        if self == Self::ClaudeCode {
            let mut line = format!(
                "claude mcp add --scope user {name} -- {}",
                shell_word(&command.display().to_string())
            );
            for argument in arguments {
                line.push(' ');
                line.push_str(&shell_word(argument));
            }
            text.push_str("# or, for every project of this user:\n");
            text.push_str(&line);
            text.push('\n');
        }
        text
    }

    fn title(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => "Claude Desktop",
            Self::ClaudeCode => "Claude Code (this project)",
            Self::Cursor => "Cursor",
            Self::VsCode => "VS Code (this workspace)",
        }
    }
}

/// Claude Desktop's configuration folder on this platform.
fn claude_desktop_folder(places: &Places) -> PathBuf {
    if cfg!(target_os = "macos") {
        places.home.join("Library/Application Support/Claude")
    } else {
        places
            .config_home
            .clone()
            .unwrap_or_else(|| {
                if cfg!(windows) {
                    places.home.join("AppData").join("Roaming")
                } else {
                    places.home.join(".config")
                }
            })
            .join("Claude")
    }
}

/// `word` as one shell word: as it is when it needs no quoting, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || "/._-+=:,@%".contains(character));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The host's file with the server `name` set to `entry`, everything else kept: the text to
/// write, and whether an entry of that name was replaced. `existing` is the file's text, if
/// there is a file.
pub fn merge(
    host: Host,
    file: &Path,
    existing: Option<&str>,
    name: &str,
    entry: Value,
) -> Result<(String, bool), HostError> {
    let not_an_object = |reason: String| HostError::NotAnObject {
        file: file.to_owned(),
        host: host.name(),
        reason,
    };
    let mut root = match existing.map(str::trim) {
        None | Some("") => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(root)) => root,
            Ok(_) => return Err(not_an_object("its top level is not an object".to_owned())),
            Err(error) => return Err(not_an_object(error.to_string())),
        },
    };
    let member = host.servers_member();
    let servers = root
        .entry(member)
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(not_an_object(format!("its `{member}` is not an object")));
    };
    let replaced = servers.insert(name.to_owned(), entry).is_some();
    let mut text = serde_json::to_string_pretty(&Value::Object(root)).unwrap_or_default();
    text.push('\n');
    Ok((text, replaced))
}

/// Merges the entry into the host's file: the file as it was is copied beside it first
/// (`NAME.backup-SECONDS`), and the new text replaces it at once (written aside, then renamed).
pub fn write(
    host: Host,
    file: &Path,
    name: &str,
    entry: Value,
    now_seconds: u64,
) -> Result<Written, HostError> {
    let io = |action: &'static str, file: &Path| {
        let file = file.to_owned();
        move |source| HostError::Io {
            action,
            file,
            source,
        }
    };
    let existing = match std::fs::read_to_string(file) {
        Ok(text) => Some(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(io("read", file)(error)),
    };
    let (text, replaced) = merge(host, file, existing.as_deref(), name, entry)?;
    let folder = file.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(folder).map_err(io("create the folder of", file))?;
    let backup = match existing {
        Some(_) => {
            let mut backup = file.as_os_str().to_owned();
            backup.push(format!(".backup-{now_seconds}"));
            let backup = PathBuf::from(backup);
            std::fs::copy(file, &backup).map_err(io("back up", file))?;
            Some(backup)
        }
        None => None,
    };
    let mut aside = file.as_os_str().to_owned();
    aside.push(".synapse-tmp");
    let aside = PathBuf::from(aside);
    std::fs::write(&aside, text).map_err(io("write", &aside))?;
    std::fs::rename(&aside, file).map_err(io("replace", file))?;
    Ok(Written {
        file: file.to_owned(),
        backup,
        replaced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn places(root: &Path) -> Places {
        Places {
            home: root.join("home"),
            current: root.join("project"),
            config_home: None,
        }
    }

    #[test]
    fn every_host_gets_its_own_shape() {
        let command = Path::new("/opt/synapse/bin/synapse-mcp");
        let arguments = vec!["--workspace".to_owned(), "notes".to_owned()];
        let shapes: Vec<Value> = Host::ALL
            .iter()
            .map(|host| host.snippet("synapse", host.server_entry(command, &arguments)))
            .collect();
        let plain =
            json!({"command": "/opt/synapse/bin/synapse-mcp", "args": ["--workspace", "notes"]});
        let typed = json!({"type": "stdio", "command": "/opt/synapse/bin/synapse-mcp", "args": ["--workspace", "notes"]});
        assert_eq!(
            shapes,
            [
                json!({"mcpServers": {"synapse": plain}}),
                json!({"mcpServers": {"synapse": typed}}),
                json!({"mcpServers": {"synapse": plain}}),
                json!({"servers": {"synapse": typed}}),
            ]
        );
    }

    #[test]
    fn each_host_has_its_file() {
        let root = Path::new("/r");
        let files: Vec<PathBuf> = Host::ALL
            .iter()
            .map(|host| host.file(&places(root)))
            .collect();
        let desktop = if cfg!(target_os = "macos") {
            "/r/home/Library/Application Support/Claude/claude_desktop_config.json"
        } else {
            "/r/home/.config/Claude/claude_desktop_config.json"
        };
        assert_eq!(
            files,
            [
                PathBuf::from(desktop),
                PathBuf::from("/r/project/.mcp.json"),
                PathBuf::from("/r/home/.cursor/mcp.json"),
                PathBuf::from("/r/project/.vscode/mcp.json"),
            ]
        );
    }

    #[test]
    fn a_merge_keeps_the_other_servers_and_settings_and_replaces_its_own() {
        let existing = r#"{"globalShortcut": "Ctrl+Space", "mcpServers": {"other": {"command": "x"}, "synapse": {"command": "old"}}}"#;
        let entry = json!({"command": "/new", "args": []});
        let (text, replaced) = merge(
            Host::Cursor,
            Path::new("f"),
            Some(existing),
            "synapse",
            entry,
        )
        .unwrap();
        assert!(replaced);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"globalShortcut": "Ctrl+Space", "mcpServers": {"other": {"command": "x"}, "synapse": {"command": "/new", "args": []}}})
        );
        let (text, replaced) =
            merge(Host::VsCode, Path::new("f"), None, "synapse", json!({})).unwrap();
        assert_eq!(
            (text.as_str(), replaced),
            ("{\n  \"servers\": {\n    \"synapse\": {}\n  }\n}\n", false)
        );
    }

    #[test]
    fn what_is_not_an_object_is_refused_with_the_file_named() {
        let refusals: Vec<String> = ["[1, 2]", "{\"mcpServers\": []}", "{ // a comment\n}"]
            .iter()
            .map(|text| {
                merge(
                    Host::ClaudeDesktop,
                    Path::new("/c/claude.json"),
                    Some(text),
                    "synapse",
                    json!({}),
                )
                .unwrap_err()
                .to_string()
            })
            .collect();
        assert_eq!(
            refusals,
            [
                "/c/claude.json is not a JSON object (its top level is not an object), so the entry cannot be merged into it; fix the file, or add the entry printed by `synapse-mcp config claude-desktop` by hand",
                "/c/claude.json is not a JSON object (its `mcpServers` is not an object), so the entry cannot be merged into it; fix the file, or add the entry printed by `synapse-mcp config claude-desktop` by hand",
                "/c/claude.json is not a JSON object (key must be a string at line 1 column 3), so the entry cannot be merged into it; fix the file, or add the entry printed by `synapse-mcp config claude-desktop` by hand",
            ]
        );
        assert_eq!(
            Host::parse("claude").unwrap_err().to_string(),
            "there is no host `claude`; give one of `claude-desktop`, `claude-code`, `cursor`, `vscode`"
        );
    }

    #[test]
    fn a_write_backs_up_what_was_there_and_a_first_write_makes_the_folders() {
        let root = tempfile::tempdir().unwrap();
        let file = Host::VsCode.file(&places(root.path()));
        let written = write(Host::VsCode, &file, "synapse", json!({"command": "/a"}), 7).unwrap();
        assert_eq!(
            written,
            Written {
                file: file.clone(),
                backup: None,
                replaced: false
            }
        );
        let first = std::fs::read_to_string(&file).unwrap();
        let written = write(Host::VsCode, &file, "synapse", json!({"command": "/b"}), 8).unwrap();
        let backup = root.path().join("project/.vscode/mcp.json.backup-8");
        assert_eq!(
            written,
            Written {
                file: file.clone(),
                backup: Some(backup.clone()),
                replaced: true
            }
        );
        assert_eq!(std::fs::read_to_string(backup).unwrap(), first);
        assert_eq!(
            serde_json::from_str::<Value>(&std::fs::read_to_string(&file).unwrap()).unwrap(),
            json!({"servers": {"synapse": {"command": "/b"}}})
        );
    }

    #[test]
    fn claude_code_also_gets_the_command_for_every_project() {
        let text = Host::ClaudeCode.instructions(
            "synapse",
            Path::new("/opt/my tools/synapse-mcp"),
            &["--workspace".to_owned(), "it's".to_owned()],
            &places(Path::new("/r")),
        );
        assert_eq!(
            text,
            "# Claude Code (this project) reads /r/project/.mcp.json: merge this into it (or run `synapse-mcp config claude-code --write`)\n{\n  \"mcpServers\": {\n    \"synapse\": {\n      \"type\": \"stdio\",\n      \"command\": \"/opt/my tools/synapse-mcp\",\n      \"args\": [\n        \"--workspace\",\n        \"it's\"\n      ]\n    }\n  }\n}\n# or, for every project of this user:\nclaude mcp add --scope user synapse -- '/opt/my tools/synapse-mcp' --workspace 'it'\\''s'\n"
        );
    }
}
