//! synapse-mcp: an MCP server that gives any MCP client an agent workspace.
#![deny(clippy::print_stdout)]

pub mod refs;
pub mod vars;
