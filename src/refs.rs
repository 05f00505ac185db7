//! `$VAR_REF` references: how tool arguments name stored variables, and how
//! those names are replaced by the variables' values before a tool runs.
//!
//! Every string inside a tool's JSON arguments is scanned (object values and
//! array elements at any depth; object keys, numbers, booleans and nulls are
//! left alone). Each reference found is replaced by text taken from a
//! variable:
//!
//! | Written                            | Replaced by                                               |
//! |------------------------------------|-----------------------------------------------------------|
//! | `$VAR_REF{{name}}`                 | the whole value of variable `name`                        |
//! | `$VAR_REF{{name:start:length}}`    | `length` characters of the value, from character `start` |
//! | `$$VAR_REF{{name}}`                | the literal text `$VAR_REF{{name}}` (an escape)           |
//!
//! # Slices
//!
//! `start` and `length` count Unicode characters (not bytes), from 0, and are
//! written as plain decimal digits. A slice never splits a character. Like
//! JavaScript's `substr`, a slice reaching past the end of the value stops at
//! the end, so it may be shorter than `length` or empty. Only text variables
//! can be sliced: a variable holding JSON (an object, array, number…) can be
//! referenced whole, which inserts its JSON text, but not sliced.
//!
//! # Spelling
//!
//! Whitespace around the name and numbers inside the braces is ignored
//! (`$VAR_REF{{ name }}` works). Anything else is a malformed reference and
//! fails the call: a missing closing `}}`, an empty name, a `{` or `}` before
//! the closing `}}`, or a `:` part that is not exactly `name:start:length` with
//! two non-negative whole numbers.
//!
//! # Escape
//!
//! `$$VAR_REF{{` stands for the literal text `$VAR_REF{{`: the first `$` is
//! dropped and everything from there up to and including the next `}}` (or to
//! the end of the text when there is none) is copied unchanged, so
//! `$$VAR_REF{{x}}` becomes `$VAR_REF{{x}}` and is not looked up. A `$$` that is
//! not followed by `VAR_REF{{` is ordinary text and stays `$$`. Because of this
//! rule a literal `$` cannot directly precede a reference.
//!
//! # Recursion
//!
//! Substituted text is itself resolved, so a variable may hold references to
//! other variables. A slice is cut from the variable's stored value first and
//! the cut text is then resolved. The variables currently being expanded form
//! a chain; a reference to a variable already in the chain (`a` → `a`, or
//! `a` → `b` → `a`) is a circular reference and fails, and so does a chain
//! deeper than [`MAX_DEPTH`] variables. Only the chain counts: the same
//! variable may appear any number of times side by side, in one string or in
//! different strings.
//!
//! Resolution is pure: values come from a [`Lookup`], called once per
//! reference expanded, and the JSON tree is walked with an explicit stack, so
//! arbitrarily deep arguments cannot overflow the call stack.

pub mod dagger;

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::json::strings;
use crate::text::{shorten, slice_chars};
use crate::vars::ValueKind;

/// The text that opens a reference.
const OPENING: &str = "$VAR_REF{{";

/// The text that closes a reference.
const CLOSING: &str = "}}";

/// How many variables may be expanded one inside another: the longest chain
/// of variables, outermost to innermost, that resolves.
pub const MAX_DEPTH: usize = 64;

/// Most bytes that references may insert into one call's arguments (a plan's steps share
/// one budget). A handful of variables that each reference the next one twice would otherwise
/// expand to gigabytes.
pub const MAX_RESOLVED_BYTES: usize = 64 << 20;

/// What one expansion costs besides the bytes it inserts: an empty value is not free, so a
/// fan-out of empty variables stops after `MAX_RESOLVED_BYTES / EXPANSION_COST` (65,536)
/// expansions, a fraction of a second, instead of running for billions.
pub const EXPANSION_COST: usize = 1024;

/// What references may still insert: one budget per call, shared by every step of a plan.
#[derive(Debug)]
pub struct Budget {
    remaining: std::sync::Mutex<usize>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            remaining: std::sync::Mutex::new(MAX_RESOLVED_BYTES),
        }
    }
}

impl Budget {
    /// Runs `spend` with the remaining budget (resolutions sharing a budget take turns).
    fn spend<T>(&self, spend: impl FnOnce(&mut usize) -> T) -> T {
        let mut remaining = self
            .remaining
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        spend(&mut remaining)
    }
}

/// Longest reference text, in characters, quoted whole in an error.
const QUOTE_LIMIT: usize = 80;

