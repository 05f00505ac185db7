//! Decoding a call's arguments into a tool's typed arguments, and the one wording of what went
//! wrong: the argument by name, the value given and what is expected in JSON's words ("a
//! non-negative integer", "a string", "an array"), never a Rust type (`usize`, `u32`, `struct
//! ReadVarArguments`).
//!
//! serde's errors name neither the argument nor JSON types, so the arguments object is read
//! through [`Recorded`], which notes the argument being decoded (moving its name, copying
//! nothing), and an error is reworded once it happened: a call that decodes pays nothing more.

use serde::de::{
    DeserializeOwned, DeserializeSeed, Deserializer, Error as _, MapAccess, Visitor,
    value::StrDeserializer,
};
use serde_json::{Map, Value};

use super::ToolError;

/// Decodes a tool's arguments, naming the tool, and the argument in error, so the model can fix
/// the call.
pub fn parse_arguments<Arguments: DeserializeOwned>(
    tool: &str,
    arguments: Value,
) -> Result<Arguments, ToolError> {
    let mut place = Place::default();
    Arguments::deserialize(Recorded {
        value: arguments,
        place: &mut place,
    })
    .map_err(|error| {
        ToolError::invalid(format!(
            "invalid arguments for {tool}: {}",
            explain(&error.to_string(), &place)
        ))
    })
}

/// Where decoding is: the argument last read and the JSON kind of its value, and whether its
/// value was being decoded (rather than its name, or the object as a whole).
#[derive(Default)]
struct Place {
    argument: Option<String>,
    kind: Kind,
    inside: bool,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Kind {
    #[default]
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    fn of(value: &Value) -> Self {
        match value {
            Value::Null => Self::Null,
            Value::Bool(_) => Self::Boolean,
            Value::Number(_) => Self::Number,
            Value::String(_) => Self::String,
            Value::Array(_) => Self::Array,
            Value::Object(_) => Self::Object,
        }
    }
}

/// The arguments object, read as `serde_json` reads a [`Value`], noting each argument in
/// `place` as it goes.
struct Recorded<'a> {
    value: Value,
    place: &'a mut Place,
}

impl Recorded<'_> {
    fn entries<'de, V: Visitor<'de>>(
        self,
        object: Map<String, Value>,
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        visitor.visit_map(Entries {
            remaining: object.into_iter(),
            value: None,
            place: self.place,
        })
    }
}

/// The methods that pass straight to the value.
macro_rules! forward {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.value.$method(visitor)
        }
    )*};
}

impl<'de> Deserializer<'de> for Recorded<'_> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Object(object) => Recorded {
                value: Value::Null,
                ..self
            }
            .entries(object, visitor),
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Object(object) => Recorded {
                value: Value::Null,
                ..self
            }
            .entries(object, visitor),
            other => other.deserialize_map(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Object(object) => Recorded {
                value: Value::Null,
                ..self
            }
            .entries(object, visitor),
            other => other.deserialize_struct(name, fields, visitor),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.value.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.value.deserialize_newtype_struct(name, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        length: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.value.deserialize_tuple(length, visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        length: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.value.deserialize_tuple_struct(name, length, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.value.deserialize_enum(name, variants, visitor)
    }

    forward! {
        deserialize_bool, deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64,
        deserialize_i128, deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64,
        deserialize_u128, deserialize_f32, deserialize_f64, deserialize_char, deserialize_str,
        deserialize_string, deserialize_bytes, deserialize_byte_buf, deserialize_option,
        deserialize_unit, deserialize_seq, deserialize_identifier, deserialize_ignored_any,
    }
}

/// The arguments, one by one, each noted in `place` before it is decoded.
struct Entries<'a> {
    remaining: serde_json::map::IntoIter,
    value: Option<Value>,
    place: &'a mut Place,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some((name, value)) = self.remaining.next() else {
            return Ok(None);
        };
        self.place.kind = Kind::of(&value);
        self.place.inside = false;
        self.value = Some(value);
        let name = self.place.argument.insert(name);
        seed.deserialize(StrDeserializer::<serde_json::Error>::new(name))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| serde_json::Error::custom("a value was read before its name"))?;
        self.place.inside = true;
        let decoded = seed.deserialize(value)?;
        self.place.inside = false;
        Ok(decoded)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.remaining.len())
    }
}

/// serde's message for a failed decode, reworded: the argument it happened in, the value found
/// and what was expected, in JSON's words. Unknown and missing arguments keep serde's words,
/// which name them already.
fn explain(message: &str, place: &Place) -> String {
    let Some(argument) = place.argument.as_deref().filter(|_| place.inside) else {
        return message.to_owned();
    };
    let Some((found, expected)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.rsplit_once(", expected "))
        .map(|(found, expected)| (Found::parse(found), json_words(expected)))
        .or_else(|| unknown_variant(message))
    else {
        return format!("in `{argument}`: {message}");
    };
    if found.kind == Some(place.kind) {
        format!("`{argument}`: expected {expected}, not {}", found.text)
    } else {
        format!("in `{argument}`: expected {expected}, not {}", found.text)
    }
}

/// serde's ``unknown variant `yes`, expected one of `on`, `off` ``: the value is a string.
fn unknown_variant(message: &str) -> Option<(Found, String)> {
    let rest = message.strip_prefix("unknown variant `")?;
    let (variant, expected) = rest.split_once("`, expected ")?;
    Some((
        Found {
            text: quoted(variant),
            kind: Some(Kind::String),
        },
        expected.to_owned(),
    ))
}

/// The value serde found, as JSON, with its kind when serde says it.
struct Found {
    text: String,
    kind: Option<Kind>,
}

