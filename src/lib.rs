//! synapse-mcp: an MCP server that gives any MCP client an agent workspace.
//!
//! # Layers
//! Modules import only from the layers below their own, and no module imports one that imports
//! it back (`tests/it/layers.rs` checks both). From the top:
//!
//! 1. [`server`]: the rmcp adapter — our server side of MCP. `server/errors.rs` is the one
//!    place where results and errors take their wire form; and [`maintenance`]:
//!    `workspace list|export|import|delete` and `doctor`.
//! 2. [`app`]: the wiring — `App::open` builds the store, workspace, tool groups, executor,
//!    skills shelf and watcher from the [`app::Settings`] (which `app/settings.rs` makes from
//!    the [`config`]), for `main` and the tests alike.
//! 3. [`upstreams`]: other MCP servers as tool groups — the client side of MCP: starting,
//!    supervising and calling them, checking and reloading their `[[upstream]]` tables.
//! 4. [`tokens`]: the bearer tokens file of `serve --http`, and the JWT access tokens of its
//!    OAuth mode (`tokens::jwt`).
//! 5. [`groups`]: the tool groups on offer (`vars`, `plans`, `skills`, `snapshots`, the opt-in
//!    `scripts`, `tools`, and one per script tool folder): one struct per tool, a thin adapter
//!    over a domain module.
//! 6. [`plans`]: plan validation and execution, over the executor.
//! 7. [`tools`]: the `Tool` trait and definitions, the registry, approval policies, and the
//!    executor pipeline every call passes (references, gates, truncation, caching,
//!    `_outputPath`), with the one conversion of domain errors into tool errors.
//! 8. [`workspace`]: the variables, state document and approvals a session works in; every
//!    mutation passes here, is committed to the [`store`] before it is acknowledged, and is
//!    announced to subscribers; and [`snapshots`] (chat state snapshots and the function
//!    library, over the store).
//! 9. [`refs`] (`$VAR_REF` and `†kind.path` resolution), [`rules`] (skill rules and the
//!    tool-rules text) and [`store`] (durable workspaces in SQLite, shared between processes by
//!    a change sequence).
//! 10. [`vars`] (the capacity-bounded variables), [`skills`] (the Agent Skills library:
//!     discovery, frontmatter, validation, `index.json`, search, files) and [`script_tools`]
//!     (folders of scripts served as tools: manifests, `index.json`, one call's run).
//! 11. Shared by the folder libraries: [`runner`] (running a script file: scrubbed environment,
//!     timeout, process-group kill, capped output) and [`folders`] (digests, `index.json`,
//!     watching folders for changes).
//! 12. [`json`] (dot paths, the one depth limit, the string walk).
//! 13. The ground floor: [`text`] (character windows), [`config`] (the command line and the
//!     file's schema, plain data that imports nothing of the crate), [`digest`] (SHA-256 in
//!     hex) and [`hosts`] (the entries `config HOST` writes into the hosts' own files).
//!
//! Only [`server`] (our server side) and [`upstreams`] (our client side of other servers) know
//! MCP; everything below them knows nothing of it.
//!
//! `docs/architecture.md` has the full map and where each behaviour lives; `docs/` explains
//! each concept.
//!
//! # The path of a `tools/call`
//! ```text
//! stdio ─ rmcp ─ Server::call_tool(raw arguments)              server.rs, server/tools.rs
//!   → Executor::execute                                        tools/executor.rs
//!       _outputLimit, _outputPath taken out of the arguments   0 / -1 = no truncation
//!       Workspace::resolve_references                          refs.rs over vars.rs
//!       † references (unless the tool defers them)             refs/dagger.rs, tools/scope.rs
//!       execution gate                                         auto | ask-once | ask-always:
//!                                                              elicitation, or MRTR input_required
//!       Tool::execute                                          groups/*.rs → domain modules,
//!                                                              or upstreams/tool.rs → another server
//!       format_for_llm → truncate (head + tail, marker)        tools/truncate.rs
//!       cache {tool}_{nodeId}_result / _args variables
//!       truncation hint naming the variable and $VAR_REF{{…}}
//!       result gate, then _outputPath writes                  tools/output_path.rs
//!   → server/errors.rs: CallToolResult | InputRequiredResult | JSON-RPC error
//! ```
#![deny(clippy::print_stdout)]

