//! Compact JSON text of any `Serialize` value, byte for byte what `serde_json::to_vec` writes,
//! with strings scanned eight bytes at a time for what needs escaping. `serde_json` looks at each
//! byte of a string on its own (about ten instructions a byte), and an answer is mostly one long
//! string: the text of a tool's result. Its `Formatter` cannot change that loop, so this is a
//! serializer of its own; numbers and byte arrays are still written by `serde_json`'s
//! `CompactFormatter`, and the unit tests hold its text to `serde_json`'s for every kind of value.

use std::fmt::Display;
use std::num::FpCategory;

use serde::ser::{self, Error as _, Serialize};
use serde_json::Error;
use serde_json::ser::{CompactFormatter, Formatter};

/// `value` as compact JSON text, as `serde_json::to_vec` writes it.
pub fn to_vec(value: &(impl Serialize + ?Sized)) -> Result<Vec<u8>, Error> {
    let mut writer = Compact(Vec::with_capacity(128));
    value.serialize(&mut writer)?;
    Ok(writer.0)
}

/// The serializer: the text written so far.
struct Compact(Vec<u8>);

/// The name `serde_json` gives the struct a `RawValue` serializes as: its one field is JSON text
/// to write as it is.
const RAW_VALUE: &str = "$serde_json::private::RawValue";

const ONES: u64 = u64::from_ne_bytes([1; 8]);
const HIGH_BITS: u64 = u64::from_ne_bytes([0x80; 8]);

/// Whether any of the eight bytes of `word` is below 0x20, a quote or a backslash. (Each test
/// is exact for the word as a whole; which byte set a flag is not, and is not needed.)
const fn needs_escape(word: u64) -> bool {
    const fn has_zero(word: u64) -> u64 {
        word.wrapping_sub(ONES) & !word & HIGH_BITS
    }
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH_BITS;
    control | has_zero(word ^ (ONES * b'"' as u64)) | has_zero(word ^ (ONES * b'\\' as u64)) != 0
}

/// What follows the backslash of each byte's escape (`u` for `\u00XX`), 0 for none.
static ESCAPE: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0A] = b'n';
    table[0x0C] = b'f';
    table[0x0D] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// `text` as a JSON string: quoted, with `"`, `\` and control characters escaped. Eight bytes
/// are tested at once; a word that holds something to escape is gone through byte by byte.
fn write_string(output: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    output.reserve(bytes.len() + 2);
    output.push(b'"');
    let mut start = 0;
    let mut index = 0;
    while let Some(chunk) = bytes.get(index..index + 8) {
        let word = u64::from_ne_bytes(chunk.try_into().unwrap_or([0; 8]));
        if needs_escape(word) {
            for _ in 0..8 {
                start = escape_at(output, bytes, start, index);
                index += 1;
            }
        } else {
            index += 8;
        }
    }
    while index < bytes.len() {
        start = escape_at(output, bytes, start, index);
        index += 1;
    }
    output.extend_from_slice(&bytes[start..]);
    output.push(b'"');
}

/// Writes the escape of `bytes[index]` if it needs one, after the plain run from `start`;
/// where the next plain run starts.
#[inline]
fn escape_at(output: &mut Vec<u8>, bytes: &[u8], start: usize, index: usize) -> usize {
    let byte = bytes[index];
    let escape = ESCAPE[usize::from(byte)];
    if escape == 0 {
        return start;
    }
    output.extend_from_slice(&bytes[start..index]);
    if escape == b'u' {
        const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";
        output.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX_DIGITS[usize::from(byte >> 4)],
            HEX_DIGITS[usize::from(byte & 0xF)],
        ]);
    } else {
        output.extend_from_slice(&[b'\\', escape]);
    }
    index + 1
}

/// Writes through `serde_json`'s compact formatter (into a `Vec`, which cannot fail).
fn formatted(
    output: &mut Vec<u8>,
    write: impl FnOnce(&mut CompactFormatter, &mut Vec<u8>) -> std::io::Result<()>,
) -> Result<(), Error> {
    write(&mut CompactFormatter, output).map_err(Error::io)
}

/// An array, an object, or an object in an object (an enum variant's), being written.
struct Compound<'a> {
    writer: &'a mut Compact,
    first: bool,
    /// What closes it: `]`, `}`, `]}` or `}}`.
    close: &'static [u8],
    /// A `RawValue`'s struct: its field is written as it is.
    raw: bool,
}

