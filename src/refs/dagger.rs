//! `†kind.path` references (`docs/state-and-plans.md`): a dagger, a kind, and a dot path into it.
//!
//! | kind | reads |
//! |---|---|
//! | `†state.a.b` | the workspace's state document |
//! | `†input.x` | the inputs of the running plan |
//! | `†steps.<id>.a` | the raw result of an earlier plan step (structured data, or its text) |
//! | `†var.<name>.a` | a variable's value (a path goes into a JSON value) |
//!
//! A string that is exactly one reference becomes the referenced JSON value, type and all (an
//! object stays an object, a number a number). A reference inside a longer string is spliced as
//! text: strings as they are, numbers, booleans and null as JSON; objects and arrays cannot be
//! spliced. The path follows the one dot-path grammar of [`crate::json::path`]: bare words of
//! letters and digits of any script, `_` and `-` (`†state.角色.好感度`), or quoted keys for
//! anything else (`†state."a.b"`, or `†state."角色"的` to end a path before more text). It ends at
//! the first character that does not continue it (a dot at the end is punctuation). `††` is a
//! literal dagger.

use serde_json::Value;

use crate::json::path::{self, Path, is_word};
use crate::json::strings;
use crate::text::take_chars;

/// Characters of an unreadable reference quoted in its error.
const SHOWN_CHARS: usize = 40;

/// The dagger that opens a reference.
pub const DAGGER: char = '†';

/// What a reference reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    State,
    Input,
    Steps,
    Var,
}

impl Kind {
    fn parse(word: &str) -> Option<Self> {
        match word {
            "state" => Some(Self::State),
            "input" => Some(Self::Input),
            "steps" => Some(Self::Steps),
            "var" => Some(Self::Var),
            _ => None,
        }
    }
}

/// One parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaggerReference {
    pub kind: Kind,
    pub path: Path,
    /// The reference as written, for messages.
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{reference}: unknown kind `{kind}`; use †state, †input, †steps or †var")]
    UnknownKind { reference: String, kind: String },
    #[error("{reference}: {source}")]
    Path {
        reference: String,
        source: path::Error,
    },
    #[error("{reference}: nothing there ({reason})")]
    Missing { reference: String, reason: String },
    #[error("{reference}: {reason}")]
    Unavailable { reference: String, reason: String },
    #[error(
        "{reference}: holds {found}, which cannot be spliced into text; make the reference the whole string to pass the value itself"
    )]
    NotSpliceable {
        reference: String,
        found: &'static str,
    },
}

/// Where references are read: `Ok(None)` when the path leads nowhere, `Err` with a reason when
/// the kind cannot be read here (`†input` outside a plan).
pub trait Context {
    fn read(&mut self, kind: Kind, path: &Path) -> Result<Option<Value>, String>;
}

/// True when the text holds a dagger.
pub fn contains_reference(text: &str) -> bool {
    text.contains(DAGGER)
}

/// A piece of a string: literal text or a reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Reference(DaggerReference),
}

/// Splits a text into literal pieces and references.
pub fn parse(text: &str) -> Result<Vec<Piece>, Error> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(position) = rest.find(DAGGER) {
        literal.push_str(&rest[..position]);
        let after = &rest[position + DAGGER.len_utf8()..];
        if let Some(escaped) = after.strip_prefix(DAGGER) {
            literal.push(DAGGER);
            rest = escaped;
            continue;
        }
        let kind_length = after
            .find(|character| !is_word(character))
            .unwrap_or(after.len());
        let kind_word = &after[..kind_length];
        let (path, path_length) =
            Path::read_in_reference(&after[kind_length..]).map_err(|source| Error::Path {
                reference: format!("{DAGGER}{}", take_chars(after, SHOWN_CHARS)),
                source,
            })?;
        let length = kind_length + path_length;
        let source = format!("{DAGGER}{}", &after[..length]);
        let Some(kind) = Kind::parse(kind_word) else {
            return Err(Error::UnknownKind {
                reference: source,
                kind: kind_word.to_owned(),
            });
        };
        if !literal.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut literal)));
        }
        pieces.push(Piece::Reference(DaggerReference { kind, path, source }));
        rest = &after[length..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        pieces.push(Piece::Text(literal));
    }
    Ok(pieces)
}

/// Resolves every reference in a JSON tree in place.
pub fn resolve_value(value: &mut Value, context: &mut dyn Context) -> Result<(), Error> {
    strings::try_replace(value, |text| {
        if contains_reference(text) {
            resolve_string(text, context).map(Some)
        } else {
            Ok(None)
        }
    })
}

fn resolve_string(text: &str, context: &mut dyn Context) -> Result<Value, Error> {
    let pieces = parse(text)?;
    if let [Piece::Reference(reference)] = pieces.as_slice() {
        return read(reference, context);
    }
    let mut spliced = String::with_capacity(text.len());
    for piece in pieces {
        match piece {
            Piece::Text(literal) => spliced.push_str(&literal),
            Piece::Reference(reference) => match read(&reference, context)? {
                Value::String(inner) => spliced.push_str(&inner),
                found @ (Value::Array(_) | Value::Object(_)) => {
                    return Err(Error::NotSpliceable {
                        reference: reference.source,
                        found: path::describe(&found),
                    });
                }
                scalar => spliced.push_str(&scalar.to_string()),
            },
        }
    }
    Ok(Value::String(spliced))
}

