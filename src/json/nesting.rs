//! How deep a JSON value may nest: one limit for every value and dot path that enters the
//! workspace (tool arguments, function calls in chat replies, writes to the state document,
//! snapshot states), so that nothing accepted can fail to be read back.
//!
//! `serde_json` refuses to parse documents nested deeper than 128 levels, and recursive encoders
//! overflow the stack long before a value built by a loop runs out of memory. The limit here sits
//! well below both: a value whose depth, counted together with the dot path it is written at, is
//! within [`MAX_DEPTH`] can always be stored, read, exported and imported again.
//!
//! Depth counts containers: a scalar has depth 0, `[]` and `{}` depth 1, `{"a": [1]}` depth 2.

use serde_json::Value;

/// The deepest nesting accepted for a stored value, dot-path segments included.
pub const MAX_DEPTH: usize = 64;

/// A value or path nesting deeper than [`MAX_DEPTH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("nests {depth} levels deep, deeper than the limit of {MAX_DEPTH}; store it flatter")]
pub struct TooDeep {
    /// How deep it nests (at least; counting stops just past the limit).
    pub depth: usize,
}

/// The depth of `value`, counted without recursion (so any value, however deep, is safe to
/// measure). Counting stops at `MAX_DEPTH + 1`: callers only need to know it is too deep.
pub fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, above)) = pending.pop() {
        let here = above + 1;
        match value {
            Value::Array(items) => pending.extend(items.iter().map(|item| (item, here))),
            Value::Object(fields) => pending.extend(fields.values().map(|field| (field, here))),
            _ => continue,
        }
        deepest = deepest.max(here);
        if here > MAX_DEPTH {
            return deepest;
        }
    }
    deepest
}

/// Checks that `value`, written `segments` levels below the root, stays within [`MAX_DEPTH`].
pub fn check(value: &Value, segments: usize) -> Result<(), TooDeep> {
    let total = segments.saturating_add(depth(value));
    if total > MAX_DEPTH {
        Err(TooDeep { depth: total })
    } else {
        Ok(())
    }
}

/// Checks a dot path's segment count on its own (before any value is written under it).
pub fn check_segments(segments: usize) -> Result<(), TooDeep> {
    if segments > MAX_DEPTH {
        Err(TooDeep { depth: segments })
    } else {
        Ok(())
    }
}

/// A JSON text whose branches deeper than [`MAX_DEPTH`] were cut: each cut container is kept,
/// in place, as a string holding its JSON text, so nothing is lost and the rest reads as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flattened {
    pub text: String,
    /// The dot paths of the cut branches, in document order.
    pub cut: Vec<String>,
}

/// How deep a JSON text nests, measured on the text without parsing it (so a text far deeper
/// than any parser accepts can be measured). Brackets inside strings are skipped; the text is
/// not otherwise validated.
pub fn text_depth(text: &str) -> usize {
    let mut deepest = 0;
    let mut depth = 0usize;
    let mut scanner = Scanner::new(text);
    while let Some(token) = scanner.next_token() {
        match token {
            Token::Open(_) => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            Token::Close => depth = depth.saturating_sub(1),
            Token::String(_) | Token::Comma | Token::Other => {}
        }
    }
    deepest
}

/// Cuts every branch of a JSON text that nests deeper than [`MAX_DEPTH`], keeping each as a
/// string of its JSON text where it was; `None` when nothing nests that deep. Works on the
/// text, without recursion, whatever its depth.
pub fn flatten_text(text: &str) -> Option<Flattened> {
    if text_depth(text) <= MAX_DEPTH {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut cut = Vec::new();
    let mut open: Vec<Frame> = Vec::new();
    let mut scanner = Scanner::new(text);
    let mut copied = 0;
    while let Some(token) = scanner.next_token() {
        match token {
            Token::Open(_) if open.len() == MAX_DEPTH => {
                let start = scanner.position - 1;
                scanner.skip_container();
                let branch = &text[start..scanner.position];
                out.push_str(&text[copied..start]);
                out.push_str(&Value::String(branch.to_owned()).to_string());
                copied = scanner.position;
                cut.push(path_of(&open));
            }
            Token::Open(object) => open.push(Frame {
                object,
                key: String::new(),
                index: 0,
                expecting_key: object,
            }),
            Token::Close => {
                open.pop();
            }
            Token::Comma => {
                if let Some(frame) = open.last_mut() {
                    frame.index += 1;
                    frame.expecting_key = frame.object;
                }
            }
            Token::String(raw) => match open.last_mut() {
                Some(frame) if frame.expecting_key => {
                    frame.key =
                        serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_owned());
                    frame.expecting_key = false;
                }
                _ => {}
            },
            Token::Other => {}
        }
    }
    out.push_str(&text[copied..]);
    Some(Flattened { text: out, cut })
}

