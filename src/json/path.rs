//! Dot paths into JSON documents: `user.summary`, `items.0.name`. A segment of digits indexes an
//! array (and names a key in an object); anything else names a key.
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
    #[error("path `{path}` has an empty segment; separate names with single dots")]
    EmptySegment { path: String },
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
        let count = text.split('.').count();
        nesting::check_segments(count).map_err(|source| Error::TooDeep {
            path: quote(text),
            source,
        })?;
        let segments: Vec<String> = text.split('.').map(str::to_owned).collect();
        if segments.iter().any(String::is_empty) {
            return Err(Error::EmptySegment {
                path: text.to_owned(),
            });
        }
        Ok(Self { segments })
    }

    /// A path from segments parsed elsewhere (the snapshots' lodash-style `a.b[0]["c.d"]`).
    /// Segments may hold dots; `Display` then shows them joined, ambiguously.
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
        self.segments
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
        self.segments[..depth].join(".")
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.segments.join("."))
    }
}

/// The beginning of a long path, for messages.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
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

    proptest! {
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
