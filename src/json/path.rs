//! Dot paths into JSON documents: `user.summary`, `items.0.name`, `角色.好感度`. A segment of
//! digits indexes an array (and names a key in an object); anything else names a key.
//!
//! One grammar everywhere a path is written (`ReadState`, `WriteState`, `_outputPath`, `†`
//! references, `state://` resources): segments separated by dots, each either bare or quoted.
//! A quoted segment, `"a.b"`, holds any key, dots and spaces included (`\"` and `\\` escape a
//! quote and a backslash). A bare segment is any run of characters without a dot; inside a `†`
//! reference, whose end is not marked, a bare segment is a word: letters and digits of any
//! script, `_` and `-`. A path prints back in this grammar, quoting what a bare word cannot hold.
//!
//! Writing creates missing intermediate objects. An array index may overwrite an element or
//! append at the end (`items.3` on a three-element array), never leave a gap. A write never
//! replaces a scalar that stands in the way of a deeper path: that is an error naming the
//! segment, so a typo cannot wipe out data.

use serde_json::{Map, Value};

use crate::json::nesting::{self, TooDeep};

/// Characters of a too-deep path quoted in its error.
const QUOTED_CHARS: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("empty path: write a dot path such as `user.name` or `items.0`")]
    Empty,
    #[error(
        "path `{path}` has an empty segment; separate names with single dots, and quote a key that is empty or holds dots: `a.\"b.c\"`"
    )]
    EmptySegment { path: String },
    #[error("path `{path}` has a quote that is never closed; end the quoted key with `\"`")]
    UnclosedQuote { path: String },
    #[error("path `{path}`: `{found}` after a quoted key; write a dot before the next key")]
    AfterQuote { path: String, found: char },
    #[error("path `{path}` {source}")]
    TooDeep {
        /// The path's beginning (a path this deep is long).
        path: String,
        source: TooDeep,
    },
    #[error(
        "cannot write `{path}`: `{prefix}` holds {found}, not an object or array; write to `{prefix}` itself to replace it"
    )]
    Blocked {
        path: String,
        prefix: String,
        found: &'static str,
    },
    #[error(
        "cannot write `{path}`: index {index} is past the end of `{prefix}` ({length} elements); append at index {length}"
    )]
    Gap {
        path: String,
        prefix: String,
        index: usize,
        length: usize,
    },
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    segments: Vec<String>,
}

impl Path {
    pub fn parse(text: &str) -> Result<Self, Error> {
        if text.is_empty() {
            return Err(Error::Empty);
        }
        let (segments, read) = read_segments(text, Bare::UntilDot)?;
        if read < text.len() {
            return Err(Error::AfterQuote {
                path: quote(text),
                found: text[read..].chars().next().unwrap_or_default(),
            });
        }
        Self::checked(segments, text)
    }

    /// Reads the path of a `†` reference at the start of `text`, which begins at the dot after
    /// the reference's kind (`.user.name rest`); returns the path and how many bytes it took.
    /// A dot not followed by a word or a quote ends the path (it is punctuation).
    pub fn read_in_reference(text: &str) -> Result<(Self, usize), Error> {
        let (segments, read) = read_segments(text, Bare::Word)?;
        let path = if segments.is_empty() {
            Self::root()
        } else {
            Self::checked(segments, &text[..read])?
        };
        Ok((path, read))
    }

    fn checked(segments: Vec<String>, text: &str) -> Result<Self, Error> {
        nesting::check_segments(segments.len()).map_err(|source| Error::TooDeep {
            path: quote(text),
            source,
        })?;
        Ok(Self { segments })
    }

    /// A path from segments parsed elsewhere (the snapshots' lodash-style `a.b[0]["c.d"]`).
    pub fn from_segments(segments: Vec<String>) -> Result<Self, Error> {
        if segments.is_empty() {
            return Err(Error::Empty);
        }
        nesting::check_segments(segments.len()).map_err(|source| Error::TooDeep {
            path: quote(&segments.join(".")),
            source,
        })?;
        Ok(Self { segments })
    }