/// Why a reference could not be resolved. Each error quotes the reference as
/// it was written and says how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The referenced variable does not exist.
    #[error(
        "{reference}: variable `{name}` not found; list variables with ListVars or create it with WriteVar"
    )]
    NotFound { reference: String, name: String },
    /// Expanding the reference leads back to a variable already being
    /// expanded, or nests deeper than [`MAX_DEPTH`] variables. `chain` lists
    /// the variables from the outermost to the one that was refused.
    #[error("{reference}: {}", describe_chain(chain))]
    Circular {
        reference: String,
        chain: Vec<String>,
    },
    /// A slice was asked of a variable that holds JSON rather than text.
    #[error(
        "{reference}: cannot slice non-string variable `{name}` (it holds JSON); reference it whole or read it with ReadVar start/length"
    )]
    SliceNonString { reference: String, name: String },
    /// The reference is not spelled `$VAR_REF{{name}}` or
    /// `$VAR_REF{{name:start:length}}`.
    #[error(
        "malformed reference {reference}: {reason}; write $VAR_REF{{{{name}}}} or $VAR_REF{{{{name:start:length}}}}, or $$VAR_REF{{{{ for the literal text"
    )]
    Malformed { reference: String, reason: String },
    /// Expanding the references would produce more than [`MAX_RESOLVED_BYTES`] (every
    /// expansion counting at least [`EXPANSION_COST`]).
    #[error(
        "{reference}: the references in these arguments expand more than {limit} bytes (every expansion counts at least {EXPANSION_COST} bytes, and a plan's steps share one budget); pass fewer or smaller slices, or let the tool read the variable itself"
    )]
    TooLarge { reference: String, limit: usize },
}

/// Explains a refused chain: a cycle when the last name already appears
/// earlier, otherwise a chain that grew too deep.
fn describe_chain(chain: &[String]) -> String {
    let path = chain.join(" → ");
    match chain.split_last() {
        Some((last, earlier)) if earlier.contains(last) => format!(
            "circular variable reference detected ({path}); rewrite one of these variables with WriteVar so the chain ends"
        ),
        _ => format!(
            "reference chain deeper than {MAX_DEPTH} ({path}); make fewer variables reference one another"
        ),
    }
}

/// Where references are looked up.
pub trait Lookup {
    /// Returns the value and its kind, or `None` when no such variable exists.
    fn lookup(&mut self, name: &str) -> Option<(Arc<str>, ValueKind)>;
}

impl<F> Lookup for F
where
    F: FnMut(&str) -> Option<(Arc<str>, ValueKind)>,
{
    fn lookup(&mut self, name: &str) -> Option<(Arc<str>, ValueKind)> {
        self(name)
    }
}

/// A parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The variable's name, without surrounding whitespace.
    pub name: String,
    /// The part of the value wanted, or `None` for the whole value.
    pub slice: Option<Slice>,
}

/// A character range of a value: `length` characters from character `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    pub start: usize,
    pub length: usize,
}

/// Pieces of a text, in order: literal runs and references. Escapes are
/// already turned into literal text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment<'a> {
    /// Text copied unchanged.
    Literal(Cow<'a, str>),
    /// A variable reference.
    Variable {
        reference: Reference,
        /// The exact text written, `$VAR_REF{{…}}`.
        source: &'a str,
    },
}

/// Splits a text into literal runs and references.
pub fn parse(text: &str) -> Result<Vec<Segment<'_>>, Error> {
    let mut segments = Vec::new();
    let mut position = 0;
    while let Some(offset) = text[position..].find(OPENING) {
        let start = position + offset;
        let before = &text[position..start];
        if let Some(kept) = before.strip_suffix('$') {
            push_literal(&mut segments, kept);
            let end = escape_end(text, start);
            push_literal(&mut segments, &text[start..end]);
            position = end;
        } else {
            push_literal(&mut segments, before);
            let (segment, end) = parse_reference(text, start)?;
            segments.push(segment);
            position = end;
        }
    }
    push_literal(&mut segments, &text[position..]);
    Ok(segments)
}

/// Appends literal text, merging it with a literal run just before it.
fn push_literal<'a>(segments: &mut Vec<Segment<'a>>, piece: &'a str) {
    if piece.is_empty() {
        return;
    }
    if let Some(Segment::Literal(previous)) = segments.last_mut() {
        previous.to_mut().push_str(piece);
    } else {
        segments.push(Segment::Literal(Cow::Borrowed(piece)));
    }
}

/// Where the literal text of an escaped reference starting at `start` ends:
/// just after its `}}`, or at the end of the text.
fn escape_end(text: &str, start: usize) -> usize {
    let body_start = start + OPENING.len();
    text[body_start..]
        .find(CLOSING)
        .map_or(text.len(), |offset| body_start + offset + CLOSING.len())
}

