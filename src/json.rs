//! The ground floor: JSON utilities that know nothing of variables, tools or MCP.
//!
//! - [`path`]: dot paths into a document (`user.summary`, `items.0.name`) — reading, writing
//!   and removing, as `_outputPath`, `†state.…` references, `ReadState`/`WriteState` and the
//!   snapshot functions use them.
//! - [`nesting`]: the one depth limit for every value and dot path that enters the workspace.
//! - [`strings`]: every string of a JSON tree, walked without recursion — as the reference
//!   resolvers and plan validation read and rewrite arguments.

pub mod nesting;
pub mod path;
pub mod strings;
