//! Caching a call's result and arguments as `{tool}_{nodeId}_result` / `_args` variables, in
//! the room the caller may take.

use serde::Serialize;
use serde_json::Value;

use super::Executor;
use crate::tools::{Caching, Tool};
use crate::vars::{ListFilter, NewVariable, ValueKind, VarType, Variable};
use crate::workspace::Room;

/// Hexadecimal digits of the node id in a cached result's name: 64 bits.
const NODE_DIGITS: usize = 16;

impl Executor {
    /// Stores the result as text (JSON text when `json`: a framed JSON value) and the arguments as `{tool}_{nodeId}_result` / `_args`, and
    /// returns the result's variable name.
    /// A result recomputable from files is written lazily (see [`crate::workspace::Workspace::insert_all_lazily`]).
    pub(super) fn cache(
        &self,
        tool: &dyn Tool,
        (formatted, json): (&str, bool),
        arguments: &Value,
    ) -> Result<String, crate::workspace::Error> {
        let recomputable = tool.definition().caching == Caching::Lazy;
        let tool = tool.definition().name.as_str();
        // 64 bits of a random id: a name already taken (as likely as 1 in 10^9 after 200,000
        // calls) is drawn again rather than overwritten.
        let (node, result_name, args_name) = loop {
            let node = uuid::Uuid::new_v4().simple().to_string()[..NODE_DIGITS].to_owned();
            let result_name = format!("{tool}_{node}_result");
            let args_name = format!("{tool}_{node}_args");
            if !self.workspace.holds(&result_name) && !self.workspace.holds(&args_name) {
                break (node, result_name, args_name);
            }
        };
        let mut result = NewVariable::text(&result_name, formatted, VarType::ToolCallResult);
        if json {
            result.kind = ValueKind::Json;
        }
        result.desc = Some(format!("Result of the {tool} call {node}"));
        result.tags = vec![tool.to_owned()];
        let mut args = NewVariable::text(&args_name, arguments.to_string(), VarType::ToolCallArgs);
        args.kind = ValueKind::Json;
        args.desc = Some(format!("Arguments of the {tool} call {node}"));
        args.tags = vec![tool.to_owned()];
        let room = if self.caller.read_only {
            Room::Free
        } else {
            Room::Evicting
        };
        if recomputable {
            self.workspace.insert_all_lazily(vec![args, result], room)?;
        } else {
            self.workspace.insert_all_within(vec![args, result], room)?;
        }
        Ok(result_name)
    }
}

/// Characters of a call's arguments and result the tool-chain log shows.
const LOGGED_CHARS: usize = 200;

/// One call of the tool-chain log: a cached call, its arguments and result cut for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedCall {
    pub tool: String,
    /// The call's node id, as in its variables' names.
    pub call: String,
    /// When its result was stored: ISO 8601, UTC, to the second.
    pub at: String,
    pub arguments: String,
    pub result: String,
    /// The variable holding the whole result.
    pub result_variable: String,
}

impl Executor {
    /// The tool-chain log: the latest `limit` calls whose results are cached, newest first,
    /// read from their `{tool}_{node}_result` / `_args` variables (nothing is recorded while a
    /// call runs, so the log costs a call nothing).
    pub fn recent_calls(&self, limit: usize) -> Result<Vec<LoggedCall>, crate::workspace::Error> {
        let of = |var_type| ListFilter {
            var_type: Some(var_type),
            ..ListFilter::default()
        };
        let mut results = self.workspace.list(&of(VarType::ToolCallResult))?;
        results.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| b.name.cmp(&a.name)));
        results.truncate(limit);
        let arguments = self.workspace.list(&of(VarType::ToolCallArgs))?;
        Ok(results
            .iter()
            .filter_map(|result| logged(result, &arguments))
            .collect())
    }
}

/// A cached result and its arguments as a log entry; `None` for a name not of the cache's form.
fn logged(result: &Variable, arguments: &[Variable]) -> Option<LoggedCall> {
    let stem = result.name.strip_suffix("_result")?;
    let (tool, node) = stem.rsplit_once('_')?;
    let args_name = format!("{stem}_args");
    let given = (arguments.iter())
        .find(|variable| *variable.name == *args_name)
        .map_or_else(String::new, |variable| {
            crate::text::shorten(&variable.value, LOGGED_CHARS)
        });
    Some(LoggedCall {
        tool: tool.to_owned(),
        call: node.to_owned(),
        at: result.created.to_readable(),
        arguments: given,
        result: crate::text::shorten(&result.value, LOGGED_CHARS),
        result_variable: result.name.to_string(),
    })
}
