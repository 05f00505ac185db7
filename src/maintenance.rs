//! The maintenance subcommands, which run instead of serving: `workspace list|export|import|
//! put|delete` and `doctor`. They print reports for a person (stdout is not an MCP channel here).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use crate::app::Settings;
use crate::config::WorkspaceCommand;
use crate::json::nesting::MAX_DEPTH;
use crate::store::export::{self, WorkspaceExport};
use crate::store::{
    self, DeepState, DurableStore, Location, SCHEMA_VERSION, SqliteOptions, SqliteStore, Store,
};
#[cfg(feature = "postgres")]
use crate::store::{PostgresOptions, PostgresStore};
use crate::text::shorten;
use crate::vars::{self, NewVariable, SystemClock, ValueKind, VarType, wall_clock};
use crate::workspace::{self as workspaces, Workspace};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the store is `memory`: there is nothing stored to manage; drop --store memory")]
    MemoryStore,
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("cannot write the report: {0}")]
    Output(#[from] std::io::Error),
    #[error("cannot read {path}: {message}")]
    ReadExport { path: String, message: String },
    #[error(
        "workspace `{name}` already holds {count} variables; pass --replace to overwrite it, or --workspace NAME to import under another name"
    )]
    WouldOverwrite { name: String, count: u64 },
    #[error("cannot read {path}: {message}")]
    ReadValue { path: String, message: String },
    #[error(
        "variable `{name}` is a rule (RULE) and is not replaced; put the file under another name"
    )]
    Rule { name: String },
    #[error(transparent)]
    Workspace(#[from] workspaces::Error),
    #[error("cannot write {path}: {source}")]
    WriteExport {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "deleting workspace `{name}` ({contents}) needs confirmation, and there is no terminal to ask on: pass --yes (`synapse-mcp workspace delete {name} --yes`)"
    )]
    NeedsYes { name: String, contents: String },
    #[error("workspace `{name}` was kept: nothing was deleted")]
    NotConfirmed { name: String },
    #[error("the store at {path} failed its integrity check: {problems}")]
    Damaged { path: String, problems: String },
    #[error(
        "the state of workspace `{workspace}` (and {count} in all) nests deeper than the limit of {MAX_DEPTH}; it is read with its deepest branches as text, and `synapse-mcp doctor --repair` stores it that way"
    )]
    TooDeep { workspace: String, count: usize },
}

fn open(config: &Settings) -> Result<Arc<dyn DurableStore>, Error> {
    config
        .store
        .open(config.store_max_bytes)?
        .ok_or(Error::MemoryStore)
}

/// Runs a `workspace` subcommand. `chosen_workspace` is `--workspace` when it was given.
pub fn workspace(
    config: &Settings,
    command: &WorkspaceCommand,
    chosen_workspace: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let store = open(config)?;
    match command {
        WorkspaceCommand::List { .. } => list(store.as_ref(), out),
        WorkspaceCommand::Export { name, output, .. } => {
            let exported = export::export(store.as_ref(), name, wall_clock())?;
            let mut json =
                serde_json::to_string_pretty(&exported).map_err(std::io::Error::other)?;
            json.push('\n');
            match output {
                Some(path) => std::fs::write(path, json).map_err(|source| Error::WriteExport {
                    path: path.display().to_string(),
                    source,
                }),
                None => Ok(out.write_all(json.as_bytes())?),
            }
        }
        WorkspaceCommand::Import { file, replace, .. } => {
            import(store.as_ref(), file, chosen_workspace, *replace, out)
        }
        WorkspaceCommand::Put {
            name,
            file,
            desc,
            tags,
            json,
            ..
        } => {
            let value = read_value(file, *json)?;
            let workspace = chosen_workspace.unwrap_or(&config.workspace);
            let variable = NewVariable {
                desc: desc.clone(),
                tags: tags.clone(),
                ..NewVariable::text(name.as_str(), value.0, VarType::UserAdd)
            };
            put(
                config,
                store,
                workspace,
                NewVariable {
                    kind: value.1,
                    ..variable
                },
                out,
            )
        }
        WorkspaceCommand::Delete { name, yes, .. } => {
            let contents = contents(store.as_ref(), name)?;
            if !yes {
                confirm(name, &contents, store.location())?;
            }
            if !store.delete_workspace(name)? {
                return Err(unknown(store.as_ref(), name).into());
            }
            writeln!(
                out,
                "deleted workspace `{name}` from {}: {contents}",
                store.location().display()
            )?;
            Ok(())
        }
    }
}

/// A file's text (`-`: stdin) as a variable's value; with `json`, the JSON value it holds.
fn read_value(file: &Path, json: bool) -> Result<(String, ValueKind), Error> {
    let unreadable = |message: String| Error::ReadValue {
        path: file.display().to_string(),
        message,
    };
    let bytes = if file == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
            .map_err(|error| unreadable(error.to_string()))?;
        bytes
    } else {
        std::fs::read(file).map_err(|error| unreadable(error.to_string()))?
    };
    let text = String::from_utf8(bytes).map_err(|error| {
        unreadable(format!(
            "it is not UTF-8 text (byte {} is not); a variable holds text",
            error.utf8_error().valid_up_to()
        ))
    })?;
    if !json {
        return Ok((text, ValueKind::Text));
    }
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|error| {
        unreadable(format!(
            "it is not JSON ({error}); drop --json to store its text"
        ))
    })?;
    Ok(vars::encode_value(value))
}