impl Compact {
    fn open(&mut self, opening: &[u8], close: &'static [u8]) -> Compound<'_> {
        self.0.extend_from_slice(opening);
        Compound {
            writer: self,
            first: true,
            close,
            raw: false,
        }
    }

    /// `{"variant":` then the value's opening.
    fn open_variant(
        &mut self,
        variant: &str,
        opening: &[u8],
        close: &'static [u8],
    ) -> Compound<'_> {
        self.0.push(b'{');
        write_string(&mut self.0, variant);
        self.0.push(b':');
        self.open(opening, close)
    }
}

impl Compound<'_> {
    fn separate(&mut self) {
        if !self.first {
            self.writer.0.push(b',');
        }
        self.first = false;
    }

    fn element(&mut self, value: &(impl Serialize + ?Sized)) -> Result<(), Error> {
        self.separate();
        value.serialize(&mut *self.writer)
    }

    fn field(&mut self, key: &str, value: &(impl Serialize + ?Sized)) -> Result<(), Error> {
        if self.raw {
            return match serde_json::to_value(value)? {
                serde_json::Value::String(text) => {
                    self.writer.0.extend_from_slice(text.as_bytes());
                    Ok(())
                }
                _ => Err(Error::custom("a raw JSON value must be text")),
            };
        }
        self.separate();
        write_string(&mut self.writer.0, key);
        self.writer.0.push(b':');
        value.serialize(&mut *self.writer)
    }

    fn finish(self) {
        self.writer.0.extend_from_slice(self.close);
    }
}

macro_rules! integers {
    ($($method:ident($type:ty) => $write:ident;)*) => {
        $(
            fn $method(self, value: $type) -> Result<(), Error> {
                formatted(&mut self.0, |formatter, output| formatter.$write(output, value))
            }
        )*
    };
}

impl<'a> ser::Serializer for &'a mut Compact {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    integers! {
        serialize_i8(i8) => write_i8;
        serialize_i16(i16) => write_i16;
        serialize_i32(i32) => write_i32;
        serialize_i64(i64) => write_i64;
        serialize_i128(i128) => write_i128;
        serialize_u8(u8) => write_u8;
        serialize_u16(u16) => write_u16;
        serialize_u32(u32) => write_u32;
        serialize_u64(u64) => write_u64;
        serialize_u128(u128) => write_u128;
    }

    fn serialize_bool(self, value: bool) -> Result<(), Error> {
        self.0
            .extend_from_slice(if value { b"true" } else { b"false" });
        Ok(())
    }

    fn serialize_f32(self, value: f32) -> Result<(), Error> {
        match value.classify() {
            FpCategory::Nan | FpCategory::Infinite => self.serialize_unit(),
            _ => formatted(&mut self.0, |formatter, output| {
                formatter.write_f32(output, value)
            }),
        }
    }

    fn serialize_f64(self, value: f64) -> Result<(), Error> {
        match value.classify() {
            FpCategory::Nan | FpCategory::Infinite => self.serialize_unit(),
            _ => formatted(&mut self.0, |formatter, output| {
                formatter.write_f64(output, value)
            }),
        }
    }

    fn serialize_char(self, value: char) -> Result<(), Error> {
        write_string(&mut self.0, value.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, value: &str) -> Result<(), Error> {
        write_string(&mut self.0, value);
        Ok(())
    }

    fn serialize_bytes(self, value: &[u8]) -> Result<(), Error> {
        formatted(&mut self.0, |formatter, output| {
            formatter.write_byte_array(output, value)
        })
    }

    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Error> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let variant = self.open_variant(variant, b"", b"}");
        value.serialize(&mut *variant.writer)?;
        variant.finish();
        Ok(())
    }

