//! The tool groups synapse-mcp offers. Every tool is declared the same way: one struct per tool,
//! named as the tool, holding its [`ToolDefinition`] (which also says, as data, how the
//! executor treats its calls) and the shared service it needs; a `///`-documented argument
//! type; and an `execute` of a few lines that decodes the arguments and calls the domain,
//! turning domain errors into tool errors with `?` (`tools/errors.rs`). The executor in
//! `tools` does everything around it.

pub mod plans;
pub mod script_tools;
pub mod scripts;
pub mod skills;
pub mod snapshots;
pub mod tool_groups;
pub mod vars;

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::tools::{ToolCall, ToolDefinition, ToolError, ToolOutput, structured};

/// Decodes a call's arguments and runs `work` on them on tokio's blocking pool, with the call's
/// cancellation (the client cancelled, or left), for synchronous work that may take long (a
/// rescan of every skill root, a whole chat): the server's runtime is single-threaded
/// (`main.rs` says why), and a long call on it would hold up every other request of the
/// session. The arguments are decoded there too, since a whole chat takes a while to decode.
fn off_thread<'a, Arguments: DeserializeOwned + 'static>(
    definition: &ToolDefinition,
    call: ToolCall<'a>,
    work: impl FnOnce(Arguments, &CancellationToken) -> Result<ToolOutput, ToolError> + Send + 'static,
) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
    let name = definition.name.clone();
    let (arguments, cancellation) = (call.arguments, call.cancellation);
    Box::pin(async move {
        tokio::task::spawn_blocking(move || {
            let arguments = crate::tools::parse_arguments(&name, arguments)?;
            work(arguments, &cancellation)
        })
        .await
        .map_err(|error| ToolError::Internal(format!("the tool's task failed: {error}")))?
    })
}

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
