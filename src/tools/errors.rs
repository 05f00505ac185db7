//! The one decision of what a domain error is to a tool call (`docs/executor.md#errors`):
//! a caller's mistake — a bad name, an unknown variable, skill, file or snapshot, a malformed
//! or dangling reference, a conflict, a read-only rule, a full workspace — is
//! [`ToolError::Invalid`], which the model reads as a tool result with `isError: true`; a store
//! or I/O failure is [`ToolError::Internal`], which `server/errors.rs` answers as JSON-RPC
//! `-32603` with the details in the log. Tools convert with `?`; the messages are the domain
//! errors' own.
//!
//! Every match here names each variant, so a new variant must be decided here before the
//! crate builds.

use super::ToolError;
use crate::json::path;
use crate::refs::{self, dagger};
use crate::skills::{self, scripts};
use crate::{runner, script_tools, snapshots, store, vars, workspace};

impl From<store::Error> for ToolError {
    /// Whatever the store says, the caller cannot fix it by calling again. The client is told
    /// what failed; where the store is (a path, a PostgreSQL URL) goes to the log only.
    fn from(error: store::Error) -> Self {
        tracing::error!(%error, "the store failed");
        Self::Internal(error.for_clients())
    }
}

impl From<workspace::Error> for ToolError {
    fn from(error: workspace::Error) -> Self {
        match error {
            workspace::Error::Store(error) => error.into(),
            workspace::Error::Variable(_)
            | workspace::Error::Reference(_)
            | workspace::Error::Full(_)
            | workspace::Error::NoRoom(_) => Self::Invalid(error.to_string()),
        }
    }
}

impl From<vars::Error> for ToolError {
    fn from(error: vars::Error) -> Self {
        match error {
            vars::Error::NotFound { .. }
            | vars::Error::InvalidName { .. }
            | vars::Error::UnknownType { .. } => Self::Invalid(error.to_string()),
        }
    }
}

impl From<refs::Error> for ToolError {
    fn from(error: refs::Error) -> Self {
        match error {
            refs::Error::NotFound { .. }
            | refs::Error::Circular { .. }
            | refs::Error::SliceNonString { .. }
            | refs::Error::Malformed { .. }
            | refs::Error::TooLarge { .. } => Self::Invalid(error.to_string()),
        }
    }
}

impl From<dagger::Error> for ToolError {
    fn from(error: dagger::Error) -> Self {
        match error {
            dagger::Error::UnknownKind { .. }
            | dagger::Error::Path { .. }
            | dagger::Error::Missing { .. }
            | dagger::Error::Unavailable { .. }
            | dagger::Error::NotSpliceable { .. } => Self::Invalid(error.to_string()),
        }
    }
}

impl From<path::Error> for ToolError {
    /// A dot path the caller wrote.
    fn from(error: path::Error) -> Self {
        Self::Invalid(error.to_string())
    }
}

impl From<snapshots::Error> for ToolError {
    fn from(error: snapshots::Error) -> Self {
        match error {
            snapshots::Error::Invalid { message, .. } => Self::Invalid(message),
            snapshots::Error::Store(error) => error.into(),
        }
    }
}

impl From<skills::Error> for ToolError {
    fn from(error: skills::Error) -> Self {
        match error {
            // A file that cannot be read, or a SKILL.md changed under the server into one
            // without valid frontmatter: nothing the caller wrote is wrong.
            skills::Error::Io { .. } | skills::Error::Changed { .. } => {
                Self::Internal(error.to_string())
            }
            skills::Error::UnknownSkill { .. }
            | skills::Error::BadPath { .. }
            | skills::Error::UnknownFile { .. }
            | skills::Error::Unreadable { .. }
            | skills::Error::UnknownFolder { .. }
            | skills::Error::UnknownSection { .. }
            | skills::Error::NotMarkdown { .. }
            | skills::Error::Invalid { .. }
            | skills::Error::UnknownRoot { .. } => Self::Invalid(error.to_string()),
        }
    }
}

