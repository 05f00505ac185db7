//! The ground floor: JSON utilities that know nothing of variables, tools or MCP.
//!
//! - [`path`]: dot paths into a document (`user.summary`, `items.0.name`) — reading, writing
//!   and removing, as `_outputPath`, `†state.…` references, `ReadState`/`WriteState` and the
//!   snapshot functions use them.
//! - [`nesting`]: the one depth limit for every value and dot path that enters the workspace.
//! - [`strings`]: every string of a JSON tree, walked without recursion — as the reference
//!   resolvers and plan validation read and rewrite arguments.
//! - [`compact`]: compact JSON text as `serde_json` writes it, strings scanned a word at a time
//!   (the answers the stdio transport writes).
//! - [`compact_length`]: the size of a value's compact JSON text, counted without writing it.

use serde_json::Value;

pub mod compact;
pub mod nesting;
pub mod path;
pub mod strings;

/// The length in bytes of a value's compact JSON text, counted without building it.
pub fn compact_length(value: &Value) -> usize {
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).map_or(0, |()| counter.0)
}

/// Counts the bytes of JSON text written to it, keeping none.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
