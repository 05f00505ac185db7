//! The text of a node: the reserved keys that make a reference, a spine or an escape, and the
//! JSON a scalar, a spine or a hash is written as. Both directions, laying out and reading
//! back, use these.

pub const REFERENCE: &str = "__vmRef";
pub(super) const ESCAPED: &str = "__vmEscaped";
pub(super) const JOIN: &str = "__vmJoin";

/// Whether a user's one-key object would read as a reference, a spine or an escape.
pub(super) fn is_reserved(key: &str) -> bool {
    key == REFERENCE || key == ESCAPED || key == JOIN
}

/// A spine node's body: `{"__vmJoin": [<part>, …]}`.
pub(super) fn join(parts: &[String]) -> String {
    format!("{{\"{JOIN}\":[{}]}}", parts.join(","))
}

/// A scalar (or an object key) as JSON.
pub(super) fn scalar(value: &(impl serde::Serialize + ?Sized)) -> String {
    // Writing a JSON scalar into memory cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// The hash when `body` is exactly one reference.
pub(super) fn reference_in(body: &str) -> Option<&str> {
    body.strip_prefix("{\"__vmRef\":\"")?.strip_suffix("\"}")
}
