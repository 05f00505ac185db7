//! The URIs the server serves, written and read in one place: their schemes, percent-encoding
//! of the names and paths in them, and the `var://`, `rule://`, `skill://` and `snapshot://{chat}` URIs built from
//! those. `server/resources.rs`, `server/skills.rs` and `server/notifications.rs` all use these,
//! and this module uses none of them.
//!
//! A name or path keeps `A-Z a-z 0-9 - . _ ~ /` as written; every other byte is `%XX`.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

pub(super) const VAR_SCHEME: &str = "var://";
pub(super) const RULE_SCHEME: &str = "rule://";
pub(super) const STATE_SCHEME: &str = "state://";
pub(super) const SNAPSHOT_SCHEME: &str = "snapshot://";
pub(super) const SKILL_SCHEME: &str = "skill://";

/// `var://{name}`, the name percent-encoded.
pub(super) fn var_uri(name: &str) -> String {
    let mut uri = String::with_capacity(VAR_SCHEME.len() + name.len());
    uri.push_str(VAR_SCHEME);
    push_encoded(&mut uri, name);
    uri
}

/// `snapshot://{chat}`, the chat percent-encoded with `/` too, so that it never reads as
/// `snapshot://{chat}/{id}`.
pub(super) fn chat_uri(chat: &str) -> String {
    let mut uri = String::with_capacity(SNAPSHOT_SCHEME.len() + chat.len());
    uri.push_str(SNAPSHOT_SCHEME);
    push_encoded_keeping(&mut uri, chat, CHAT);
    uri
}

/// `rule://{group}/{rule}`.
pub(super) fn rule_uri(group: &str, rule: &str) -> String {
    format!("{RULE_SCHEME}{group}/{rule}")
}

/// `skill://{name}/{path}`, the path percent-encoded.
pub(super) fn skill_uri(name: &str, path: &str) -> String {
    let mut uri = format!("{SKILL_SCHEME}{name}/");
    push_encoded(&mut uri, path);
    uri
}

/// Every byte but `A-Z a-z 0-9 - . _ ~` is `%XX` in a chat.
const CHAT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Every byte but `A-Z a-z 0-9 - . _ ~ /` is `%XX` in a name or path.
const PATH: &AsciiSet = &CHAT.remove(b'/');

/// Appends `text` to `uri`, percent-encoding every byte outside `A-Z a-z 0-9 - . _ ~ /`.
fn push_encoded(uri: &mut String, text: &str) {
    push_encoded_keeping(uri, text, PATH);
}

/// Appends `text` to `uri`, percent-encoding the bytes of `set`.
fn push_encoded_keeping(uri: &mut String, text: &str, set: &'static AsciiSet) {
    uri.extend(utf8_percent_encode(text, set));
}

/// The text a percent-encoded name or path stands for; `None` for a broken escape or bytes
/// that are not UTF-8.
pub(super) fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn names_round_trip_through_var_uris() {
        for name in ["plain", "Rule/Agent/VarRef", "with space", "日本語", "100%"] {
            let uri = var_uri(name);
            let decoded = percent_decode(uri.strip_prefix(VAR_SCHEME).unwrap());
            assert_eq!(decoded.as_deref(), Some(name), "{uri}");
        }
        assert_eq!(var_uri("a b/c"), "var://a%20b/c");
        assert_eq!(
            chat_uri("艾拉/1 2"),
            "snapshot://%E8%89%BE%E6%8B%89%2F1%202"
        );
    }

    #[test]
    fn broken_percent_escapes_are_refused() {
        assert_eq!(percent_decode("%G1"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%FF"), None);
    }
}