/// Parses the reference opening at `start`; returns it and where it ends.
fn parse_reference(text: &str, start: usize) -> Result<(Segment<'_>, usize), Error> {
    let body_start = start + OPENING.len();
    let Some(offset) = text[body_start..].find(CLOSING) else {
        return Err(malformed(
            &text[start..],
            "the closing `}}` is missing".to_owned(),
        ));
    };
    let end = body_start + offset + CLOSING.len();
    let source = &text[start..end];
    let reference = parse_body(&text[body_start..body_start + offset])
        .map_err(|reason| malformed(source, reason))?;
    Ok((Segment::Variable { reference, source }, end))
}

/// Parses what is between the braces: `name` or `name:start:length`.
fn parse_body(body: &str) -> Result<Reference, String> {
    if body.contains(['{', '}']) {
        return Err("a variable name cannot contain `{` or `}`".to_owned());
    }
    let mut parts = body.split(':').map(str::trim);
    let name = parts.next().unwrap_or_default();
    if name.is_empty() {
        return Err("the variable name is empty".to_owned());
    }
    let slice = match (parts.next(), parts.next(), parts.next()) {
        (None, _, _) => None,
        (Some(start), Some(length), None) => Some(Slice {
            start: parse_number("start", start)?,
            length: parse_number("length", length)?,
        }),
        _ => return Err("a slice must be exactly `name:start:length`".to_owned()),
    };
    Ok(Reference {
        name: name.to_owned(),
        slice,
    })
}

/// Parses a slice bound written as plain decimal digits.
fn parse_number(label: &str, digits: &str) -> Result<usize, String> {
    if digits.is_empty() {
        return Err(format!("the slice {label} is missing"));
    }
    if !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!(
            "the slice {label} `{digits}` is not a non-negative whole number"
        ));
    }
    digits
        .parse()
        .map_err(|_| format!("the slice {label} `{digits}` is too large"))
}

/// Builds a malformed-reference error, shortening very long reference text.
fn malformed(source: &str, reason: String) -> Error {
    Error::Malformed {
        reference: shorten(source, QUOTE_LIMIT),
        reason,
    }
}

/// True when the text holds a reference or an escape, i.e. resolution could
/// change it.
pub fn contains_reference(text: &str) -> bool {
    text.contains(OPENING)
}

/// Resolves one string. Returns [`Cow::Borrowed`] when nothing changes.
pub fn resolve_str<'a>(text: &'a str, lookup: &mut dyn Lookup) -> Result<Cow<'a, str>, Error> {
    if !contains_reference(text) {
        return Ok(Cow::Borrowed(text));
    }
    let mut budget = MAX_RESOLVED_BYTES;
    resolve_within(text, lookup, &mut budget)
}

fn resolve_within<'a>(
    text: &'a str,
    lookup: &mut dyn Lookup,
    budget: &mut usize,
) -> Result<Cow<'a, str>, Error> {
    if !contains_reference(text) {
        return Ok(Cow::Borrowed(text));
    }
    let segments = parse(text)?;
    let mut resolved = String::with_capacity(text.len());
    let mut expansion = Expansion {
        lookup,
        chain: Vec::new(),
        budget,
    };
    expansion.segments(&mut resolved, &segments)?;
    Ok(Cow::Owned(resolved))
}

/// Resolves every string in a JSON tree in place: object values and array
/// elements at any depth. Keys and non-string values are left alone. Fails on
/// the first error, in document order.
pub fn resolve_value(value: &mut Value, lookup: &mut dyn Lookup) -> Result<(), Error> {
    resolve_value_within(value, lookup, &Budget::default())
}

/// [`resolve_value`], paying from a budget that other resolutions may share (a plan's steps).
pub fn resolve_value_within(
    value: &mut Value,
    lookup: &mut dyn Lookup,
    budget: &Budget,
) -> Result<(), Error> {
    budget.spend(|remaining| resolve_tree(value, lookup, remaining))
}

fn resolve_tree(
    value: &mut Value,
    lookup: &mut dyn Lookup,
    budget: &mut usize,
) -> Result<(), Error> {
    strings::try_replace(value, |text| {
        Ok(match resolve_within(text, lookup, budget)? {
            Cow::Owned(resolved) => Some(Value::String(resolved)),
            Cow::Borrowed(_) => None,
        })
    })
}

/// One resolution in progress: where values come from, the variables being expanded (the
/// chain, outermost first) and how many bytes references may still insert.
struct Expansion<'l, 'b> {
    lookup: &'l mut dyn Lookup,
    chain: Vec<String>,
    budget: &'b mut usize,
}