    /// A path given or not: the whole document when left out or empty.
    pub fn parse_or_root(text: Option<&str>) -> Result<Self, Error> {
        match text {
            None | Some("") => Ok(Self::root()),
            Some(text) => Self::parse(text),
        }
    }

    /// The whole document.
    pub fn root() -> Self {
        Self {
            segments: Vec::new(),
        }
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// Whether one path is a prefix of the other (a write to one touches the other).
    pub fn overlaps(&self, other: &Path) -> bool {
        self.segments
            .iter()
            .zip(&other.segments)
            .all(|(a, b)| a == b)
    }

    /// The value at this path, if there is one.
    pub fn get<'a>(&self, document: &'a Value) -> Option<&'a Value> {
        value_at(document, &self.segments)
    }

    /// The value at this path, to change in place.
    pub fn get_mut<'a>(&self, document: &'a mut Value) -> Option<&'a mut Value> {
        self.segments
            .iter()
            .try_fold(document, |current, segment| match current {
                Value::Object(members) => members.get_mut(segment),
                Value::Array(items) => segment
                    .parse::<usize>()
                    .ok()
                    .and_then(|index| items.get_mut(index)),
                _ => None,
            })
    }

    /// Takes the value at this path out of the document (an array element is removed, the
    /// later ones move up); `None` when there was none.
    pub fn remove(&self, document: &mut Value) -> Option<Value> {
        let (last, parents) = self.segments.split_last()?;
        let parent = Self {
            segments: parents.to_vec(),
        };
        match parent.get_mut(document)? {
            Value::Object(members) => members.shift_remove(last),
            Value::Array(items) => {
                let index = last
                    .parse::<usize>()
                    .ok()
                    .filter(|index| *index < items.len())?;
                Some(items.remove(index))
            }
            _ => None,
        }
    }

    /// Writes `value` at this path, creating missing objects on the way.
    pub fn set(&self, document: &mut Value, value: Value) -> Result<(), Error> {
        let Some((last, parents)) = self.segments.split_last() else {
            *document = value;
            return Ok(());
        };
        let mut current = document;
        for (depth, segment) in parents.iter().enumerate() {
            current = self.step_into(current, segment, depth)?;
        }
        self.place(current, last, value, parents.len())
    }

    fn step_into<'a>(
        &self,
        current: &'a mut Value,
        segment: &str,
        depth: usize,
    ) -> Result<&'a mut Value, Error> {
        if current.is_null() {
            *current = Value::Object(Map::new());
        }
        match current {
            Value::Object(members) => Ok(members.entry(segment.to_owned()).or_insert(Value::Null)),
            Value::Array(items) => {
                let index = self.index(segment, items.len(), depth)?;
                if index == items.len() {
                    items.push(Value::Null);
                }
                Ok(&mut items[index])
            }
            other => Err(self.blocked(depth, other)),
        }
    }

    fn place(
        &self,
        current: &mut Value,
        segment: &str,
        value: Value,
        depth: usize,
    ) -> Result<(), Error> {
        if current.is_null() {
            *current = Value::Object(Map::new());
        }
        match current {
            Value::Object(members) => {
                members.insert(segment.to_owned(), value);
                Ok(())
            }
            Value::Array(items) => {
                let index = self.index(segment, items.len(), depth)?;
                if index == items.len() {
                    items.push(value);
                } else {
                    items[index] = value;
                }
                Ok(())
            }
            other => Err(self.blocked(depth, other)),
        }
    }

    /// An array index that overwrites or appends, never leaves a gap.
    fn index(&self, segment: &str, length: usize, depth: usize) -> Result<usize, Error> {
        match segment.parse::<usize>() {
            Ok(index) if index <= length => Ok(index),
            Ok(index) => Err(Error::Gap {
                path: self.to_string(),
                prefix: self.prefix(depth),
                index,
                length,
            }),
            Err(_) => Err(Error::Blocked {
                path: self.to_string(),
                prefix: self.prefix(depth),
                found: "an array",
            }),
        }
    }

    fn blocked(&self, depth: usize, found: &Value) -> Error {
        Error::Blocked {
            path: self.to_string(),
            prefix: self.prefix(depth),
            found: describe(found),
        }
    }

    fn prefix(&self, depth: usize) -> String {
        Self {
            segments: self.segments[..depth].to_vec(),
        }
        .to_string()
    }

    /// The first segment and the segments after it (`†steps.<id>.rest`); read the rest with
    /// [`value_at`].
    pub fn split_first(&self) -> Option<(&str, &[String])> {
        let (first, rest) = self.segments.split_first()?;
        Some((first, rest))
    }
}