    fn serialize_seq(self, _length: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.open(b"[", b"]"))
    }

    fn serialize_tuple(self, _length: usize) -> Result<Compound<'a>, Error> {
        Ok(self.open(b"[", b"]"))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _length: usize,
    ) -> Result<Compound<'a>, Error> {
        Ok(self.open(b"[", b"]"))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _length: usize,
    ) -> Result<Compound<'a>, Error> {
        Ok(self.open_variant(variant, b"[", b"]}"))
    }

    fn serialize_map(self, _length: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.open(b"{", b"}"))
    }

    fn serialize_struct(self, name: &'static str, _length: usize) -> Result<Compound<'a>, Error> {
        if name == RAW_VALUE {
            let mut raw = self.open(b"", b"");
            raw.raw = true;
            return Ok(raw);
        }
        Ok(self.open(b"{", b"}"))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _length: usize,
    ) -> Result<Compound<'a>, Error> {
        Ok(self.open_variant(variant, b"{", b"}}"))
    }

    fn collect_str<T: Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        self.serialize_str(&value.to_string())
    }
}

macro_rules! sequences {
    ($($trait:ident :: $method:ident;)*) => {
        $(
            impl ser::$trait for Compound<'_> {
                type Ok = ();
                type Error = Error;

                fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                    self.element(value)
                }

                fn end(self) -> Result<(), Error> {
                    self.finish();
                    Ok(())
                }
            }
        )*
    };
}

sequences! {
    SerializeSeq::serialize_element;
    SerializeTuple::serialize_element;
    SerializeTupleStruct::serialize_field;
    SerializeTupleVariant::serialize_field;
}

macro_rules! structs {
    ($($trait:ident;)*) => {
        $(
            impl ser::$trait for Compound<'_> {
                type Ok = ();
                type Error = Error;

                fn serialize_field<T: Serialize + ?Sized>(
                    &mut self,
                    key: &'static str,
                    value: &T,
                ) -> Result<(), Error> {
                    self.field(key, value)
                }

                fn end(self) -> Result<(), Error> {
                    self.finish();
                    Ok(())
                }
            }
        )*
    };
}

structs! {
    SerializeStruct;
    SerializeStructVariant;
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.separate();
        key.serialize(MapKey(&mut self.writer.0))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.writer.0.push(b':');
        value.serialize(&mut *self.writer)
    }

    fn end(self) -> Result<(), Error> {
        self.finish();
        Ok(())
    }
}

/// A map's key: JSON keys are strings, so numbers and booleans are quoted, as `serde_json` does.
struct MapKey<'a>(&'a mut Vec<u8>);

fn key_must_be_a_string() -> Error {
    Error::custom("key must be a string")
}

macro_rules! quoted {
    ($($method:ident($type:ty) => $write:ident;)*) => {
        $(
            fn $method(self, value: $type) -> Result<(), Error> {
                self.0.push(b'"');
                formatted(self.0, |formatter, output| formatter.$write(output, value))?;
                self.0.push(b'"');
                Ok(())
            }
        )*
    };
}