pub mod app;
pub mod config;
pub mod digest;
pub mod folders;
pub mod groups;
pub mod hosts;
pub mod json;
pub mod maintenance;
pub mod plans;
pub mod refs;
pub mod rules;
pub mod runner;
pub mod script_tools;
pub mod server;
pub mod skills;
pub mod snapshots;
pub mod store;
pub mod text;
pub mod tokens;
pub mod tools;
pub mod upstreams;
pub mod vars;
pub mod workspace;

/// Why `run` failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Settings(#[from] app::settings::Error),
    #[error(transparent)]
    App(#[from] app::Error),
    #[error(transparent)]
    Server(#[from] server::Error),
    #[error(transparent)]
    Maintenance(#[from] maintenance::Error),
    #[error(transparent)]
    Tokens(#[from] tokens::Error),
    #[error(transparent)]
    Hosts(#[from] hosts::HostError),
}

/// Prints why the command failed on stderr, once: the error's message, then each cause that
/// message does not quote already (most of ours name their cause in their own words, so the
/// whole chain would say it twice).
#[expect(
    clippy::print_stderr,
    reason = "the one place a failed command says why, after logging may have failed to start"
)]
pub fn report(error: &(dyn std::error::Error + 'static)) {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let said = inner.to_string();
        if !message.contains(&said) {
            message = format!("{message}: {said}");
        }
        cause = inner.source();
    }
    eprintln!("Error: {message}");
}

/// Serves MCP over stdio until the client disconnects (over HTTP until SIGTERM with `serve
/// --http`), or runs the subcommand given.
pub async fn run(
    cli: &config::Cli,
    config: &app::Settings,
) -> Result<std::process::ExitCode, Error> {
    runner::use_reaper();
    for notice in &cli.notices {
        tracing::warn!("{notice}");
    }
    let mut stdout = std::io::stdout().lock();
    match &cli.command {
        None | Some(config::Command::Serve(_)) => {
            drop(stdout);
            if let Some(http) = &config.http {
                server::http::check_authentication(http)?;
            }
            let app = std::sync::Arc::new(app::App::open(config)?);
            let unlisted = app::names::check(&app, config)?;
            if !unlisted.is_empty() {
                let app = std::sync::Arc::clone(&app);
                tokio::spawn(async move { app::names::warn_unlisted(&app, unlisted).await });
            }
            if let Some(address) = config.metrics {
                server::metrics::start(address, std::sync::Arc::clone(&app)).await?;
            }
            if let Some(http) = &config.http {
                server::http::serve(app, http).await?;
            } else {
                let server = server::Server::shared(app);
                tracing::info!("{}", server.readiness_line());
                server.serve_stdio().await?;
            }
        }
        Some(config::Command::Token(command)) => {
            token(command, cli.options().workspace.as_deref(), &mut stdout)?;
        }
        Some(config::Command::Skills(config::SkillsCommand::Check { dirs, strict, .. })) => {
            drop(stdout);
            return Ok(check_skills(config, dirs, *strict));
        }
        Some(config::Command::Skills(config::SkillsCommand::Update { .. })) => {
            drop(stdout);
            return Ok(update_skills(config));
        }
        Some(config::Command::Tools(config::ToolsCommand::Check { dirs, .. })) => {
            drop(stdout);
            return Ok(check_tools(config, dirs));
        }
        Some(config::Command::Workspace(command)) => {
            maintenance::workspace(
                config,
                command,
                cli.options().workspace.as_deref(),
                &mut stdout,
            )?;
        }
        Some(config::Command::Doctor { repair, .. }) => {
            maintenance::doctor(config, *repair, &mut stdout)?;
        }
        Some(config::Command::Config {
            host,
            write,
            name,
            arguments,
            ..
        }) => {
            host_entry(host, *write, name, arguments, &mut stdout)?;
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// `config HOST [--write]`: the host's entry for this binary on stdout, and, with `--write`,
/// merged into the host's file.
fn host_entry(
    host: &str,
    write: bool,
    name: &str,
    arguments: &[String],
    out: &mut impl std::io::Write,
) -> Result<(), Error> {
    let host = hosts::Host::parse(host)?;
    let binary = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|source| hosts::HostError::Io {
            action: "find the path of",
            file: "this binary".into(),
            source,
        })?;
    let current = std::env::current_dir().map_err(|source| hosts::HostError::Io {
        action: "read",
        file: "the current folder".into(),
        source,
    })?;
    let places = hosts::Places {
        home: std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .map_or_else(|| current.clone(), std::path::PathBuf::from),
        config_home: std::env::var_os(if cfg!(windows) {
            "APPDATA"
        } else {
            "XDG_CONFIG_HOME"
        })
        .map(std::path::PathBuf::from),
        current,
    };
    let said = if write {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        let entry = host.server_entry(&binary, arguments);
        let written = hosts::write(host, &host.file(&places), name, entry, seconds)?;
        let verb = if written.replaced {
            "replaced"
        } else {
            "added"
        };
        match written.backup {
            Some(backup) => format!(
                "{verb} `{name}` in {}; the file as it was is {}\n",
                written.file.display(),
                backup.display()
            ),
            None => format!("{verb} `{name}` in {}\n", written.file.display()),
        }
    } else {
        host.instructions(name, &binary, arguments, &places)
    };
    out.write_all(said.as_bytes())
        .map_err(|source| hosts::HostError::Io {
            action: "write to",
            file: "stdout".into(),
            source,
        })?;
    Ok(())
}

/// `token add|list|revoke`: the new token, or the list, on stdout; what was done on stderr.
/// The groups `token add --groups` names, checked: a built-in group, or a name no built-in
/// group is close to (a script folder's or another MCP server's group).
fn token_groups(listed: &[String]) -> Result<Vec<String>, Error> {
    let built_in: Vec<&str> = groups::switchable().map(|group| group.name).collect();
    for name in listed {
        let known = built_in.contains(&name.as_str());
        let meant = (!known)
            .then(|| text::nearest(name, built_in.iter().copied()))
            .flatten();
        if name.trim().is_empty() || matches!(name.as_str(), "default" | "all") || meant.is_some() {
            let meant = meant
                .map(|meant| format!(" (did you mean `{meant}`?)"))
                .unwrap_or_default();
            return Err(Error::Tokens(tokens::Error::Invalid(format!(
                "--groups: `{name}` is no group a token can turn on{meant}: name groups, such as \
                 `snapshots`; the built-in ones are {}",
                built_in.join(", ")
            ))));
        }
    }
    Ok(listed.to_vec())
}

fn token(
    command: &config::TokenCommand,
    workspace: Option<&str>,
    out: &mut impl std::io::Write,
) -> Result<(), Error> {
    let wrote = |error: std::io::Error| {
        Error::Tokens(tokens::Error::Write {
            path: "stdout".into(),
            source: error,
        })
    };
    match command {
        config::TokenCommand::Add {
            tokens: path,
            principal,
            also,
            read_only,
            write_skills,
            options,
        } => {
            let Some(workspace) = workspace else {
                return Err(Error::Tokens(tokens::Error::Invalid(
                    "a token needs a workspace: give --workspace NAME (and --allow OTHER for \
                     more)"
                        .to_owned(),
                )));
            };
            let workspaces: Vec<String> = std::iter::once(workspace.to_owned())
                .chain(also.iter().cloned())
                .collect();
            let rights = tokens::Rights {
                read_only: *read_only,
                write_skills: *write_skills,
                groups: token_groups(options.groups.as_deref().unwrap_or_default())?,
            };
            let (token, entry) = tokens::add(path, principal, &workspaces, rights)?;
            writeln!(out, "{token}").map_err(wrote)?;
            tracing::info!(
                "added token {} for `{}` in {}",
                entry.id,
                entry.principal,
                path.display()
            );
        }
        config::TokenCommand::List { tokens: path, .. } => {
            for entry in tokens::list(path)? {
                let access = match (entry.read_only, entry.write_skills) {
                    (true, _) => "read-only",
                    (false, false) => "read-write",
                    (false, true) => "read-write+skills",
                };
                let groups = if entry.groups.is_empty() {
                    String::new()
                } else {
                    format!("\tgroups {}", entry.groups.join(","))
                };
                writeln!(
                    out,
                    "{}\t{}\t{}\t{access}{groups}",
                    entry.id,
                    entry.principal,
                    entry.workspaces.join(",")
                )
                .map_err(wrote)?;
            }
        }
        config::TokenCommand::Revoke {
            tokens: path,
            id,
            principal,
            ..
        } => {
            for entry in tokens::revoke(path, id.as_deref(), principal.as_deref())? {
                tracing::info!("revoked token {} of `{}`", entry.id, entry.principal);
            }
        }
    }
    Ok(())
}

/// `skills check`: the report goes to stdout, since this command does not serve MCP.
#[expect(
    clippy::print_stdout,
    reason = "`skills check` prints its report; it never serves MCP, so stdout is free"
)]
fn check_skills(
    config: &app::Settings,
    dirs: &[std::path::PathBuf],
    strict: bool,
) -> std::process::ExitCode {
    let (roots, sources) = if dirs.is_empty() {
        (config.skill_roots(), config.skill_sources())
    } else {
        let dirs: Vec<skills::discover::Root> = dirs
            .iter()
            .map(|path| skills::discover::Root {
                kind: skills::discover::RootKind::Configured,
                path: path.clone(),
            })
            .collect();
        let roots = skills::discover::roots(&dirs, false, None, std::path::Path::new("."));
        (roots, Vec::new())
    };
    let (report, failed) = skills::check::report(&roots, &sources, strict);
    print!("{report}");
    exit_code(failed)
}

/// `skills update`: one line per git source on stdout, since this command does not serve MCP.
#[expect(
    clippy::print_stdout,
    reason = "`skills update` prints its report; it never serves MCP, so stdout is free"
)]
fn update_skills(config: &app::Settings) -> std::process::ExitCode {
    let sources = config.skill_sources();
    if sources.is_empty() {
        println!("no git skill sources are configured (`--skills git+…` or the config's `skills`)");
    }
    let mut failed = false;
    for checkout in &sources {
        let outcome = checkout.update();
        failed |= matches!(outcome, skills::sources::Outcome::Failed { .. });
        println!("{}: {outcome}", checkout.source.spec);
    }
    exit_code(failed)
}

/// `tools check`: the report goes to stdout, since this command does not serve MCP.
#[expect(
    clippy::print_stdout,
    reason = "`tools check` prints its report; it never serves MCP, so stdout is free"
)]
fn check_tools(config: &app::Settings, dirs: &[std::path::PathBuf]) -> std::process::ExitCode {
    let roots = if dirs.is_empty() {
        config.tool_roots()
    } else {
        dirs.to_vec()
    };
    let (report, failed) = script_tools::check::report(&roots, &groups::BUILT_IN);
    print!("{report}");
    exit_code(failed)
}

/// The exit code of a command that reports problems: non-zero when one of them failed it.
fn exit_code(failed: bool) -> std::process::ExitCode {
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
