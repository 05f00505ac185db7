//! The argument reader of the built-in call syntaxes: JavaScript-style literals as models write
//! them inside `@.SET("a", {"b": 1});` — JSON, plus single-quoted and backtick strings, bare
//! object keys, `undefined`, a leading `+`, trailing commas — spread over lines or not. Parsing
//! is by structure, not by regex, so `);` inside a string or nested parentheses never cut an
//! argument short.

use serde_json::{Map, Number, Value};

/// Where the reader stopped and why. `at` is a byte offset into the text given to [`Reader`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at character {at}")]
pub struct Error {
    pub at: usize,
    pub message: String,
}

/// Nesting deeper than this is refused (a stack guard against hostile input).
const MAX_DEPTH: usize = 128;

/// Reads literals from `text`, starting at a byte offset.
pub struct Reader<'a> {
    text: &'a str,
    position: usize,
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str, position: usize) -> Self {
        Self { text, position }
    }

    pub fn position(&self) -> usize {
        self.position
    }

    fn peek(&self) -> Option<char> {
        self.text[self.position..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let next = self.peek()?;
        self.position += next.len_utf8();
        Some(next)
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, Error> {
        Err(Error {
            at: self.character_offset(),
            message: message.into(),
        })
    }

    /// The position in characters, as people count them.
    fn character_offset(&self) -> usize {
        self.text[..self.position].chars().count()
    }

    /// Skips whitespace and `//` or `/* */` comments.
    pub fn skip_blank(&mut self) {
        loop {
            let rest = &self.text[self.position..];
            let trimmed = rest.trim_start();
            self.position += rest.len() - trimmed.len();
            if trimmed.starts_with("//") {
                self.position += trimmed.find('\n').unwrap_or(trimmed.len());
            } else if let Some(comment) = trimmed.strip_prefix("/*") {
                self.position += comment.find("*/").map_or(trimmed.len(), |end| end + 4);
            } else {
                return;
            }
        }
    }

    /// Consumes `expected` (after blanks) when it is next.
    pub fn eat(&mut self, expected: char) -> bool {
        self.skip_blank();
        if self.peek() == Some(expected) {
            self.position += expected.len_utf8();
            true
        } else {
            false
        }
    }

    /// Reads a parenthesised argument list; the `(` has been consumed. Stops after the `)`.
    pub fn arguments(&mut self) -> Result<Vec<Value>, Error> {
        let mut arguments = Vec::new();
        loop {
            if self.eat(')') {
                return Ok(arguments);
            }
            arguments.push(self.value(0)?);
            if self.eat(',') {
                continue;
            }
            if self.eat(')') {
                return Ok(arguments);
            }
            return match self.peek() {
                Some(found) => self.fail(format!("expected `,` or `)` but found `{found}`")),
                None => self.fail("the call is not closed: a `)` is missing"),
            };
        }
    }

    /// Reads one literal.
    pub fn value(&mut self, depth: usize) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return self.fail(format!("values nest deeper than {MAX_DEPTH} levels"));
        }
        self.skip_blank();
        match self.peek() {
            None => self.fail("a value is missing"),
            Some('{') => self.object(depth),
            Some('[') => self.array(depth),
            Some(quote @ ('"' | '\'' | '`')) => self.string(quote).map(Value::String),
            Some(character)
                if character == '-'
                    || character == '+'
                    || character == '.'
                    || character.is_ascii_digit() =>
            {
                self.number()
            }
            Some(character) if is_identifier_start(character) => {
                let start = self.position;
                let word = self.identifier();
                if !matches!(word, "true" | "false" | "null" | "undefined") {
                    self.position = start;
                }
                match word {
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    "null" | "undefined" => Ok(Value::Null),
                    other => self.fail(format!(
                        "`{other}` is not a value: quote text (\"{other}\")"
                    )),
                }
            }
            Some(found) => self.fail(format!("`{found}` cannot start a value")),
        }
    }

    fn identifier(&mut self) -> &'a str {
        let start = self.position;
        while let Some(character) = self.peek() {
            if is_identifier_start(character) || character.is_ascii_digit() {
                self.position += character.len_utf8();
            } else {
                break;
            }
        }
        &self.text[start..self.position]
    }

    fn object(&mut self, depth: usize) -> Result<Value, Error> {
        self.bump();
        let mut members = Map::new();
        loop {
            if self.eat('}') {
                return Ok(Value::Object(members));
            }
            self.skip_blank();
            let key = match self.peek() {
                Some(quote @ ('"' | '\'' | '`')) => self.string(quote)?,
                Some(character) if is_identifier_start(character) || character.is_ascii_digit() => {
                    self.identifier().to_owned()
                }
                Some(found) => return self.fail(format!("`{found}` cannot start a key")),
                None => return self.fail("the object is not closed: a `}` is missing"),
            };
            if !self.eat(':') {
                return self.fail(format!("expected `:` after the key `{key}`"));
            }
            let value = self.value(depth + 1)?;
            members.insert(key, value);
            if self.eat(',') {
                continue;
            }
            if self.eat('}') {
                return Ok(Value::Object(members));
            }
            return self.fail("expected `,` or `}` in an object");
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, Error> {
        self.bump();
        let mut items = Vec::new();
        loop {
            if self.eat(']') {
                return Ok(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            if self.eat(',') {
                continue;
            }
            if self.eat(']') {
                return Ok(Value::Array(items));
            }
            return self.fail("expected `,` or `]` in an array");
        }
    }

    fn string(&mut self, quote: char) -> Result<String, Error> {
        self.bump();
        let mut text = String::new();
        loop {
            match self.bump() {
                None => {
                    return self.fail(format!("the string is not closed: a {quote} is missing"));
                }
                Some(character) if character == quote => return Ok(text),
                Some('\\') => self.escape(&mut text)?,
                Some(character) => text.push(character),
            }
        }
    }

    fn escape(&mut self, text: &mut String) -> Result<(), Error> {
        let Some(escaped) = self.bump() else {
            return self.fail("the string ends inside an escape");
        };
        match escaped {
            'n' => text.push('\n'),
            't' => text.push('\t'),
            'r' => text.push('\r'),
            'b' => text.push('\u{8}'),
            'f' => text.push('\u{c}'),
            'v' => text.push('\u{b}'),
            '0' => text.push('\0'),
            '\n' => {}
            'u' => {
                let code = self.unicode_escape()?;
                text.push(code);
            }
            other => text.push(other),
        }
        Ok(())
    }

    /// `\uXXXX` (with surrogate pairs) or `\u{X…}`.
    fn unicode_escape(&mut self) -> Result<char, Error> {
        if self.peek() == Some('{') {
            self.bump();
            let start = self.position;
            while self.peek().is_some_and(|character| character != '}') {
                self.bump();
            }
            let digits = &self.text[start..self.position];
            self.bump();
            return u32::from_str_radix(digits, 16)
                .ok()
                .and_then(char::from_u32)
                .map_or_else(
                    || self.fail(format!("`\\u{{{digits}}}` is not a character")),
                    Ok,
                );
        }
        let high = self.hex4()?;
        if (0xD800..0xDC00).contains(&high) && self.text[self.position..].starts_with("\\u") {
            self.position += 2;
            let low = self.hex4()?;
            let combined = 0x10000 + ((high - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF);
            return char::from_u32(combined)
                .map_or_else(|| self.fail("a broken surrogate pair"), Ok);
        }
        Ok(char::from_u32(high).unwrap_or('\u{FFFD}'))
    }

    fn hex4(&mut self) -> Result<u32, Error> {
        let digits = self
            .text
            .get(self.position..self.position + 4)
            .unwrap_or("");
        match u32::from_str_radix(digits, 16) {
            Ok(code) if digits.len() == 4 => {
                self.position += 4;
                Ok(code)
            }
            _ => self.fail("`\\u` needs four hexadecimal digits"),
        }
    }

    fn number(&mut self) -> Result<Value, Error> {
        let start = self.position;
        while self.peek().is_some_and(|character| {
            character.is_ascii_alphanumeric() || matches!(character, '-' | '+' | '.')
        }) {
            self.bump();
        }
        let raw = &self.text[start..self.position];
        let text = raw.strip_prefix('+').unwrap_or(raw);
        if let Ok(integer) = text.parse::<i64>() {
            return Ok(Value::Number(integer.into()));
        }
        match text.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(number) if text.chars().any(|character| character.is_ascii_digit()) => {
                Ok(Value::Number(number))
            }
            _ => self.fail(format!("`{raw}` is not a number")),
        }
    }
}

fn is_identifier_start(character: char) -> bool {
    character.is_alphabetic() || character == '_' || character == '$'
}

/// Decodes one regex capture group the way user functions expect: a JSON or JavaScript
/// literal when the whole text is one (`100`, `"张三"`, `{"a": 1}`), else the text itself.
pub fn decode_capture(text: &str) -> Value {
    let mut reader = Reader::new(text, 0);
    match reader.value(0) {
        Ok(value) => {
            reader.skip_blank();
            if reader.position() == text.len() {
                value
            } else {
                Value::String(text.to_owned())
            }
        }
        Err(_) => Value::String(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn arguments(text: &str) -> Result<Vec<Value>, Error> {
        let mut reader = Reader::new(text, 1);
        reader.arguments()
    }

    #[test]
    fn reads_json_and_javascript_literals() {
        assert_eq!(
            arguments(r#"("角色.名字", "张三")"#).unwrap(),
            vec![json!("角色.名字"), json!("张三")]
        );
        assert_eq!(
            arguments("('a', {b: 1, 'c': [1, 2,], \"d\": null,}, undefined, +5, -2.5, true)")
                .unwrap(),
            vec![
                json!("a"),
                json!({"b": 1, "c": [1, 2], "d": null}),
                Value::Null,
                json!(5),
                json!(-2.5),
                json!(true)
            ]
        );
    }

    #[test]
    fn strings_may_hold_parentheses_semicolons_and_escapes() {
        assert_eq!(
            arguments(
                r#"("log", "he said \"hi\"); then (left)\n", 'it\'s', "\u00e9\ud83d\ude00")"#
            )
            .unwrap(),
            vec![
                json!("log"),
                json!("he said \"hi\"); then (left)\n"),
                json!("it's"),
                json!("é😀")
            ]
        );
    }

    #[test]
    fn arguments_may_span_lines_with_comments() {
        assert_eq!(
            arguments("(\n  \"a\", // the path\n  {\n    \"b\": 1 /* one */\n  }\n)").unwrap(),
            vec![json!("a"), json!({"b": 1})]
        );
    }

    #[test]
    fn malformed_arguments_say_where_and_why() {
        let error = arguments(r#"("a", 1"#).unwrap_err();
        assert!(error.message.contains("`)` is missing"), "{error}");
        let error = arguments(r#"("a", 张三)"#).unwrap_err();
        assert!(error.message.contains("quote text"), "{error}");
        assert_eq!(error.at, 6);
        let deep = format!("({})", "[".repeat(500));
        assert!(
            arguments(&deep)
                .unwrap_err()
                .message
                .contains("nest deeper")
        );
    }

    #[test]
    fn captures_decode_to_values_or_stay_text() {
        assert_eq!(decode_capture("100"), json!(100));
        assert_eq!(decode_capture(r#""张三""#), json!("张三"));
        assert_eq!(decode_capture(r#"{"等级": 2}"#), json!({"等级": 2}));
        assert_eq!(decode_capture("角色.名字"), json!("角色.名字"));
        assert_eq!(decode_capture("12 apples"), json!("12 apples"));
    }
}