impl std::fmt::Display for Path {
    /// Prints the path so that it parses back, in a reference too: bare words as they are,
    /// anything else quoted.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (index, segment) in self.segments.iter().enumerate() {
            if index > 0 {
                formatter.write_str(".")?;
            }
            if !segment.is_empty() && segment.chars().all(is_word) {
                formatter.write_str(segment)?;
            } else {
                formatter.write_str("\"")?;
                for character in segment.chars() {
                    if matches!(character, '"' | '\\') {
                        formatter.write_str("\\")?;
                    }
                    write!(formatter, "{character}")?;
                }
                formatter.write_str("\"")?;
            }
        }
        Ok(())
    }
}

/// The value at a path given as segments (a digit segment indexes an array), if there is one.
pub fn value_at<'a>(document: &'a Value, segments: &[String]) -> Option<&'a Value> {
    segments
        .iter()
        .try_fold(document, |current, segment| match current {
            Value::Object(members) => members.get(segment),
            Value::Array(items) => segment
                .parse::<usize>()
                .ok()
                .and_then(|index| items.get(index)),
            _ => None,
        })
}

/// What a bare (unquoted) segment may hold.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bare {
    /// Anything but a dot: a path that is a whole string.
    UntilDot,
    /// Word characters: a path inside a reference, which ends at the first other character.
    Word,
}

/// A character of a bare segment inside a reference: a letter or digit of any script, `_`, `-`.
pub fn is_word(character: char) -> bool {
    character.is_alphanumeric() || character == '_' || character == '-'
}

/// Reads dot-separated segments from the start of `text`; returns them and the bytes read. For
/// [`Bare::Word`] the text starts with the dot before the first segment, and reading stops
/// before anything that does not continue the path; for [`Bare::UntilDot`] it starts with the
/// first segment and every segment must be non-empty.
fn read_segments(text: &str, bare: Bare) -> Result<(Vec<String>, usize), Error> {
    let mut segments = Vec::new();
    let mut position = 0;
    loop {
        let start = match bare {
            Bare::UntilDot if segments.is_empty() => position,
            Bare::UntilDot => match text[position..].strip_prefix('.') {
                Some(_) => position + 1,
                None => return Ok((segments, position)),
            },
            Bare::Word => {
                let after = text[position..].strip_prefix('.');
                let continues = after.and_then(|after| after.chars().next());
                match continues {
                    Some(next) if next == '"' || is_word(next) => position + 1,
                    _ => return Ok((segments, position)),
                }
            }
        };
        let rest = &text[start..];
        let (segment, length) = if rest.starts_with('"') {
            read_quoted(rest).ok_or_else(|| Error::UnclosedQuote {
                path: quote(text.trim_start_matches('.')),
            })?
        } else {
            let length = match bare {
                Bare::UntilDot => rest.find(['.']).unwrap_or(rest.len()),
                Bare::Word => rest
                    .find(|character| !is_word(character))
                    .unwrap_or(rest.len()),
            };
            if length == 0 {
                return Err(Error::EmptySegment {
                    path: text.to_owned(),
                });
            }
            (rest[..length].to_owned(), length)
        };
        segments.push(segment);
        position = start + length;
        // Reading stops just past the limit: a path this deep is refused whole, its depth
        // counted by the dots left (a quoted dot may count too).
        if segments.len() > nesting::MAX_DEPTH {
            return Err(Error::TooDeep {
                path: quote(text.trim_start_matches('.')),
                source: TooDeep {
                    depth: segments.len() + text[position..].matches('.').count(),
                },
            });
        }
    }
}

