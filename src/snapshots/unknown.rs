//! Calls of an enabled syntax that name no function the library runs: `@.ADDD("gold", 5);` (a
//! typo), `@.BOGUS(1);`, or MVU's `_.sett('a', 1);` when the MVU syntax is on. Left alone they
//! would change nothing and the state would drift unnoticed, so each is reported as an error
//! with the nearest known name; the message's other calls still apply.
//!
//! A name the library knows but that did not run is reported too: a disabled function, or a
//! user function whose pattern did not match this call.

use super::calls::{self, MVU_OPERATIONS};
use crate::text::nearest;

/// The call names the processing of one message knows.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// `@.NAME(…)` is in use: an enabled built-in or user function is called that way.
    pub at_syntax: bool,
    /// MVU's `_.name(…)` syntax is enabled.
    pub mvu: bool,
    /// The enabled active functions' names.
    pub enabled: Vec<String>,
    /// Active functions that exist but are disabled.
    pub disabled: Vec<String>,
}

/// A call that names nothing the library ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// Byte offset of the call in the text.
    pub position: usize,
    /// The name as written (`ADDD`, `_.sett`).
    pub name: String,
    pub message: String,
    /// The nearest known name, when one is near.
    pub suggestion: Option<String>,
}

/// Every call of an enabled syntax in `text` that starts outside `claimed` (the spans of the
/// calls that were found, as byte ranges; a call found at a position claims it even when it
/// spans nothing) and so ran nothing.
pub fn find(text: &str, claimed: &[(usize, usize)], known: &Known) -> Vec<Unknown> {
    let is_claimed = |position: usize| {
        claimed
            .iter()
            .any(|&(start, end)| start == position || (start < position && position < end))
    };
    let mut unknown = Vec::new();
    if known.at_syntax {
        for (position, _) in text.match_indices("@.") {
            if is_claimed(position) {
                continue;
            }
            let Some(name) = called_name(text, position + 2) else {
                continue;
            };
            unknown.push(at_call(position, name, known));
        }
    }
    if known.mvu {
        for (position, _) in text.match_indices("_.") {
            if calls::inside_word(text, position) || is_claimed(position) {
                continue;
            }
            let Some(name) = called_name(text, position + 2) else {
                continue;
            };
            if MVU_OPERATIONS.contains(&name) {
                continue;
            }
            let suggestion = nearest(name, MVU_OPERATIONS.iter().copied());
            let message = match &suggestion {
                Some(near) => {
                    format!("unknown MVU command `_.{name}(…)`; did you mean `_.{near}`?")
                }
                None => format!(
                    "unknown MVU command `_.{name}(…)`; the commands are {}",
                    MVU_OPERATIONS
                        .map(|operation| format!("_.{operation}"))
                        .join(", ")
                ),
            };
            unknown.push(Unknown {
                position,
                name: format!("_.{name}"),
                message,
                suggestion: suggestion.map(|near| format!("_.{near}")),
            });
        }
    }
    unknown.sort_by_key(|call| call.position);
    unknown
}

/// The name of a call starting at `start`: a word followed by `(`.
fn called_name(text: &str, start: usize) -> Option<&str> {
    let rest = &text[start..];
    let length = rest
        .find(|character: char| !(character.is_alphanumeric() || character == '_'))
        .unwrap_or(rest.len());
    let name = &rest[..length];
    (!name.is_empty() && rest[length..].trim_start().starts_with('(')).then_some(name)
}

fn at_call(position: usize, name: &str, known: &Known) -> Unknown {
    let (message, suggestion) = if known.enabled.iter().any(|enabled| enabled == name) {
        (
            format!(
                "`@.{name}(…)` does not match the pattern of `{name}`, so it did nothing; compare it with the pattern FunctionList shows"
            ),
            None,
        )
    } else if known.disabled.iter().any(|disabled| disabled == name) {
        (
            format!(
                "`{name}` is disabled, so `@.{name}(…)` did nothing; FunctionEnable turns it on"
            ),
            None,
        )
    } else {
        let suggestion = nearest(name, known.enabled.iter().map(String::as_str));
        let message = match &suggestion {
            Some(near) => format!("unknown function `{name}`; did you mean `{near}`?"),
            None => format!(
                "unknown function `{name}`; the enabled functions are {}",
                known.enabled.join(", ")
            ),
        };
        (message, suggestion)
    };
    Unknown {
        position,
        name: name.to_owned(),
        message,
        suggestion,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn known() -> Known {
        Known {
            at_syntax: true,
            mvu: true,
            enabled: ["SET", "ADD", "SUB", "APPEND", "GIVE"]
                .map(str::to_owned)
                .to_vec(),
            disabled: vec!["TIME".to_owned()],
        }
    }

    fn reported(text: &str, claimed: &[(usize, usize)]) -> Vec<(String, Option<String>)> {
        find(text, claimed, &known())
            .into_iter()
            .map(|call| (call.name, call.suggestion))
            .collect()
    }

    #[test]
    fn typos_get_the_nearest_name_and_strangers_get_none() {
        assert_eq!(
            reported(r#"@.ADDD("gold", 5); @.BOGUS(1); @.apend("bag", 1);"#, &[]),
            vec![
                ("ADDD".to_owned(), Some("ADD".to_owned())),
                ("BOGUS".to_owned(), None),
                ("apend".to_owned(), Some("APPEND".to_owned())),
            ]
        );
        let bogus = &find("@.BOGUS(1);", &[], &known())[0];
        assert!(bogus.message.contains("SET, ADD, SUB"), "{}", bogus.message);
    }

    #[test]
    fn claimed_calls_prose_and_disabled_names_are_told_apart() {
        let text = r#"@.SET("log", "@.ADDD(1)"); mail me@.home, @.TIME("x"); @.GIVE(oops)"#;
        let set_end = text.find(';').unwrap();
        let found = find(text, &[(0, set_end)], &known());
        let names: Vec<&str> = found.iter().map(|call| call.name.as_str()).collect();
        assert_eq!(names, ["TIME", "GIVE"]);
        assert!(
            found[0].message.contains("disabled"),
            "{}",
            found[0].message
        );
        assert!(found[1].message.contains("does not match the pattern"));
    }

    #[test]
    fn mvu_commands_outside_the_list_are_reported_only_when_mvu_is_on() {
        let text = "_.sett('a', 1); _.set('a', 1); lodash_.sett(1)";
        assert_eq!(
            reported(text, &[]),
            vec![("_.sett".to_owned(), Some("_.set".to_owned()))]
        );
        let off = Known {
            mvu: false,
            ..known()
        };
        assert_eq!(find(text, &[], &off), vec![]);
    }
}
