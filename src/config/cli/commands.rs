//! The maintenance subcommands' own options: `token`, `workspace`, `skills` and `tools`.

use std::path::PathBuf;

use clap::Subcommand;

use super::ServeOptions;

/// `token`: the tokens file's entries.
#[derive(Debug, Clone, Subcommand)]
pub enum TokenCommand {
    /// Make a new token for `--workspace W` (its default workspace, required), and any
    /// `--allow`ed others: it is printed on stdout, once; the file keeps only its SHA-256 digest.
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
        #[command(flatten)]
        options: ServeOptions,
    },
    /// List the tokens: id, principal, workspaces, what they may do (read-only, read-write, or
    /// read-write+skills; never the tokens themselves).
    List {
        /// The tokens file.
        #[arg(long, value_name = "FILE")]
        tokens: PathBuf,
        #[command(flatten)]
        options: ServeOptions,
    },
    /// Revoke a token by its id (`token list` shows it), or every token of a principal.
    Revoke {
        /// The tokens file.
        #[arg(long, value_name = "FILE")]
        tokens: PathBuf,
        /// The token's id.
        #[arg(value_name = "ID", required_unless_present = "principal")]
        id: Option<String>,
        /// Revoke every token of this principal instead.
        #[arg(long, value_name = "NAME", conflicts_with = "id")]
        principal: Option<String>,
        #[command(flatten)]
        options: ServeOptions,
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
        #[command(flatten)]
        options: ServeOptions,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum WorkspaceCommand {
    /// List the workspaces in the store.
    List {
        #[command(flatten)]
        options: ServeOptions,
    },
    /// Write a workspace as JSON (schemas/workspace-export.json) to stdout or a file.
    Export {
        /// The workspace to export.
        name: String,
        /// Write to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        options: ServeOptions,
    },
    /// Restore a workspace from an export, under `--workspace` or the name it was exported as.
    Import {
        /// The export file.
        file: PathBuf,
        /// Replace the workspace if it already holds anything.
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        options: ServeOptions,
    },
    /// Write a file into a variable of a workspace (typed `USER_ADD`: written by you, not by
    /// the model), so a model reads it in pieces or passes it by reference instead of having
    /// it pasted into the conversation. Replaces a variable of that name (never a rule).
    Put {
        /// The variable's name.
        name: String,
        /// The file holding its value (UTF-8 text); `-` reads stdin.
        file: PathBuf,
        /// The variable's description.
        #[arg(long, value_name = "TEXT")]
        desc: Option<String>,
        /// A tag (repeatable).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// The file is JSON: store its value (an object, an array...) rather than its text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        options: ServeOptions,
    },
    /// Delete a workspace and everything in it. On a terminal it asks first, showing what
    /// would go; elsewhere it needs --yes.
    Delete {
        /// The workspace to delete.
        name: String,
        /// Delete without asking.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        options: ServeOptions,
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
        #[command(flatten)]
        options: ServeOptions,
    },
    /// Fetch the git skill sources (`--skills git+…`, or the config's `skills`) again and bring
    /// each copy to the commit its ref names now. Prints, per source, the old and the new
    /// commit, or that it is unchanged, or why it failed (the last good copy is kept). Exits
    /// non-zero when any failed.
    Update {
        #[command(flatten)]
        options: ServeOptions,
    },
}