/// A quoted segment at the start of `text` (which starts with `"`): its key and its length in
/// bytes, quotes included; `None` when it is never closed.
fn read_quoted(text: &str) -> Option<(String, usize)> {
    let mut key = String::new();
    let mut characters = text.char_indices().skip(1);
    while let Some((index, character)) = characters.next() {
        match character {
            '"' => return Some((key, index + 1)),
            '\\' => key.push(characters.next()?.1),
            other => key.push(other),
        }
    }
    None
}

/// The beginning of a long path, for messages.
fn quote(text: &str) -> String {
    crate::text::shorten(text, QUOTED_CHARS)
}

/// A value's kind, for messages.
pub fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use serde_json::json;

    fn write(document: &mut Value, path: &str, value: Value) -> Result<(), Error> {
        Path::parse(path).unwrap().set(document, value)
    }

    #[test]
    fn writing_creates_missing_intermediate_objects() {
        let mut document = json!({});
        write(&mut document, "user.profile.name", json!("Ada")).unwrap();
        assert_eq!(document, json!({"user": {"profile": {"name": "Ada"}}}));
    }

    #[test]
    fn array_indices_overwrite_or_append_but_never_leave_gaps() {
        let mut document = json!({"items": [{"name": "a"}, {"name": "b"}]});
        write(&mut document, "items.1.name", json!("B")).unwrap();
        write(&mut document, "items.2", json!({"name": "c"})).unwrap();
        assert_eq!(
            document,
            json!({"items": [{"name": "a"}, {"name": "B"}, {"name": "c"}]})
        );
        let gap = write(&mut document, "items.9", json!(1)).unwrap_err();
        assert_eq!(
            gap.to_string(),
            "cannot write `items.9`: index 9 is past the end of `items` (3 elements); append at index 3"
        );
    }

    #[test]
    fn a_scalar_in_the_way_is_an_error_not_overwritten() {
        let mut document = json!({"count": 3});
        let error = write(&mut document, "count.total", json!(1)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot write `count.total`: `count` holds a number, not an object or array; write to `count` itself to replace it"
        );
        assert_eq!(document, json!({"count": 3}));
        write(&mut document, "count", json!({"total": 1})).unwrap();
        assert_eq!(document, json!({"count": {"total": 1}}));
    }

    #[test]
    fn reading_follows_keys_and_indices() {
        let document = json!({"items": [{"name": "a"}], "0": "key"});
        assert_eq!(
            Path::parse("items.0.name").unwrap().get(&document),
            Some(&json!("a"))
        );
        assert_eq!(
            Path::parse("0").unwrap().get(&document),
            Some(&json!("key"))
        );
        assert_eq!(Path::parse("items.5").unwrap().get(&document), None);
        assert_eq!(Path::root().get(&document), Some(&document));
    }

    #[test]
    fn malformed_paths_are_refused() {
        assert_eq!(Path::parse(""), Err(Error::Empty));
        assert!(matches!(
            Path::parse("a..b"),
            Err(Error::EmptySegment { .. })
        ));
        assert!(matches!(Path::parse("a."), Err(Error::EmptySegment { .. })));
    }

    #[test]
    fn paths_deeper_than_the_nesting_limit_are_refused() {
        let at_limit = vec!["a"; nesting::MAX_DEPTH].join(".");
        assert_eq!(
            Path::parse(&at_limit).unwrap().segments().len(),
            nesting::MAX_DEPTH
        );
        let deep = vec!["a"; 74_500].join(".");
        assert_eq!(
            Path::parse(&deep).unwrap_err().to_string(),
            "path `a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.…` nests 74500 levels deep, deeper than the limit of 64; store it flatter"
        );
        let segments = vec!["a".to_owned(); nesting::MAX_DEPTH + 1];
        assert!(matches!(
            Path::from_segments(segments),
            Err(Error::TooDeep { .. })
        ));
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z]{1,6}", "[0-2]"]
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            "[ -~]{0,12}".prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            Just(json!({"nested": [1, 2]})),
        ]
    }

    /// Any key: words of several scripts, dots, quotes, backslashes, spaces, or nothing.
    fn any_key() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9_-]{1,6}",
            "[角色好感度名字ИмяЗолото]{1,4}",
            r#"[a. "\\\-角]{0,6}"#,
            any::<String>(),
        ]
    }

    #[test]
    fn keys_that_are_not_words_print_quoted() {
        let path = Path::from_segments(vec![
            "角色".to_owned(),
            "a.b".to_owned(),
            r#"say "hi""#.to_owned(),
            String::new(),
            "0".to_owned(),
        ])
        .unwrap();
        assert_eq!(path.to_string(), r#"角色."a.b"."say \"hi\""."".0"#);
        assert_eq!(Path::parse(&path.to_string()).unwrap(), path);
        assert_eq!(
            Path::parse("my key.角色").unwrap().segments(),
            ["my key", "角色"]
        );
        assert_eq!(
            Path::parse(r#""a.b"c"#).unwrap_err().to_string(),
            r#"path `"a.b"c`: `c` after a quoted key; write a dot before the next key"#
        );
    }

    proptest! {
        #[test]
        fn every_path_prints_in_the_grammar_and_parses_back(
            segments in prop::collection::vec(any_key(), 1..6)
        ) {
            let path = Path::from_segments(segments.clone()).unwrap();
            let text = path.to_string();
            let parsed = Path::parse(&text).unwrap();
            prop_assert_eq!(parsed.segments(), segments.as_slice());
            let (read, length) = Path::read_in_reference(&format!(".{text}, then text")).unwrap();
            prop_assert_eq!(read.segments(), segments.as_slice());
            prop_assert_eq!(length, text.len() + 1);
        }

        #[test]
        fn parsed_paths_print_back_and_stay_within_the_limit(text in "[a0.]{0,160}") {
            if let Ok(path) = Path::parse(&text) {
                prop_assert!(path.segments().len() <= nesting::MAX_DEPTH);
                prop_assert!(path.segments().iter().all(|segment| !segment.is_empty()));
                prop_assert_eq!(path.to_string(), text);
            }
        }

        #[test]
        fn a_write_that_passes_the_check_keeps_the_document_within_the_limit(
            segments in 1..80usize,
            levels in 0..80usize,
        ) {
            let path = Path::parse(&vec!["a"; segments].join("."));
            let mut value = json!(1);
            for _ in 0..levels {
                value = json!([value]);
            }
            let mut document = json!({});
            if let Ok(path) = path
                && nesting::check(&value, path.segments().len()).is_ok()
            {
                path.set(&mut document, value).unwrap();
                prop_assert!(nesting::depth(&document) <= nesting::MAX_DEPTH);
            } else {
                prop_assert!(segments + levels > nesting::MAX_DEPTH);
            }
        }

        #[test]
        fn what_is_written_reads_back(writes in prop::collection::vec((prop::collection::vec(segment(), 1..4), leaf()), 1..12)) {
            let mut document = json!({});
            for (segments, value) in writes {
                let path = Path::parse(&segments.join(".")).unwrap();
                let before = document.clone();
                if path.set(&mut document, value.clone()).is_ok() {
                    prop_assert_eq!(path.get(&document), Some(&value));
                } else {
                    prop_assert_eq!(&document, &before, "a refused write changes nothing");
                }
            }
        }
    }
}