impl From<scripts::Error> for ToolError {
    fn from(error: scripts::Error) -> Self {
        match error {
            scripts::Error::File(error) => error.into(),
            scripts::Error::Run(error) => error.into(),
            scripts::Error::Bundled { .. }
            | scripts::Error::Unbound { .. }
            | scripts::Error::NoSkill { .. }
            | scripts::Error::OtherSkill { .. }
            | scripts::Error::UnknownScript { .. } => Self::Invalid(error.to_string()),
        }
    }
}

impl From<script_tools::Error> for ToolError {
    fn from(error: script_tools::Error) -> Self {
        match error {
            script_tools::Error::Run(error) => error.into(),
            script_tools::Error::Io { .. } => Self::Internal(error.to_string()),
            // A script that fails says why in its own words, quoted for the model; a file gone
            // or changed under the call is said so, with what to do.
            script_tools::Error::Arguments { .. }
            | script_tools::Error::Exited { .. }
            | script_tools::Error::Killed { .. }
            | script_tools::Error::TimedOut { .. }
            | script_tools::Error::NotJson { .. }
            | script_tools::Error::Mismatch { .. }
            | script_tools::Error::Changed { .. }
            | script_tools::Error::Reloading { .. }
            | script_tools::Error::Gone { .. } => Self::Invalid(error.to_string()),
        }
    }
}

impl From<runner::Error> for ToolError {
    fn from(error: runner::Error) -> Self {
        match error {
            runner::Error::Wait { .. } => Self::Internal(error.to_string()),
            // A missing interpreter is named, with the fix, for the model to pass on.
            runner::Error::NotRunnable { .. } | runner::Error::Spawn { .. } => {
                Self::Invalid(error.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use pretty_assertions::assert_eq;

    use super::*;

    fn store_failure() -> store::Error {
        store::Error::Database {
            path: PathBuf::from("/data/synapse.db"),
            message: "database or disk is full".to_owned(),
        }
    }

    #[test]
    fn a_store_failure_is_internal_whichever_domain_reports_it() {
        let expected = ToolError::Internal("the store failed: database or disk is full".to_owned());
        assert_eq!(ToolError::from(store_failure()), expected);
        assert_eq!(
            ToolError::from(workspace::Error::Store(store_failure())),
            expected
        );
        assert_eq!(
            ToolError::from(snapshots::Error::Store(store_failure())),
            expected
        );
    }

    #[test]
    fn a_callers_mistake_is_invalid_with_the_domain_message() {
        let unknown = vars::Error::NotFound {
            name: "notes".to_owned(),
        };
        assert_eq!(
            ToolError::from(workspace::Error::Variable(unknown)),
            ToolError::Invalid("variable `notes` not found".to_owned())
        );
        assert_eq!(
            ToolError::from(workspace::Error::Full("over its cap".to_owned())),
            ToolError::Invalid("over its cap".to_owned())
        );
        assert_eq!(
            ToolError::from(snapshots::Error::Invalid {
                value: "x".to_owned(),
                message: "unknown snapshot `x`".to_owned()
            }),
            ToolError::Invalid("unknown snapshot `x`".to_owned())
        );
    }

    #[test]
    fn a_skill_file_that_cannot_be_read_is_internal_and_an_unknown_skill_invalid() {
        let io = skills::Error::Io {
            path: PathBuf::from("/skills/a/SKILL.md"),
            source: std::io::Error::other("gone"),
        };
        assert!(matches!(
            ToolError::from(scripts::Error::File(io)),
            ToolError::Internal(_)
        ));
        let unknown = skills::Error::UnknownSkill {
            name: "a".to_owned(),
            suggestion: String::new(),
        };
        assert_eq!(
            ToolError::from(unknown),
            ToolError::Invalid("unknown skill `a`".to_owned())
        );
    }
}