impl Found {
    /// From serde's words for it: ``integer `5` ``, ``floating point `1.5` ``,
    /// ``boolean `true` ``, `string "abc"`, `null`, `sequence`, `map`.
    fn parse(found: &str) -> Self {
        let between_backticks = |prefix: &str| {
            found
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('`'))
                .and_then(|rest| rest.strip_suffix('`'))
                .map(str::to_owned)
        };
        let (text, kind) = if let Some(number) =
            between_backticks("integer ").or_else(|| between_backticks("floating point "))
        {
            (number, Some(Kind::Number))
        } else if let Some(boolean) = between_backticks("boolean ") {
            (boolean, Some(Kind::Boolean))
        } else if let Some(text) = found.strip_prefix("string ") {
            (shortened(text), Some(Kind::String))
        } else {
            match found {
                "null" | "unit value" => ("null".to_owned(), Some(Kind::Null)),
                "sequence" => ("an array".to_owned(), Some(Kind::Array)),
                "map" => ("an object".to_owned(), Some(Kind::Object)),
                other => (other.to_owned(), None),
            }
        };
        Self { text, kind }
    }
}

/// A string as JSON writes it.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
}

/// A quoted string value, cut to its first 40 characters when it is long.
fn shortened(quoted: &str) -> String {
    const SHOWN: usize = 40;
    if quoted.chars().count() <= SHOWN + 2 {
        return quoted.to_owned();
    }
    let start: String = quoted.chars().take(SHOWN + 1).collect();
    format!("{start}…\" (a long string)")
}

/// What serde expected, in JSON's words.
fn json_words(expected: &str) -> String {
    let words = match expected {
        "usize" | "u64" | "u128" => "a non-negative integer",
        "u8" => "an integer from 0 to 255",
        "u16" => "an integer from 0 to 65535",
        "u32" => "an integer from 0 to 4294967295",
        "isize" | "i64" | "i128" => "an integer",
        "i8" => "an integer from -128 to 127",
        "i16" => "an integer from -32768 to 32767",
        "i32" => "an integer from -2147483648 to 2147483647",
        "f32" | "f64" => "a number",
        "a string" | "a borrowed string" | "string or map" => "a string",
        "a character" | "a char" => "a one-character string",
        "a boolean" => "true or false",
        "a sequence" => "an array",
        "a map" => "an object",
        "unit" => "null",
        "any valid JSON value" => "any JSON value",
        other if other.starts_with("struct ") => "an object",
        other if other.starts_with("tuple") => "an array",
        other => other,
    };
    words.to_owned()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde::Deserialize;
    use serde_json::json;

    use super::parse_arguments;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Arguments {
        name: String,
        start: Option<usize>,
        small: Option<u8>,
        tags: Option<Vec<String>>,
        flag: Option<bool>,
        mode: Option<Mode>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        On,
        Off,
    }

    fn error(arguments: serde_json::Value) -> String {
        parse_arguments::<Arguments>("Tool", arguments)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn arguments_decode_as_serde_json_decodes_them() {
        let decoded: Arguments = parse_arguments(
            "Tool",
            json!({"name": "a", "start": 3, "tags": ["x"], "mode": "on"}),
        )
        .unwrap();
        assert_eq!(
            decoded,
            Arguments {
                name: "a".to_owned(),
                start: Some(3),
                small: None,
                tags: Some(vec!["x".to_owned()]),
                flag: None,
                mode: Some(Mode::On),
            }
        );
    }

    #[test]
    fn errors_name_the_argument_the_value_and_json_types() {
        let cases = [
            (
                json!({"name": 42}),
                "invalid arguments for Tool: `name`: expected a string, not 42",
            ),
            (
                json!({"name": "a", "start": -1}),
                "invalid arguments for Tool: `start`: expected a non-negative integer, not -1",
            ),
            (
                json!({"name": "a", "start": 1.5}),
                "invalid arguments for Tool: `start`: expected a non-negative integer, not 1.5",
            ),
            (
                json!({"name": "a", "small": 300}),
                "invalid arguments for Tool: `small`: expected an integer from 0 to 255, not 300",
            ),
            (
                json!({"name": "a", "tags": "x"}),
                "invalid arguments for Tool: `tags`: expected an array, not \"x\"",
            ),
            (
                json!({"name": "a", "tags": ["x", 5]}),
                "invalid arguments for Tool: in `tags`: expected a string, not 5",
            ),
            (
                json!({"name": "a", "flag": "yes"}),
                "invalid arguments for Tool: `flag`: expected true or false, not \"yes\"",
            ),
            (
                json!({"name": "a", "mode": "maybe"}),
                "invalid arguments for Tool: `mode`: expected `on` or `off`, not \"maybe\"",
            ),
            (
                json!({"name": {"first": "a"}}),
                "invalid arguments for Tool: `name`: expected a string, not an object",
            ),
        ];
        let answers: Vec<String> = cases
            .iter()
            .map(|(arguments, _)| error(arguments.clone()))
            .collect();
        let expected: Vec<&str> = cases.iter().map(|(_, expected)| *expected).collect();
        assert_eq!(answers, expected);
        assert_eq!(
            error(json!({"name": "a", "x": 1})),
            "invalid arguments for Tool: unknown field `x`, expected one of `name`, `start`, `small`, `tags`, `flag`, `mode`"
        );
        assert_eq!(
            error(json!({"start": 1})),
            "invalid arguments for Tool: missing field `name`"
        );
        assert_eq!(
            error(json!({"name": "x".repeat(100), "start": "y".repeat(100)})),
            format!(
                "invalid arguments for Tool: `start`: expected a non-negative integer, not \"{}…\" (a long string)",
                "y".repeat(40)
            )
        );
    }
}
