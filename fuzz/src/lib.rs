//! Shared pieces of the fuzz targets: texts assembled from tokens that matter to the parsers
//! (`$VAR_REF{{`, `}}`, `†`, dots, digits…), so the fuzzer reaches past the first byte of a
//! reference instead of spending its time on random letters, and a model of `$VAR_REF`
//! resolution written independently of `src/refs.rs` to compare it with.

use std::collections::HashMap;
use std::sync::Arc;

use arbitrary::Arbitrary;
use synapse_mcp::vars::ValueKind;

/// The variable names the token texts use, so references find (or miss) them often.
pub const NAMES: [&str; 6] = ["a", "b", "c", "d", " a ", "é😀"];

/// One piece of a `$VAR_REF` text.
#[derive(Arbitrary, Debug, Clone)]
pub enum VarToken {
    Text(String),
    Open,
    Close,
    Dollar,
    Colon,
    Brace,
    Name(u8),
    Number(u16),
    HugeNumber,
    Space,
    Multibyte,
}

/// Renders tokens into one text.
pub fn render_var_tokens(tokens: &[VarToken]) -> String {
    let mut text = String::new();
    for token in tokens {
        match token {
            VarToken::Text(literal) => text.push_str(literal),
            VarToken::Open => text.push_str("$VAR_REF{{"),
            VarToken::Close => text.push_str("}}"),
            VarToken::Dollar => text.push('$'),
            VarToken::Colon => text.push(':'),
            VarToken::Brace => text.push('{'),
            VarToken::Name(index) => text.push_str(NAMES[usize::from(*index) % NAMES.len()]),
            VarToken::Number(number) => text.push_str(&number.to_string()),
            VarToken::HugeNumber => text.push_str("184467440737095516160"),
            VarToken::Space => text.push(' '),
            VarToken::Multibyte => text.push_str("日😀é"),
        }
    }
    text
}

/// One piece of a `†` text.
#[derive(Arbitrary, Debug, Clone)]
pub enum DaggerToken {
    Text(String),
    Dagger,
    Kind(u8),
    Dot,
    Word(u8),
    Index(u8),
    Punctuation(u8),
}

/// Renders tokens into one text.
pub fn render_dagger_tokens(tokens: &[DaggerToken]) -> String {
    const KINDS: [&str; 5] = ["state", "input", "steps", "var", "sate"];
    const WORDS: [&str; 7] = ["user", "name", "items", "a-b", "x_y", "é", "角色"];
    const PUNCTUATION: [&str; 7] = [" ", ",", "!", "..", "-", "\"", "。"];
    let mut text = String::new();
    for token in tokens {
        match token {
            DaggerToken::Text(literal) => text.push_str(literal),
            DaggerToken::Dagger => text.push('†'),
            DaggerToken::Kind(index) => text.push_str(KINDS[usize::from(*index) % KINDS.len()]),
            DaggerToken::Dot => text.push('.'),
            DaggerToken::Word(index) => text.push_str(WORDS[usize::from(*index) % WORDS.len()]),
            DaggerToken::Index(index) => text.push_str(&index.to_string()),
            DaggerToken::Punctuation(index) => {
                text.push_str(PUNCTUATION[usize::from(*index) % PUNCTUATION.len()]);
            }
        }
    }
    text
}

/// Variables for the reference targets, counting lookups.
#[derive(Default)]
pub struct Variables {
    pub values: HashMap<String, (Arc<str>, ValueKind)>,
    pub lookups: usize,
}

impl synapse_mcp::refs::Lookup for Variables {
    fn lookup(&mut self, name: &str) -> Option<(Arc<str>, ValueKind)> {
        self.lookups += 1;
        self.values.get(name).cloned()
    }
}

/// Why the model refused a text (only whether it failed is compared, not how: the real resolver
/// parses a whole string before looking anything up, so it may name a different first problem).
#[derive(Debug, PartialEq, Eq)]
pub struct ModelError;

/// `$VAR_REF` resolution as `src/refs.rs`'s documentation states it, written plainly and
/// recursively: the oracle of the `var_refs` target.
pub fn model_resolve(
    text: &str,
    variables: &HashMap<String, (Arc<str>, ValueKind)>,
    chain: &mut Vec<String>,
) -> Result<String, ModelError> {
    const OPENING: &str = "$VAR_REF{{";
    let mut output = String::new();
    let mut rest = text;
    let mut pending = Vec::new();
    // First pass: cut the text into literal runs and references, failing on malformed ones.
    while let Some(offset) = rest.find(OPENING) {
        let (before, from) = rest.split_at(offset);
        let body_and_rest = &from[OPENING.len()..];
        if let Some(kept) = before.strip_suffix('$') {
            pending.push(Err(kept.to_owned()));
            match body_and_rest.find("}}") {
                Some(close) => {
                    pending.push(Err(from[..OPENING.len() + close + 2].to_owned()));
                    rest = &body_and_rest[close + 2..];
                }
                None => {
                    pending.push(Err(from.to_owned()));
                    rest = "";
                }
            }
            continue;
        }
        pending.push(Err(before.to_owned()));
        let close = body_and_rest.find("}}").ok_or(ModelError)?;
        let body = &body_and_rest[..close];
        if body.contains('{') || body.contains('}') {
            return Err(ModelError);
        }
        let parts: Vec<&str> = body.split(':').map(str::trim).collect();
        let name = parts[0];
        if name.is_empty() {
            return Err(ModelError);
        }
        let slice = match parts.len() {
            1 => None,
            3 => Some((number(parts[1])?, number(parts[2])?)),
            _ => return Err(ModelError),
        };
        pending.push(Ok((name.to_owned(), slice)));
        rest = &body_and_rest[close + 2..];
    }
    pending.push(Err(rest.to_owned()));
    // Second pass: expand the references left to right.
    for piece in pending {
        match piece {
            Err(literal) => output.push_str(&literal),
            Ok((name, slice)) => {
                if chain.len() >= synapse_mcp::refs::MAX_DEPTH || chain.contains(&name) {
                    return Err(ModelError);
                }
                let (value, kind) = variables.get(&name).ok_or(ModelError)?;
                let cut: String = match slice {
                    None => value.to_string(),
                    Some(_) if *kind == ValueKind::Json => return Err(ModelError),
                    Some((start, length)) => value.chars().skip(start).take(length).collect(),
                };
                chain.push(name);
                let inner = model_resolve(&cut, variables, chain);
                chain.pop();
                output.push_str(&inner?);
            }
        }
    }
    Ok(output)
}

fn number(digits: &str) -> Result<usize, ModelError> {
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(ModelError);
    }
    digits.parse().map_err(|_| ModelError)
}
