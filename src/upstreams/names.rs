//! Our names for an upstream's tools: `{group}__{tool}`, within what clients accept
//! (`^[A-Za-z0-9_-]{1,64}$`). A character outside that set becomes `_`; a name that would be
//! longer than 64 characters, or that two of the server's tools would share after the
//! replacement, is shortened and ends with `_` and six hex digits of the SHA-256 of the tool's
//! own name, so the mapping depends only on the names the server lists and is the same at every
//! start. A tool whose name needs no change keeps it even when another one's mapping would
//! take it.

use std::collections::HashMap;

/// The longest tool name clients accept.
pub(super) const NAME_LIMIT: usize = 64;

/// Between the group's name and the tool's.
const SEPARATOR: &str = "__";

/// Hex digits of the hash that tells mapped names apart (three bytes of the SHA-256).
const HASH_DIGITS: usize = 6;

/// Our name for each of `tools` (the server's own names, in its order) in `group`.
pub(super) fn namespaced(group: &str, tools: &[&str]) -> Vec<String> {
    let cleaned: Vec<String> = tools.iter().map(|tool| clean(tool)).collect();
    let mut sharing: HashMap<&str, usize> = HashMap::new();
    for name in &cleaned {
        *sharing.entry(name.as_str()).or_default() += 1;
    }
    tools
        .iter()
        .zip(&cleaned)
        .map(|(tool, cleaned)| {
            let whole = format!("{group}{SEPARATOR}{cleaned}");
            let changed = cleaned != tool;
            let shared = sharing.get(cleaned.as_str()).copied().unwrap_or(0) > 1;
            if whole.len() <= NAME_LIMIT && !(changed && shared) {
                whole
            } else {
                hashed(group, tool, cleaned)
            }
        })
        .collect()
}

/// The tool's name with every character clients refuse replaced by `_`.
fn clean(tool: &str) -> String {
    let cleaned: String = tool
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() || character == '_' || character == '-' {
                character
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    }
}

/// `{group}__{as much of the cleaned name as fits}_{hash}`.
fn hashed(group: &str, tool: &str, cleaned: &str) -> String {
    let hash = crate::digest::hex(&crate::digest::sha256(tool.as_bytes())[..3]);
    let room = NAME_LIMIT - group.len() - SEPARATOR.len() - 1 - HASH_DIGITS;
    // The cleaned name is ASCII, so any byte index is a character boundary.
    let kept = &cleaned[..cleaned.len().min(room)];
    format!("{group}{SEPARATOR}{kept}_{hash}")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn valid(name: &str) -> bool {
        (1..=NAME_LIMIT).contains(&name.len())
            && name
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || "_-".contains(character))
    }

    #[test]
    fn valid_names_are_prefixed_and_others_cleaned() {
        assert_eq!(
            namespaced(
                "everything",
                &["echo", "get-sum", "admin.tools.list", "天気"]
            ),
            [
                "everything__echo",
                "everything__get-sum",
                "everything__admin_tools_list",
                "everything____"
            ]
        );
    }

    #[test]
    fn long_and_clashing_names_get_a_stable_hash_and_stay_valid() {
        let long = "a".repeat(80);
        let names = namespaced("group-with-a-long-name", &[&long, "a.b", "a_b", "a b"]);
        assert!(names.iter().all(|name| valid(name)), "{names:?}");
        assert_eq!(names[0].len(), NAME_LIMIT);
        assert!(names[0].starts_with("group-with-a-long-name__aaaa"));
        // `a_b` needs no change and keeps its name; the two that map onto it are told apart.
        assert_eq!(names[2], "group-with-a-long-name__a_b");
        assert!(names[1].starts_with("group-with-a-long-name__a_b_"));
        assert!(names[3].starts_with("group-with-a-long-name__a_b_"));
        assert_ne!(names[1], names[3]);
        assert_eq!(
            namespaced("group-with-a-long-name", &[&long, "a.b", "a_b", "a b"]),
            names
        );
    }
}
