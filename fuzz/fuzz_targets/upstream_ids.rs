//! The id of an upstream server's message read in pieces (`upstreams::wire::IdScanner`, which
//! keeps a few bytes of a message however long it is, so that an oversized answer can still fail
//! its own call): the same id whatever the pieces, never an id the message does not have at its
//! top level, and the id of every message a JSON parser reads with one (when neither spaces nor
//! escapes are in it). Never a panic on any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmcp::model::RequestId;
use serde::Deserialize;
use synapse_mcp::upstreams::wire::IdScanner;

/// A message's top level as a JSON parser reads it: an `id` given twice is refused.
#[derive(Deserialize)]
struct TopLevel {
    id: Option<serde_json::Value>,
}

fn scanned(data: &[u8], piece: usize) -> (Option<RequestId>, usize) {
    let mut scanner = IdScanner::default();
    for chunk in data.chunks(piece) {
        scanner.feed(chunk);
    }
    (scanner.id(), scanner.bytes)
}

fuzz_target!(|input: (u8, &[u8])| {
    let (piece, data) = input;
    let whole = scanned(data, data.len().max(1));
    assert_eq!(whole.1, data.len());
    assert_eq!(scanned(data, usize::from(piece).max(1)), whole, "pieces of {piece}");
    // Only a whole object is a message; a JSON parser would read an array into the struct too.
    if data.first() != Some(&b'{') {
        return;
    }
    let Ok(top) = serde_json::from_slice::<TopLevel>(data) else {
        return;
    };
    let id = top
        .id
        .and_then(|id| serde_json::from_value::<RequestId>(id).ok());
    if let Some(found) = &whole.0 {
        assert_eq!(id.as_ref(), Some(found), "found an id the message does not have");
    }
    // The scanner compares member names as written: `"i\u0064"` is not `id` to it, and the
    // spaces around a value count towards the few bytes it keeps.
    let plain = !data
        .iter()
        .any(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | b'\\'));
    if plain && serde_json::to_string(&id).is_ok_and(|text| text.len() < 200) {
        assert_eq!(whole.0, id, "missed the message's id");
    }
});
