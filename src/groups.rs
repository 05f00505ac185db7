//! The tool groups synapse-mcp offers. Every built-in tool is declared the same way: its
//! `///`-documented argument type implements [`crate::tools::TypedTool`] — a
//! [`crate::tools::Declaration`] (which also says, as data, how the executor treats its calls),
//! its answer type, where it runs, and a `run` of a few lines that calls the domain, turning
//! domain errors into tool errors with `?` (`tools/errors.rs`). The blanket
//! [`crate::tools::Typed`] decodes, runs and builds the result; the executor in `tools` does
//! everything around it.

pub mod plans;
pub mod script_tools;
pub mod scripts;
pub mod skills;
pub mod snapshots;
pub mod tool_groups;
pub mod vars;

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The names of the built-in groups; a script folder may not take one.
pub const BUILT_IN: [&str; 7] = [
    crate::rules::AGENT_GROUP,
    vars::GROUP,
    plans::GROUP,
    snapshots::GROUP,
    skills::GROUP,
    scripts::GROUP,
    tool_groups::GROUP,
];

/// How many calls may wait for an answer at once before the oldest digests are forgotten.
const ASKED_LIMIT: usize = 64;

/// What each call of a script-running tool was asked about: the digest of the files its
/// approval is bound to, by the call's arguments, from the consent hook until the call runs, so
/// that a file changed while the user was being asked is not run on the strength of that
/// approval (`SkillRunScript`, script tools).
#[derive(Default)]
struct Asked(Mutex<HashMap<String, String>>);

impl Asked {
    /// Remembers the digest a call's consent is asked with, by a key of its arguments.
    fn remember(&self, key: String, digest: String) {
        let mut asked = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if asked.len() >= ASKED_LIMIT {
            asked.clear();
        }
        asked.insert(key, digest);
    }

    /// The digest the call was asked with, if it was asked.
    fn take(&self, key: &str) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)
    }
}
