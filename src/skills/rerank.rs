//! Reranking search candidates with a model (the client's model standing in for a search sub-agent): the question put to
//! the model, and a robust reading of its answer. Which model answers is not decided here: the
//! `SkillSearch` tool asks the client's model through MCP sampling when the client offers it.
//!
//! The answer is read leniently: the first JSON array in the text that names a candidate wins
//! (prose or a code fence around it is ignored); names that are not candidates are dropped,
//! duplicates count once, and candidates the model left out keep their local order after the
//! ones it ranked.

use std::fmt::Write as _;

use serde_json::Value;

/// The system prompt of the question (data, not code).
pub const SYSTEM_PROMPT: &str =
    include_str!("../../skills/synapse-workspace/prompts/rerank-skills.md");

/// Longest description sent per candidate, in characters; longer ones are cut.
const DESCRIPTION_CHARS: usize = 400;

/// A candidate as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<'a> {
    pub name: &'a str,
    pub description: &'a str,
}

/// The user message: the task, then one JSON line per candidate in local order.
pub fn message(query: &str, candidates: &[Candidate<'_>]) -> String {
    let mut text = format!("Task: {}\n\nCandidate skills:\n", query.trim());
    for candidate in candidates {
        let description: String = candidate
            .description
            .trim()
            .chars()
            .take(DESCRIPTION_CHARS)
            .collect();
        let line = serde_json::json!({"name": candidate.name, "description": description});
        writeln!(text, "{line}").ok();
    }
    text.push_str("\nAnswer with the JSON array of names, best fit first.");
    text
}

/// A new order of the candidates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reordered {
    /// Positions in the candidate list, best first; every candidate appears once.
    pub order: Vec<usize>,
    /// How many of them the model ranked (the rest follow in local order).
    pub ranked: usize,
    /// How many names in the answer were not candidates.
    pub unknown: usize,
}

/// Why an answer cannot be used; the local ranking then stands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("its answer held no JSON array of skill names")]
    NoArray,
    #[error("its answer named none of the candidates")]
    NoCandidate,
}

/// Reads the model's answer against the candidates' names.
pub fn reorder(answer: &str, names: &[&str]) -> Result<Reordered, Unusable> {
    let mut saw_array = false;
    for (start, _) in answer.match_indices('[') {
        let Some(Ok(Value::Array(items))) = serde_json::Deserializer::from_str(&answer[start..])
            .into_iter::<Value>()
            .next()
        else {
            continue;
        };
        saw_array = true;
        if let Some(reordered) = apply(&items, names) {
            return Ok(reordered);
        }
    }
    Err(if saw_array {
        Unusable::NoCandidate
    } else {
        Unusable::NoArray
    })
}

/// The order an array gives, or `None` when it names no candidate.
fn apply(items: &[Value], names: &[&str]) -> Option<Reordered> {
    let mut order = Vec::with_capacity(names.len());
    let mut unknown = 0;
    for item in items {
        let given = match item {
            Value::String(name) => Some(name.as_str()),
            Value::Object(object) => object.get("name").and_then(Value::as_str),
            _ => None,
        };
        let Some(given) = given.map(str::trim) else {
            continue;
        };
        let found = names.iter().position(|name| *name == given).or_else(|| {
            names
                .iter()
                .position(|name| name.eq_ignore_ascii_case(given))
        });
        match found {
            Some(position) if !order.contains(&position) => order.push(position),
            Some(_) => {}
            None => unknown += 1,
        }
    }
    if order.is_empty() {
        return None;
    }
    let ranked = order.len();
    let rest: Vec<usize> = (0..names.len())
        .filter(|position| !order.contains(position))
        .collect();
    order.extend(rest);
    Some(Reordered {
        order,
        ranked,
        unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const NAMES: [&str; 4] = ["pdf-tools", "csv-cleaner", "git-commits", "api-docs"];

    #[test]
    fn a_plain_array_reorders_and_omitted_names_keep_their_local_order() {
        let reordered = reorder(r#"["git-commits", "pdf-tools"]"#, &NAMES).unwrap();
        assert_eq!(
            reordered,
            Reordered {
                order: vec![2, 0, 1, 3],
                ranked: 2,
                unknown: 0
            }
        );
    }

    #[test]
    fn prose_fences_invented_names_duplicates_and_case_are_tolerated() {
        let answer = "Sure! Here is my ranking [1]:\n```json\n[\"API-Docs\", \"made-up\", \
                      {\"name\": \"csv-cleaner\"}, \"api-docs\"]\n```";
        let reordered = reorder(answer, &NAMES).unwrap();
        assert_eq!(reordered.order, [3, 1, 0, 2]);
        assert_eq!((reordered.ranked, reordered.unknown), (2, 1));
    }

    #[test]
    fn answers_without_usable_names_are_refused() {
        assert_eq!(
            reorder("I cannot help with that.", &NAMES),
            Err(Unusable::NoArray)
        );
        assert_eq!(reorder("[1, 2]", &NAMES), Err(Unusable::NoCandidate));
        assert_eq!(reorder(r#"["nope"]"#, &NAMES), Err(Unusable::NoCandidate));
        assert_eq!(reorder("[\"pdf-tools\"", &NAMES), Err(Unusable::NoArray));
    }

    #[test]
    fn the_message_lists_every_candidate_as_a_json_line() {
        let text = message(
            " merge pdfs ",
            &[Candidate {
                name: "pdf-tools",
                description: "Merge \"PDF\" files.",
            }],
        );
        assert_eq!(
            text,
            "Task: merge pdfs\n\nCandidate skills:\n{\"name\":\"pdf-tools\",\"description\":\"Merge \\\"PDF\\\" files.\"}\n\nAnswer with the JSON array of names, best fit first."
        );
    }
}