impl Expansion<'_, '_> {
    /// Appends the resolution of `segments` to `out`.
    fn segments(&mut self, out: &mut String, segments: &[Segment<'_>]) -> Result<(), Error> {
        for segment in segments {
            match segment {
                Segment::Literal(text) => out.push_str(text),
                Segment::Variable { reference, source } => self.expand(out, reference, source)?,
            }
        }
        Ok(())
    }

    /// Appends the resolved text of one reference to `out`.
    fn expand(
        &mut self,
        out: &mut String,
        reference: &Reference,
        source: &str,
    ) -> Result<(), Error> {
        check_chain(reference, source, &self.chain)?;
        let Some((value, kind)) = self.lookup.lookup(&reference.name) else {
            return Err(Error::NotFound {
                reference: source.to_owned(),
                name: reference.name.clone(),
            });
        };
        let text = match reference.slice {
            None => &*value,
            Some(_) if kind == ValueKind::Json => {
                return Err(Error::SliceNonString {
                    reference: source.to_owned(),
                    name: reference.name.clone(),
                });
            }
            Some(slice) => slice_chars(&value, slice.start, slice.length),
        };
        *self.budget = self
            .budget
            .checked_sub(text.len().saturating_add(EXPANSION_COST))
            .ok_or_else(|| Error::TooLarge {
                reference: source.to_owned(),
                limit: MAX_RESOLVED_BYTES,
            })?;
        if !contains_reference(text) {
            out.push_str(text);
            return Ok(());
        }
        let segments = parse(text)?;
        self.chain.push(reference.name.clone());
        let result = self.segments(out, &segments);
        self.chain.pop();
        result
    }
}

/// Refuses a reference to a variable already being expanded, or one that
/// would nest deeper than [`MAX_DEPTH`].
fn check_chain(reference: &Reference, source: &str, chain: &[String]) -> Result<(), Error> {
    if chain.len() < MAX_DEPTH && !chain.contains(&reference.name) {
        return Ok(());
    }
    let mut refused = chain.to_vec();
    refused.push(reference.name.clone());
    Err(Error::Circular {
        reference: source.to_owned(),
        chain: refused,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    /// Variables for tests, counting every lookup.
    #[derive(Default)]
    struct Store {
        values: HashMap<String, (Arc<str>, ValueKind)>,
        lookups: usize,
    }

    impl Store {
        fn with(pairs: &[(&str, &str)]) -> Self {
            let mut store = Self::default();
            for (name, value) in pairs {
                store.insert(name, value, ValueKind::Text);
            }
            store
        }

        fn insert(&mut self, name: &str, value: &str, kind: ValueKind) {
            self.values
                .insert(name.to_owned(), (Arc::from(value), kind));
        }
    }

    impl Lookup for Store {
        fn lookup(&mut self, name: &str) -> Option<(Arc<str>, ValueKind)> {
            self.lookups += 1;
            self.values.get(name).cloned()
        }
    }

    fn resolve(text: &str, store: &mut Store) -> Result<String, Error> {
        resolve_str(text, store).map(Cow::into_owned)
    }

    fn malformed_reason(text: &str) -> (String, String) {
        match resolve(text, &mut Store::with(&[("x", "value")])) {
            Err(Error::Malformed { reference, reason }) => (reference, reason),
            other => panic!("expected a malformed reference for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn whole_reference_becomes_exactly_the_value() {
        let mut store = Store::with(&[("greeting", "hello world")]);
        assert_eq!(
            resolve("$VAR_REF{{greeting}}", &mut store).unwrap(),
            "hello world"
        );
        assert_eq!(store.lookups, 1);
    }

    #[test]
    fn sliced_reference_takes_length_characters_from_start() {
        let mut store = Store::with(&[("x", "abcdefgh")]);
        assert_eq!(resolve("$VAR_REF{{x:2:3}}", &mut store).unwrap(), "cde");
        assert_eq!(resolve("$VAR_REF{{x:0:0}}", &mut store).unwrap(), "");
    }

    #[test]
    fn slice_past_the_end_is_clamped() {
        let mut store = Store::with(&[("x", "abc")]);
        assert_eq!(resolve("$VAR_REF{{x:1:100}}", &mut store).unwrap(), "bc");
        assert_eq!(resolve("$VAR_REF{{x:3:1}}", &mut store).unwrap(), "");
        assert_eq!(resolve("[$VAR_REF{{x:50:5}}]", &mut store).unwrap(), "[]");
    }

    #[test]
    fn slices_of_multibyte_text_never_split_a_character() {
        let mut store = Store::with(&[("x", "héllo 😀 wörld")]);
        assert_eq!(resolve("$VAR_REF{{x:5:3}}", &mut store).unwrap(), " 😀 ");
    }

    #[test]
    fn slices_of_cjk_text_count_characters() {
        let mut store = Store::with(&[("x", "日本語のテキスト")]);
        assert_eq!(
            resolve("$VAR_REF{{x:3:5}}", &mut store).unwrap(),
            "のテキスト"
        );
        assert_eq!(resolve("$VAR_REF{{x:0:2}}", &mut store).unwrap(), "日本");
    }

    #[test]
    fn adjacent_references_are_both_replaced() {
        let mut store = Store::with(&[("a", "left"), ("b", "right")]);
        let resolved = resolve("$VAR_REF{{a}}$VAR_REF{{b}}", &mut store).unwrap();
        assert_eq!(resolved, "leftright");
    }

    #[test]
    fn references_embedded_in_text_keep_the_surrounding_text() {
        let mut store = Store::with(&[("name", "Ada"), ("x", "0123456789")]);
        let text = "Dear $VAR_REF{{name}}, digits $VAR_REF{{x:3:2}}!";
        assert_eq!(resolve(text, &mut store).unwrap(), "Dear Ada, digits 34!");
    }

    #[test]
    fn whitespace_inside_the_braces_is_ignored() {
        let mut store = Store::with(&[("x", "abcdef")]);
        assert_eq!(resolve("$VAR_REF{{ x }}", &mut store).unwrap(), "abcdef");
        assert_eq!(
            resolve("$VAR_REF{{ x : 1 : 2 }}", &mut store).unwrap(),
            "bc"
        );
    }

    #[test]
    fn a_value_holding_references_is_resolved_too() {
        let mut store = Store::with(&[
            ("outer", "<$VAR_REF{{inner}}>"),
            ("inner", "[$VAR_REF{{leaf}}]"),
            ("leaf", "ok"),
        ]);
        assert_eq!(resolve("$VAR_REF{{outer}}", &mut store).unwrap(), "<[ok]>");
        assert_eq!(store.lookups, 3);
    }

    #[test]
    fn a_slice_is_cut_from_the_stored_value_then_resolved() {
        let mut store = Store::with(&[("outer", "ab$VAR_REF{{inner}}cd"), ("inner", "XYZ")]);
        let resolved = resolve("$VAR_REF{{outer:1:18}}", &mut store).unwrap();
        assert_eq!(resolved, "bXYZ");
        let error = resolve("$VAR_REF{{outer:2:10}}", &mut store).unwrap_err();
        assert!(matches!(error, Error::Malformed { reference, .. } if reference == "$VAR_REF{{"));
    }

    #[test]
    fn same_variable_twice_in_one_string_is_not_circular() {
        let mut store = Store::with(&[("a", "$VAR_REF{{b}}$VAR_REF{{b}}"), ("b", "x")]);
        let resolved = resolve("$VAR_REF{{a}} $VAR_REF{{a}}", &mut store).unwrap();
        assert_eq!(resolved, "xx xx");
    }

    #[test]
    fn same_variable_in_sibling_array_elements_is_not_circular() {
        let mut store = Store::with(&[("a", "<$VAR_REF{{b}}>"), ("b", "x")]);
        let mut value = json!(["$VAR_REF{{a}}", "$VAR_REF{{a}}", {"k": "$VAR_REF{{a}}"}]);
        resolve_value(&mut value, &mut store).unwrap();
        assert_eq!(value, json!(["<x>", "<x>", {"k": "<x>"}]));
    }

    #[test]
    fn self_reference_is_circular() {
        let mut store = Store::with(&[("a", "again $VAR_REF{{a}}")]);
        let error = resolve("$VAR_REF{{a}}", &mut store).unwrap_err();
        let expected = Error::Circular {
            reference: "$VAR_REF{{a}}".to_owned(),
            chain: vec!["a".to_owned(), "a".to_owned()],
        };
        assert_eq!(error, expected);
    }

    #[test]
    fn two_variable_cycle_reports_the_chain() {
        let mut store = Store::with(&[("a", "$VAR_REF{{b:0:99}}"), ("b", "$VAR_REF{{a}}")]);
        let error = resolve("start $VAR_REF{{a}}", &mut store).unwrap_err();
        assert_eq!(
            error.to_string(),
            "$VAR_REF{{a}}: circular variable reference detected (a → b → a); \
             rewrite one of these variables with WriteVar so the chain ends"
        );
    }

    /// A store where `v0` references `v1`, … up to `v{count - 1}`, which holds `end`.
    fn chain_store(count: usize) -> Store {
        let mut store = Store::default();
        for index in 0..count {
            let value = if index + 1 == count {
                "end".to_owned()
            } else {
                format!("$VAR_REF{{{{v{}}}}}", index + 1)
            };
            store.insert(&format!("v{index}"), &value, ValueKind::Text);
        }
        store
    }

    #[test]
    fn chain_of_max_depth_variables_resolves() {
        let mut store = chain_store(MAX_DEPTH);
        assert_eq!(resolve("$VAR_REF{{v0}}", &mut store).unwrap(), "end");
    }

    #[test]
    fn chain_deeper_than_max_depth_is_refused() {
        let mut store = chain_store(MAX_DEPTH + 1);
        let error = resolve("$VAR_REF{{v0}}", &mut store).unwrap_err();
        let Error::Circular { reference, chain } = &error else {
            panic!("expected a circular error, got {error:?}");
        };
        assert_eq!(reference, &format!("$VAR_REF{{{{v{MAX_DEPTH}}}}}"));
        assert_eq!(chain.len(), MAX_DEPTH + 1);
        assert!(error.to_string().contains("reference chain deeper than 64"));
    }

    #[test]
    fn missing_variable_error_names_the_reference() {
        let mut store = Store::with(&[("a", "x $VAR_REF{{ghost:2:5}}")]);
        let error = resolve("$VAR_REF{{a}}", &mut store).unwrap_err();
        assert_eq!(
            error.to_string(),
            "$VAR_REF{{ghost:2:5}}: variable `ghost` not found; \
             list variables with ListVars or create it with WriteVar"
        );
    }

    #[test]
    fn slicing_a_json_variable_is_refused() {
        let mut store = Store::default();
        store.insert("data", r#"{"a":1}"#, ValueKind::Json);
        let error = resolve("$VAR_REF{{data:0:3}}", &mut store).unwrap_err();
        let expected = Error::SliceNonString {
            reference: "$VAR_REF{{data:0:3}}".to_owned(),
            name: "data".to_owned(),
        };
        assert_eq!(error, expected);
    }

    #[test]
    fn whole_reference_to_a_json_variable_inserts_its_json_text() {
        let mut store = Store::default();
        store.insert("data", r#"{"a":[1,2]}"#, ValueKind::Json);
        let resolved = resolve("data=$VAR_REF{{data}}", &mut store).unwrap();
        assert_eq!(resolved, r#"data={"a":[1,2]}"#);
    }

    #[test]
    fn references_that_double_at_every_level_stop_at_the_size_limit() {
        let mut store = Store::with(&[("a0", &"x".repeat(1 << 20))]);
        for level in 1..40 {
            let previous = format!("$VAR_REF{{{{a{}}}}}", level - 1);
            store.insert(&format!("a{level}"), &previous.repeat(2), ValueKind::Text);
        }
        let error = resolve("$VAR_REF{{a39}}", &mut store).unwrap_err();
        let Error::TooLarge { limit, .. } = error else {
            panic!("{error:?}")
        };
        assert_eq!(limit, MAX_RESOLVED_BYTES);
    }

    #[test]
    fn unclosed_reference_is_malformed() {
        let (reference, reason) = malformed_reason("see $VAR_REF{{x and more");
        assert_eq!(reference, "$VAR_REF{{x and more");
        assert_eq!(reason, "the closing `}}` is missing");
    }

    #[test]
    fn very_long_malformed_reference_is_shortened_in_the_error() {
        let text = format!("$VAR_REF{{{{{}", "n".repeat(1000));
        let (reference, _) = malformed_reason(&text);
        assert_eq!(reference.chars().count(), QUOTE_LIMIT + 1);
        assert!(reference.ends_with('…'));
    }

    #[test]
    fn empty_or_blank_name_is_malformed() {
        for text in ["$VAR_REF{{}}", "$VAR_REF{{   }}", "$VAR_REF{{:1:2}}"] {
            let (reference, reason) = malformed_reason(text);
            assert_eq!(
                (reference.as_str(), reason.as_str()),
                (text, "the variable name is empty")
            );
        }
    }

    #[test]
    fn slice_without_both_numbers_or_with_extra_parts_is_malformed() {
        for text in ["$VAR_REF{{x:1}}", "$VAR_REF{{x:1:2:3}}", "$VAR_REF{{x:}}"] {
            let (reference, reason) = malformed_reason(text);
            assert_eq!(reference, text);
            assert!(reason.contains("exactly `name:start:length`") || reason.contains("missing"));
        }
    }

    #[test]
    fn non_numeric_or_negative_slice_bounds_are_malformed() {
        let (_, reason) = malformed_reason("$VAR_REF{{x:a:b}}");
        assert_eq!(
            reason,
            "the slice start `a` is not a non-negative whole number"
        );
        let (_, reason) = malformed_reason("$VAR_REF{{x:-1:2}}");
        assert_eq!(
            reason,
            "the slice start `-1` is not a non-negative whole number"
        );
        let (_, reason) = malformed_reason("$VAR_REF{{x:1:+2}}");
        assert_eq!(
            reason,
            "the slice length `+2` is not a non-negative whole number"
        );
    }

    #[test]
    fn slice_bound_overflowing_usize_is_malformed() {
        let (reference, reason) = malformed_reason("$VAR_REF{{x:0:99999999999999999999999}}");
        assert_eq!(reference, "$VAR_REF{{x:0:99999999999999999999999}}");
        assert_eq!(
            reason,
            "the slice length `99999999999999999999999` is too large"
        );
    }

    #[test]
    fn braces_in_the_name_are_malformed() {
        for text in ["$VAR_REF{{a}b}}", "$VAR_REF{{a{b}}", "$VAR_REF{{{a}}"] {
            let (reference, reason) = malformed_reason(text);
            assert_eq!(reference, text);
            assert_eq!(reason, "a variable name cannot contain `{` or `}`");
        }
    }

    #[test]
    fn malformed_error_message_says_how_to_write_a_reference() {
        let error = resolve("$VAR_REF{{x:1}}", &mut Store::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "malformed reference $VAR_REF{{x:1}}: a slice must be exactly `name:start:length`; \
             write $VAR_REF{{name}} or $VAR_REF{{name:start:length}}, or $$VAR_REF{{ for the literal text"
        );
    }

    #[test]
    fn escaped_reference_becomes_literal_reference_text() {
        let mut store = Store::with(&[("x", "value")]);
        assert_eq!(
            resolve("$$VAR_REF{{x}}", &mut store).unwrap(),
            "$VAR_REF{{x}}"
        );
        let text = "a $$VAR_REF{{x:1:2}} b $VAR_REF{{x}}";
        assert_eq!(
            resolve(text, &mut store).unwrap(),
            "a $VAR_REF{{x:1:2}} b value"
        );
        assert_eq!(store.lookups, 1);
    }

    #[test]
    fn escape_copies_its_text_literally_up_to_the_closing_braces() {
        let mut store = Store::default();
        let text = "$$VAR_REF{{$VAR_REF{{y}}!";
        assert_eq!(
            resolve(text, &mut store).unwrap(),
            "$VAR_REF{{$VAR_REF{{y}}!"
        );
        assert_eq!(
            resolve("$$VAR_REF{{ never closed", &mut store).unwrap(),
            "$VAR_REF{{ never closed"
        );
        assert_eq!(store.lookups, 0);
    }

    #[test]
    fn lone_double_dollar_stays() {
        let mut store = Store::with(&[("x", "v")]);
        assert_eq!(resolve("cost: $$5", &mut store).unwrap(), "cost: $$5");
        assert_eq!(
            resolve("$$ $VAR_REF{{x}} $$", &mut store).unwrap(),
            "$$ v $$"
        );
    }

    #[test]
    fn string_without_references_is_borrowed() {
        let mut store = Store::default();
        let text = "plain text with $ signs, $$, {{braces}} and VAR_REF";
        assert!(
            matches!(resolve_str(text, &mut store), Ok(Cow::Borrowed(borrowed)) if borrowed == text)
        );
        assert!(!contains_reference(text));
        assert_eq!(store.lookups, 0);
    }

    #[test]
    fn contains_reference_sees_references_and_escapes() {
        assert!(contains_reference("x $VAR_REF{{a}}"));
        assert!(contains_reference("$$VAR_REF{{a}}"));
        assert!(contains_reference("$VAR_REF{{unclosed"));
        assert!(!contains_reference("$VAR_REF{a}"));
    }

    #[test]
    fn parse_returns_literals_and_references_in_order() {
        let segments = parse("a $VAR_REF{{x:1:2}}$$VAR_REF{{y}} b").unwrap();
        let expected = vec![
            Segment::Literal(Cow::Borrowed("a ")),
            Segment::Variable {
                reference: Reference {
                    name: "x".to_owned(),
                    slice: Some(Slice {
                        start: 1,
                        length: 2,
                    }),
                },
                source: "$VAR_REF{{x:1:2}}",
            },
            Segment::Literal(Cow::Borrowed("$VAR_REF{{y}} b")),
        ];
        assert_eq!(segments, expected);
    }

    #[test]
    fn closures_serve_as_lookups() {
        let mut calls = Vec::new();
        let mut lookup = |name: &str| {
            calls.push(name.to_owned());
            Some((Arc::from(name.to_uppercase()), ValueKind::Text))
        };
        let resolved = resolve_str("$VAR_REF{{ab}}-$VAR_REF{{cd}}", &mut lookup).unwrap();
        assert_eq!(resolved, "AB-CD");
        assert_eq!(calls, ["ab", "cd"]);
    }

    #[test]
    fn resolve_value_walks_nested_values_and_leaves_keys_and_numbers_alone() {
        let mut store = Store::with(&[("x", "X")]);
        let mut value = json!({
            "$VAR_REF{{x}}": "key untouched, value $VAR_REF{{x}}",
            "nested": {"list": [1, 2.5, true, null, "$VAR_REF{{x}}", ["deep $VAR_REF{{x}}"]]},
            "plain": "nothing here",
            "count": 7
        });
        resolve_value(&mut value, &mut store).unwrap();
        let expected = json!({
            "$VAR_REF{{x}}": "key untouched, value X",
            "nested": {"list": [1, 2.5, true, null, "X", ["deep X"]]},
            "plain": "nothing here",
            "count": 7
        });
        assert_eq!(value, expected);
        assert_eq!(store.lookups, 3);
    }

    #[test]
    fn resolve_value_stops_at_the_first_error_in_document_order() {
        let mut store = Store::default();
        let mut value = json!(["fine", {"a": "$VAR_REF{{first}}"}, "$VAR_REF{{second}}"]);
        let error = resolve_value(&mut value, &mut store).unwrap_err();
        assert!(matches!(error, Error::NotFound { name, .. } if name == "first"));
    }

    #[test]
    fn deeply_nested_arrays_do_not_overflow_the_stack() {
        const DEPTH: usize = 100_000;
        let mut store = Store::with(&[("x", "found")]);
        let mut value = Value::String("$VAR_REF{{x}}".to_owned());
        for _ in 0..DEPTH {
            value = Value::Array(vec![value]);
        }
        resolve_value(&mut value, &mut store).unwrap();
        // Dismantle level by level: dropping the nested value recursively
        // would itself overflow the stack.
        let mut levels = 0;
        while let Value::Array(mut items) = value {
            value = items.pop().unwrap_or(Value::Null);
            levels += 1;
        }
        assert_eq!(levels, DEPTH);
        assert_eq!(value, Value::String("found".to_owned()));
    }

    /// `l0` empty, each `lK` referencing `l(K-1)` `fan_out` times.
    fn fan_out_store(levels: usize, fan_out: usize) -> Store {
        let mut store = Store::with(&[("l0", "")]);
        for level in 1..=levels {
            let value = format!("$VAR_REF{{{{l{}}}}}", level - 1).repeat(fan_out);
            store.insert(&format!("l{level}"), &value, ValueKind::Text);
        }
        store
    }

    /// Most lookups one budget pays for: every expansion costs at least `EXPANSION_COST`.
    const MOST_LOOKUPS: usize = MAX_RESOLVED_BYTES / EXPANSION_COST + 1;

    #[test]
    fn empty_expansions_are_paid_for_too() {
        let mut store = fan_out_store(10, 8);
        let error = resolve("$VAR_REF{{l10}}", &mut store).unwrap_err();
        assert!(matches!(error, Error::TooLarge { .. }), "{error:?}");
        assert!(store.lookups <= MOST_LOOKUPS, "{} lookups", store.lookups);
    }

    #[test]
    fn resolutions_sharing_a_budget_stop_together() {
        let mut store = fan_out_store(14, 2);
        let budget = Budget::default();
        let mut first = json!("$VAR_REF{{l14}}");
        resolve_value_within(&mut first, &mut store, &budget).unwrap();
        let mut second = json!("$VAR_REF{{l14}}");
        let error = resolve_value_within(&mut second, &mut store, &budget).unwrap_err();
        assert!(matches!(error, Error::TooLarge { .. }), "{error:?}");
        let mut fresh = json!("$VAR_REF{{l14}}");
        resolve_value(&mut fresh, &mut store).unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        #[test]
        fn no_resolution_looks_up_more_than_its_budget_pays_for(
            levels in 1..12usize,
            fan_out in 1..9usize,
            copies in 1..4usize,
        ) {
            let mut store = fan_out_store(levels, fan_out);
            let mut arguments = Value::Array(vec![json!(format!("$VAR_REF{{{{l{levels}}}}}")); copies]);
            let outcome = resolve_value(&mut arguments, &mut store);
            proptest::prop_assert!(store.lookups <= MOST_LOOKUPS, "{} lookups", store.lookups);
            let expansions = (0..=levels).map(|level| fan_out.pow(u32::try_from(level).unwrap())).sum::<usize>() * copies;
            if expansions < MAX_RESOLVED_BYTES / (EXPANSION_COST + 16 * fan_out) {
                proptest::prop_assert!(outcome.is_ok(), "{outcome:?}");
            }
        }
    }
}
