//! Lines as bytes: one JSON-RPC message on one line, answers that carry a request id exactly as
//! the client wrote it, and finding or replacing a value's text inside a raw line (the id of a
//! request that does not parse, a subscription id to restore, an id rmcp cannot hold).

use std::io;

use rmcp::model::ErrorData;
use serde::Serialize;
use serde_json::value::RawValue;

/// The logger every part of the transport logs as, the public module's name rather than its
/// private parts': clients see it as the `logger` of `notifications/message`, and log filters
/// name it.
pub(super) const LOG_TARGET: &str = "synapse_mcp::server::transport";

/// The longest line accepted; longer requests are answered with an error and discarded.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// A JSON-RPC answer with the id as the client wrote it.
#[derive(Serialize)]
pub(super) struct Answer<'a, T: Serialize> {
    pub(super) jsonrpc: &'static str,
    pub(super) id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<&'a ErrorData>,
}

/// `message` as JSON, newline-terminated.
pub(super) fn line_of(message: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut bytes = crate::json::compact::to_vec(message).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// `line` with the text of `value` (a part of it) replaced.
pub(super) fn splice(line: &[u8], value: &RawValue, replacement: &[u8]) -> Vec<u8> {
    let text = value.get().as_bytes();
    let start = text.as_ptr().addr().wrapping_sub(line.as_ptr().addr());
    let end = start.wrapping_add(text.len());
    if line.get(start..end) != Some(text) {
        return line.to_vec();
    }
    let mut spliced = Vec::with_capacity(line.len() + replacement.len());
    spliced.extend_from_slice(&line[..start]);
    spliced.extend_from_slice(replacement);
    spliced.extend_from_slice(&line[end..]);
    spliced
}

/// Where `needle` first stands in `haystack`.
pub(super) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