/// An open container while flattening: an object's current key, an array's current index.
struct Frame {
    object: bool,
    key: String,
    index: usize,
    expecting_key: bool,
}

fn path_of(open: &[Frame]) -> String {
    // Each open container names the segment of the child it is in the middle of.
    let segments: Vec<String> = open
        .iter()
        .map(|frame| {
            if frame.object {
                frame.key.clone()
            } else {
                frame.index.to_string()
            }
        })
        .collect();
    segments.join(".")
}

enum Token<'a> {
    /// `{` (true) or `[` (false).
    Open(bool),
    Close,
    Comma,
    /// A string token with its quotes, as written.
    String(&'a str),
    Other,
}

/// A minimal JSON tokenizer: brackets, commas and whole strings; everything else is skipped.
struct Scanner<'a> {
    text: &'a str,
    position: usize,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, position: 0 }
    }

    fn next_token(&mut self) -> Option<Token<'a>> {
        let bytes = self.text.as_bytes();
        let byte = *bytes.get(self.position)?;
        let start = self.position;
        self.position += 1;
        Some(match byte {
            b'{' => Token::Open(true),
            b'[' => Token::Open(false),
            b'}' | b']' => Token::Close,
            b',' => Token::Comma,
            b'"' => {
                self.skip_string_body();
                Token::String(&self.text[start..self.position])
            }
            _ => Token::Other,
        })
    }

    /// Moves past the rest of a string whose opening quote was just read.
    fn skip_string_body(&mut self) {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.position) {
            self.position += 1;
            match byte {
                b'\\' => self.position += 1,
                b'"' => return,
                _ => {}
            }
        }
        self.position = self.position.min(bytes.len());
    }

    /// Moves past the rest of a container whose opening bracket was just read.
    fn skip_container(&mut self) {
        let mut depth = 1usize;
        while depth > 0 {
            match self.next_token() {
                Some(Token::Open(_)) => depth += 1,
                Some(Token::Close) => depth -= 1,
                Some(_) => {}
                None => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(levels: usize) -> Value {
        let mut value = json!(1);
        for _ in 0..levels {
            value = json!({ "a": value });
        }
        value
    }

    #[test]
    fn depth_counts_containers() {
        assert_eq!(depth(&json!(1)), 0);
        assert_eq!(depth(&json!([])), 1);
        assert_eq!(depth(&json!({"a": [1], "b": 2})), 2);
    }

    #[test]
    fn values_at_the_limit_pass_and_one_deeper_fails() {
        assert_eq!(check(&nested(MAX_DEPTH), 0), Ok(()));
        assert_eq!(
            check(&nested(MAX_DEPTH - 3), 4),
            Err(TooDeep {
                depth: MAX_DEPTH + 1
            })
        );
    }

    #[test]
    fn texts_are_measured_and_cut_without_parsing() {
        let deep = format!(
            "{{\"k\":[1,{{\"s\":\"[{{\"}},{}2{}]}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(text_depth(&deep), 100_002);
        let flattened = flatten_text(&deep).unwrap();
        let value: Value = serde_json::from_str(&flattened.text).unwrap();
        assert_eq!(depth(&value), MAX_DEPTH);
        assert_eq!(
            flattened.cut,
            ["k.2".to_owned() + &".0".repeat(MAX_DEPTH - 2)]
        );
        assert_eq!(flatten_text("{\"a\": [1, 2]}"), None);
    }

    #[test]
    fn a_cut_branch_keeps_its_text() {
        let mut text = "[".repeat(MAX_DEPTH);
        text.push_str("{\"x\": \"}\\\"\"}");
        text.push_str(&"]".repeat(MAX_DEPTH));
        let flattened = flatten_text(&text).unwrap();
        let mut value: Value = serde_json::from_str(&flattened.text).unwrap();
        for _ in 0..MAX_DEPTH {
            value = value[0].take();
        }
        assert_eq!(value, json!("{\"x\": \"}\\\"\"}"));
    }

    #[test]
    fn very_deep_values_are_measured_without_recursion() {
        let mut value = json!(null);
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }
        assert_eq!(depth(&value), MAX_DEPTH + 1);
        // Dropping a value this deep recurses in serde_json; leak it in the test instead.
        std::mem::forget(value);
    }
}