/// `workspace put`: the variable written as any write is (validated, within the workspace's
/// capacity and size, evicting what a full workspace drops), and seen by the servers running on
/// the store at their next read.
fn put(
    config: &Settings,
    store: Arc<dyn DurableStore>,
    workspace: &str,
    variable: NewVariable,
    out: &mut dyn Write,
) -> Result<(), Error> {
    vars::validate_name(&variable.name).map_err(workspaces::Error::from)?;
    let location = store.location().display().to_string();
    let opened = Workspace::open(
        workspace,
        config.capacity,
        Arc::new(SystemClock::new()),
        store as Arc<dyn Store>,
    )?
    .with_max_bytes(Some(config.workspace_max_bytes));
    if opened
        .peek(&variable.name)
        .is_some_and(|existing| existing.var_type == VarType::Rule)
    {
        return Err(Error::Rule {
            name: variable.name,
        });
    }
    let name = variable.name.clone();
    let characters = variable.value.chars().count();
    let outcome = opened.insert(variable)?;
    let verb = if outcome.created { "wrote" } else { "replaced" };
    write!(
        out,
        "{verb} variable `{name}` (USER_ADD, {characters} characters) in workspace \
         `{workspace}` in {location}"
    )?;
    if !outcome.evicted.is_empty() {
        let evicted: Vec<&str> = outcome.evicted.iter().map(|name| &**name).collect();
        write!(out, "; the full workspace evicted {}", evicted.join(", "))?;
    }
    writeln!(out)?;
    Ok(())
}

fn unknown(store: &dyn Store, name: &str) -> store::Error {
    store::Error::UnknownWorkspace {
        name: name.to_owned(),
        path: store.location().to_owned(),
    }
}

/// What deleting a workspace would remove, in a few words: `22 variables, 3 approvals, 3995
/// snapshots of 4 chats, 1 global snapshots, 2 templates`.
fn contents(store: &dyn DurableStore, name: &str) -> Result<String, Error> {
    let summary = (store.workspaces()?.into_iter())
        .find(|summary| summary.name == name)
        .ok_or_else(|| unknown(store, name))?;
    let chats = store.chats(name)?;
    let snapshots: u64 = chats.iter().map(|(_, count)| count).sum();
    Ok(format!(
        "{} variables, {} approvals, {snapshots} snapshots of {} chats, {} global snapshots, {} \
         templates",
        summary.variables,
        summary.approvals,
        chats.len(),
        store.globals(name)?.len(),
        store.template_characters(name)?.len()
    ))
}

/// Asks on the terminal before a workspace is deleted; without a terminal, refuses (the
/// caller passes `--yes` to delete without asking).
fn confirm(name: &str, contents: &str, location: &Path) -> Result<(), Error> {
    use std::io::IsTerminal as _;
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(Error::NeedsYes {
            name: name.to_owned(),
            contents: contents.to_owned(),
        });
    }
    let mut asked = std::io::stderr().lock();
    write!(
        asked,
        "delete workspace `{name}` from {} ({contents})? [y/N] ",
        location.display()
    )?;
    asked.flush()?;
    let mut answer = String::new();
    stdin.read_line(&mut answer)?;
    if matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
        Ok(())
    } else {
        Err(Error::NotConfirmed {
            name: name.to_owned(),
        })
    }
}

fn list(store: &dyn Store, out: &mut dyn Write) -> Result<(), Error> {
    let workspaces = store.workspaces()?;
    writeln!(
        out,
        "{:<24} {:>10} {:>10} {:>10}",
        "workspace", "variables", "approvals", "changes"
    )?;
    for summary in &workspaces {
        writeln!(
            out,
            "{:<24} {:>10} {:>10} {:>10}",
            summary.name, summary.variables, summary.approvals, summary.sequence
        )?;
    }
    writeln!(
        out,
        "{} workspaces in {}",
        workspaces.len(),
        store.location().display()
    )?;
    Ok(())
}