fn read(reference: &DaggerReference, context: &mut dyn Context) -> Result<Value, Error> {
    match context.read(reference.kind, &reference.path) {
        Ok(Some(value)) => Ok(value),
        Ok(None) => Err(Error::Missing {
            reference: reference.source.clone(),
            reason: "no such path; read the document first or fix the path".to_owned(),
        }),
        Err(reason) => Err(Error::Unavailable {
            reference: reference.source.clone(),
            reason,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    struct Document(Value);

    impl Context for Document {
        fn read(&mut self, kind: Kind, path: &Path) -> Result<Option<Value>, String> {
            if kind == Kind::Input {
                return Err("†input is only available inside RunPlan".to_owned());
            }
            Ok(path.get(&self.0).cloned())
        }
    }

    fn resolved(value: Value) -> Result<Value, Error> {
        let mut document =
            Document(json!({"user": {"name": "Ada", "age": 36}, "items": [{"id": 7}]}));
        let mut value = value;
        resolve_value(&mut value, &mut document).map(|()| value)
    }

    #[test]
    fn a_whole_reference_keeps_the_json_type() {
        assert_eq!(
            resolved(json!({"u": "†state.user", "n": "†state.user.age"})).unwrap(),
            json!({"u": {"name": "Ada", "age": 36}, "n": 36})
        );
        assert_eq!(resolved(json!(["†state.items.0.id"])).unwrap(), json!([7]));
    }

    #[test]
    fn a_reference_inside_text_is_spliced_and_ends_at_punctuation() {
        assert_eq!(
            resolved(json!("Hi †state.user.name, you are †state.user.age.")).unwrap(),
            json!("Hi Ada, you are 36.")
        );
        assert_eq!(
            resolved(json!("price: 5†† (dagger)")).unwrap(),
            json!("price: 5† (dagger)")
        );
    }

    #[test]
    fn objects_cannot_be_spliced_and_missing_paths_are_named() {
        assert_eq!(
            resolved(json!("user: †state.user"))
                .unwrap_err()
                .to_string(),
            "†state.user: holds an object, which cannot be spliced into text; make the reference the whole string to pass the value itself"
        );
        assert!(
            resolved(json!("†state.nobody.here"))
                .unwrap_err()
                .to_string()
                .starts_with("†state.nobody.here: nothing there")
        );
        assert_eq!(
            resolved(json!("†sate.x")).unwrap_err(),
            Error::UnknownKind {
                reference: "†sate.x".into(),
                kind: "sate".into()
            }
        );
        assert!(
            resolved(json!("†input.x"))
                .unwrap_err()
                .to_string()
                .contains("only available inside RunPlan")
        );
    }

    /// The text each reference in `text` took, and its path's segments.
    fn references(text: &str) -> Vec<(String, Vec<String>)> {
        parse(text)
            .unwrap()
            .into_iter()
            .filter_map(|piece| match piece {
                Piece::Reference(reference) => {
                    Some((reference.source, reference.path.segments().to_vec()))
                }
                Piece::Text(_) => None,
            })
            .collect()
    }

    #[test]
    fn the_path_takes_words_joined_by_single_dots() {
        let taken = |text: &str| references(text).remove(0).0;
        assert_eq!(taken("†state.a.b"), "†state.a.b");
        assert_eq!(taken("†state.a. Next"), "†state.a");
        assert_eq!(taken("†state.a..b"), "†state.a");
        assert_eq!(taken("†state.a-b_c d"), "†state.a-b_c");
    }

    #[test]
    fn words_of_any_script_and_quoted_keys_are_path_segments() {
        assert_eq!(
            references("角色: †state.角色.好感度。"),
            [(
                "†state.角色.好感度".to_owned(),
                vec!["角色".to_owned(), "好感度".to_owned()]
            )]
        );
        assert_eq!(
            references(r#"†state."a.b"."say \"hi\"".0 and †var."角色"的"#),
            [
                (
                    r#"†state."a.b"."say \"hi\"".0"#.to_owned(),
                    vec!["a.b".to_owned(), r#"say "hi""#.to_owned(), "0".to_owned()]
                ),
                ("†var.\"角色\"".to_owned(), vec!["角色".to_owned()]),
            ]
        );
        let unclosed = parse(r#"†state."a.b"#).unwrap_err();
        assert_eq!(
            unclosed.to_string(),
            r#"†state."a.b: path `"a.b` has a quote that is never closed; end the quoted key with `"`"#
        );
    }

    #[test]
    fn a_unicode_reference_reads_its_value() {
        let mut document = Document(json!({"角色": {"名字": "艾达"}}));
        let mut value =
            json!({"whole": "†state.角色.名字", "spliced": "名字是†state.\"角色\".名字。"});
        resolve_value(&mut value, &mut document).unwrap();
        assert_eq!(value, json!({"whole": "艾达", "spliced": "名字是艾达。"}));
    }
}
