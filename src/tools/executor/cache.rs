//! Caching a call's result and arguments as `{tool}_{nodeId}_result` / `_args` variables, in
//! the room the caller may take.

use serde_json::Value;

use super::Executor;
use crate::tools::{Caching, Tool};
use crate::vars::{NewVariable, ValueKind, VarType};
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