impl ser::Serializer for MapKey<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    quoted! {
        serialize_i8(i8) => write_i8;
        serialize_i16(i16) => write_i16;
        serialize_i32(i32) => write_i32;
        serialize_i64(i64) => write_i64;
        serialize_i128(i128) => write_i128;
        serialize_u8(u8) => write_u8;
        serialize_u16(u16) => write_u16;
        serialize_u32(u32) => write_u32;
        serialize_u64(u64) => write_u64;
        serialize_u128(u128) => write_u128;
    }

    fn serialize_bool(self, value: bool) -> Result<(), Error> {
        self.0
            .extend_from_slice(if value { b"\"true\"" } else { b"\"false\"" });
        Ok(())
    }

    fn serialize_f32(self, value: f32) -> Result<(), Error> {
        if !value.is_finite() {
            return Err(Error::custom("float key must be finite"));
        }
        self.0.push(b'"');
        formatted(self.0, |formatter, output| {
            formatter.write_f32(output, value)
        })?;
        self.0.push(b'"');
        Ok(())
    }

    fn serialize_f64(self, value: f64) -> Result<(), Error> {
        if !value.is_finite() {
            return Err(Error::custom("float key must be finite"));
        }
        self.0.push(b'"');
        formatted(self.0, |formatter, output| {
            formatter.write_f64(output, value)
        })?;
        self.0.push(b'"');
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result<(), Error> {
        write_string(self.0, value.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, value: &str) -> Result<(), Error> {
        write_string(self.0, value);
        Ok(())
    }

    fn serialize_bytes(self, _value: &[u8]) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_none(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_seq(self, _length: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple(self, _length: usize) -> Result<Self::SerializeTuple, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _length: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _length: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_map(self, _length: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _length: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _length: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(key_must_be_a_string())
    }

    fn collect_str<T: Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        self.serialize_str(&value.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;
    use serde_json::json;
    use serde_json::value::RawValue;

    /// Both serializers' text of `value`, for comparing.
    fn both(value: &(impl Serialize + ?Sized)) -> (String, String) {
        let ours = super::to_vec(value).expect("ours serializes");
        let theirs = serde_json::to_vec(value).expect("serde_json serializes");
        (
            String::from_utf8(ours).expect("ours is UTF-8"),
            String::from_utf8(theirs).expect("theirs is UTF-8"),
        )
    }

    fn same(value: &(impl Serialize + ?Sized)) {
        let (ours, theirs) = both(value);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn every_character_class_at_every_offset_is_written_as_serde_json_writes_it() {
        // Each ASCII byte, a two-, three- and four-byte character, at each position of strings
        // of up to 40 bytes around runs of plain text: every way a byte can fall in a word.
        let mut specials: Vec<String> = (0u8..0x80)
            .map(|byte| char::from(byte).to_string())
            .collect();
        specials.extend(["é", "€", "𝄞", "\u{7f}", "\u{2028}"].map(str::to_owned));
        for special in &specials {
            for before in 0..20 {
                for after in [0, 1, 7, 8, 9, 20] {
                    let text = format!("{}{special}{}", "a".repeat(before), "b".repeat(after));
                    same(&text);
                }
            }
        }
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..2_000 {
            let text: String = (0..(seed % 97))
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    specials[usize::try_from(seed).expect("64-bit") % specials.len()].clone()
                })
                .collect();
            same(&text);
        }
    }

    #[derive(Serialize)]
    enum Shapes {
        Unit,
        Newtype(u8),
        Tuple(i32, String),
        Struct { a: f64, b: Option<bool> },
    }

    struct Bytes(&'static [u8]);

    impl Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_bytes(self.0)
        }
    }

    /// Maps with keys that are no strings in Rust.
    type Keys<'a> = (
        BTreeMap<i32, char>,
        BTreeMap<bool, u8>,
        BTreeMap<u64, Option<&'a str>>,
    );

    #[derive(Serialize)]
    struct Everything<'a> {
        shapes: Vec<Shapes>,
        numbers: (i8, i64, u64, i128, u128, f32, f64, f64, f64),
        keys: Keys<'a>,
        bytes: Bytes,
        raw: &'a RawValue,
        value: serde_json::Value,
        empty: (Vec<u8>, BTreeMap<String, u8>, ()),
    }

    #[test]
    fn every_kind_of_value_is_written_as_serde_json_writes_it() {
        let raw = RawValue::from_string(r#"{ "id" : 1.50 }"#.to_owned()).expect("raw JSON");
        same(&Everything {
            shapes: vec![
                Shapes::Unit,
                Shapes::Newtype(7),
                Shapes::Tuple(-3, "t\"".to_owned()),
                Shapes::Struct { a: 0.1, b: None },
            ],
            numbers: (
                -8,
                i64::MIN,
                u64::MAX,
                i128::MIN,
                u128::MAX,
                1.1,
                f64::NAN,
                f64::INFINITY,
                1e300,
            ),
            keys: (
                BTreeMap::from([(-1, 'x'), (2, '\n')]),
                BTreeMap::from([(true, 1), (false, 0)]),
                BTreeMap::from([(0, Some("\u{1}")), (9, None)]),
            ),
            bytes: Bytes(&[0, 1, 255]),
            raw: &raw,
            value: json!({"text": "line\r\nnext\ttab \\ \"quoted\"", "list": [1, -2.5, null, true], "nested": {"": {}}}),
            empty: (Vec::new(), BTreeMap::new(), ()),
        });
    }

    #[test]
    fn a_tool_answer_is_written_as_serde_json_writes_it() {
        let text = "a value of 1 KB\n".repeat(64);
        let result =
            rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]);
        same(&result);
    }

    #[test]
    fn a_key_that_is_no_string_is_refused() {
        let map = BTreeMap::from([((1, 2), 3)]);
        assert!(super::to_vec(&map).is_err());
        assert!(serde_json::to_vec(&map).is_err());
    }
}