fn import(
    store: &dyn DurableStore,
    file: &Path,
    chosen: Option<&str>,
    replace: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let unreadable = |message: String| Error::ReadExport {
        path: file.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(file).map_err(|error| unreadable(error.to_string()))?;
    let exported: WorkspaceExport =
        serde_json::from_str(&text).map_err(|error| unreadable(error.to_string()))?;
    if exported.format != export::FORMAT {
        return Err(unreadable(format!(
            "`format` is `{}`, not `{}`",
            exported.format,
            export::FORMAT
        )));
    }
    let name = chosen.unwrap_or(&exported.workspace).to_owned();
    let existing = store
        .workspaces()?
        .into_iter()
        .find(|summary| summary.name == name);
    if let Some(existing) =
        existing.filter(|summary| summary.variables > 0 || summary.approvals > 0)
    {
        if !replace {
            return Err(Error::WouldOverwrite {
                name,
                count: existing.variables,
            });
        }
        store.delete_workspace(&name)?;
    }
    let snapshots = exported.snapshots.len();
    let count = export::import(store, &name, exported)?;
    writeln!(
        out,
        "imported {count} variables and {snapshots} snapshots into workspace `{name}` in {}",
        store.location().display()
    )?;
    Ok(())
}

/// `synapse-mcp doctor`: where the store is, its schema, sizes, workspaces, integrity, and
/// state documents nesting deeper than the limit (which `--repair` flattens).
pub fn doctor(config: &Settings, repair: bool, out: &mut dyn Write) -> Result<(), Error> {
    let path = match &config.store {
        Location::Memory => return Err(Error::MemoryStore),
        #[cfg(feature = "postgres")]
        Location::Postgres(url) => return doctor_postgres(url, config.store_max_bytes, out),
        // Refused by `open`, which says why.
        #[cfg(not(feature = "postgres"))]
        Location::Postgres(_) => return open(config).map(drop),
        Location::Sqlite(path) => path,
    };
    let store = SqliteStore::open(
        path,
        SqliteOptions {
            max_bytes: config.store_max_bytes,
        },
    )?;
    let diagnosis = store.doctor()?;
    let file_size = std::fs::metadata(&diagnosis.path).map_or(0, |metadata| metadata.len());
    writeln!(out, "store:           {}", diagnosis.path.display())?;
    writeln!(
        out,
        "schema version:  {} (this build: {SCHEMA_VERSION})",
        diagnosis.schema_version
    )?;
    writeln!(
        out,
        "file size:       {file_size} bytes ({} pages of {} bytes)",
        diagnosis.page_count, diagnosis.page_size
    )?;
    writeln!(
        out,
        "value pool:      {} values, {} bytes",
        diagnosis.pooled_values, diagnosis.pooled_bytes
    )?;
    report_workspaces(store.as_ref(), out)?;
    let problems = diagnosis.integrity.join("; ");
    writeln!(out, "integrity:       {problems}")?;
    if problems != "ok" {
        return Err(Error::Damaged {
            path: diagnosis.path.display().to_string(),
            problems,
        });
    }
    let deep = store.deep_states(repair)?;
    report_deep_states(&deep, repair, out)?;
    if !repair && let Some(first) = deep.first() {
        return Err(Error::TooDeep {
            workspace: first.workspace.clone(),
            count: deep.len(),
        });
    }
    Ok(())
}

/// `doctor` on a PostgreSQL store: where it is, its schema, the bytes the size cap counts and
/// the workspaces (PostgreSQL checks its own pages; states deeper than the limit were never
/// written to it).
#[cfg(feature = "postgres")]
fn doctor_postgres(url: &str, max_bytes: Option<u64>, out: &mut dyn Write) -> Result<(), Error> {
    let store = PostgresStore::open(url, PostgresOptions { max_bytes })?;
    writeln!(out, "store:           {}", store.location().display())?;
    writeln!(
        out,
        "schema version:  {} (this build: {SCHEMA_VERSION})",
        store.schema_version()?
    )?;
    writeln!(out, "stored bytes:    {}", store.stored_bytes()?)?;
    report_workspaces(store.as_ref(), out)?;
    Ok(())
}

/// `doctor`'s line per stored workspace.
fn report_workspaces(store: &dyn Store, out: &mut dyn Write) -> Result<(), Error> {
    for summary in store.workspaces()? {
        writeln!(
            out,
            "workspace:       {} ({} variables, {} approvals)",
            summary.name, summary.variables, summary.approvals
        )?;
    }
    Ok(())
}

/// One line per over-deep state, naming the branches cut (at most a few of them).
fn report_deep_states(deep: &[DeepState], repair: bool, out: &mut dyn Write) -> Result<(), Error> {
    const SHOWN: usize = 5;
    for state in deep {
        let mut branches: Vec<String> = state
            .cut
            .iter()
            .take(SHOWN)
            .map(|path| format!("`{}`", shorten(path, 80)))
            .collect();
        if state.cut.len() > SHOWN {
            branches.push(format!("and {} more", state.cut.len() - SHOWN));
        }
        let branches = branches.join(", ");
        if repair {
            writeln!(
                out,
                "repaired the state of workspace `{}` ({} levels deep): {} branches past level {MAX_DEPTH} are now strings holding their JSON text: {branches}",
                state.workspace,
                state.depth,
                state.cut.len()
            )?;
        } else {
            writeln!(
                out,
                "state:           the state of workspace `{}` nests deeper than the limit of {MAX_DEPTH} ({} levels); {} branches to cut: {branches}",
                state.workspace,
                state.depth,
                state.cut.len()
            )?;
        }
    }
    Ok(())
}
