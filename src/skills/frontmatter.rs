//! SKILL.md frontmatter: our own splitter (BOM, CRLF, `---` … `---`/`...` fences) and the YAML
//! parse through serde-saphyr (strict booleans, no schema coercion), with the one recovery real
//! skills need: a top-level scalar whose unquoted value holds `: ` is quoted and parsed again.
//!
//! `gray_matter` is not used: it silently finds no frontmatter after a BOM or without a closing
//! fence, and its type errors carry no position (measured on 165 real skills).

use std::borrow::Cow;
use std::io::BufRead;

use serde_json::{Map, Value};

/// The frontmatter as written, key order kept.
pub type Frontmatter = Map<String, Value>;

/// A SKILL.md text cut at its fences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    pub yaml: &'a str,
    pub body: &'a str,
    /// The 1-based line of the file where the YAML starts (the line after the opening fence).
    pub yaml_line: usize,
}

/// Why a text has no frontmatter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("the first line must be `---` (the opening of the YAML frontmatter)")]
    NoOpeningFence,
    #[error("the frontmatter has no closing `---` (or `...`) line")]
    NoClosingFence,
}

/// A YAML error, with the line of the file it points at when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub line: Option<usize>,
    pub message: String,
}

/// A parsed frontmatter and the lines whose values had to be quoted to parse.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub frontmatter: Frontmatter,
    /// `(line, key)` of every value that was quoted by the lenient recovery.
    pub recovered: Vec<(usize, String)>,
}

/// Strips a byte-order mark and turns CRLF and lone CR line ends into LF.
pub fn normalise(text: &str) -> Cow<'_, str> {
    unify_line_ends(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// Turns CRLF and lone CR line ends into LF.
fn unify_line_ends(text: &str) -> Cow<'_, str> {
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Cuts a normalised text into frontmatter and body.
pub fn split(text: &str) -> Result<Split<'_>, SplitError> {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    if first.trim_end() != "---" {
        return Err(SplitError::NoOpeningFence);
    }
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let fence = line.trim_end();
        if fence == "---" || fence == "..." {
            return Ok(Split {
                yaml: &rest[..offset],
                body: &rest[offset + line.len()..],
                yaml_line: 2,
            });
        }
        offset += line.len();
    }
    Err(SplitError::NoClosingFence)
}

/// Reads a SKILL.md only up to its closing fence, so start-up never reads bodies. The text is
/// normalised as [`normalise`] does (one BOM dropped; CRLF and lone CR end lines), so the YAML
/// found here is the YAML [`split`] finds in the whole file; a file without frontmatter yields
/// what was read (the splitter then says why).
pub fn read_head(mut reader: impl BufRead) -> std::io::Result<String> {
    let mut head = String::new();
    let mut raw = Vec::new();
    let mut first = true;
    loop {
        raw.clear();
        if reader.read_until(b'\n', &mut raw)? == 0 {
            return Ok(head);
        }
        let text = std::str::from_utf8(&raw)
            .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))?;
        let text = if first {
            text.strip_prefix('\u{feff}').unwrap_or(text)
        } else {
            text
        };
        // A lone CR ends a line as well: one raw line may hold several.
        for line in unify_line_ends(text).split_inclusive('\n') {
            let content = line.strip_suffix('\n').unwrap_or(line);
            let fence = content.trim_end();
            let closing = !first && (fence == "---" || fence == "...");
            let not_frontmatter = first && fence != "---";
            head.push_str(content);
            head.push('\n');
            if closing || not_frontmatter {
                return Ok(head);
            }
            first = false;
        }
    }
}

/// Parses the YAML of a frontmatter; on failure, retries once with unquoted `: ` values quoted.
pub fn parse(split: &Split<'_>) -> Result<Parsed, YamlError> {
    match parse_yaml(split.yaml, split.yaml_line) {
        Ok(frontmatter) => Ok(Parsed {
            frontmatter,
            recovered: Vec::new(),
        }),
        Err(error) => {
            let (quoted, recovered) = quote_colon_values(split.yaml, split.yaml_line);
            if recovered.is_empty() {
                return Err(error);
            }
            let frontmatter = parse_yaml(&quoted, split.yaml_line).map_err(|_| error)?;
            Ok(Parsed {
                frontmatter,
                recovered,
            })
        }
    }
}

fn parse_yaml(yaml: &str, yaml_line: usize) -> Result<Frontmatter, YamlError> {
    if yaml.trim().is_empty() {
        return Ok(Frontmatter::new());
    }
    let options = serde_saphyr::options! { strict_booleans: true, no_schema: true };
    let value: Value = serde_saphyr::from_str_with_options(yaml, options).map_err(|error| {
        let plain = serde_saphyr::render_options! { snippets: serde_saphyr::SnippetMode::Off };
        YamlError {
            line: error
                .location()
                .and_then(|location| usize::try_from(location.line()).ok())
                .map(|line| line + yaml_line - 1),
            message: first_line(&error.render_with_options(plain)),
        }
    })?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Frontmatter::new()),
        other => Err(YamlError {
            line: Some(yaml_line),
            message: format!("the frontmatter must be a mapping of keys, not {other}"),
        }),
    }
}

/// The message alone: its first line, without the position relative to the YAML slice (the
/// diagnostic gives the line of the file instead).
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    line.split(" at line ").next().unwrap_or(line).to_owned()
}

/// Quotes the value of every top-level `key: value` line whose plain value holds `: `.
fn quote_colon_values(yaml: &str, yaml_line: usize) -> (String, Vec<(usize, String)>) {
    let mut recovered = Vec::new();
    let mut output = String::with_capacity(yaml.len() + 16);
    for (index, line) in yaml.lines().enumerate() {
        match top_level_pair(line) {
            Some((key, value)) if needs_quotes(value) => {
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                output.push_str(key);
                output.push_str(": \"");
                output.push_str(&escaped);
                output.push('"');
                recovered.push((index + yaml_line, key.to_owned()));
            }
            _ => output.push_str(line),
        }
        output.push('\n');
    }
    (output, recovered)
}

fn top_level_pair(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(": ")?;
    let plain_key = !key.is_empty()
        && key
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || "-_".contains(character));
    plain_key.then(|| (key, value.trim()))
}

fn needs_quotes(value: &str) -> bool {
    let opens_structure = value.starts_with(['"', '\'', '|', '>', '[', '{', '&', '*', '!']);
    !opens_structure && (value.contains(": ") || value.ends_with(':'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn parsed(text: &str) -> Result<Parsed, YamlError> {
        let text = normalise(text);
        parse(&split(&text).unwrap())
    }

    #[test]
    fn bom_and_crlf_are_normalised_before_the_fences() {
        let text = "\u{feff}---\r\nname: a\r\ndescription: b\r\n---\r\nBody\r\n";
        let text = normalise(text);
        let cut = split(&text).unwrap();
        assert_eq!(cut.yaml, "name: a\ndescription: b\n");
        assert_eq!(cut.body, "Body\n");
    }

    #[test]
    fn missing_fences_are_named() {
        assert_eq!(split("name: a\n"), Err(SplitError::NoOpeningFence));
        assert_eq!(split("---\nname: a\n"), Err(SplitError::NoClosingFence));
        assert_eq!(split("---\nname: a\n...").unwrap().body, "");
    }

    #[test]
    fn folded_and_quoted_descriptions_parse() {
        let block = parsed("---\ndescription: |-\n  one\n  two\n---\n").unwrap();
        assert_eq!(block.frontmatter["description"], json!("one\ntwo"));
        let folded = parsed("---\ndescription: >\n  one\n  two\n---\n").unwrap();
        assert_eq!(folded.frontmatter["description"], json!("one two\n"));
        let quoted = parsed("---\ndescription: 'it''s: \"fine\"'\n---\n").unwrap();
        assert_eq!(quoted.frontmatter["description"], json!("it's: \"fine\""));
    }

    #[test]
    fn unquoted_colon_values_are_recovered_and_reported() {
        let result = parsed("---\nname: a\ndescription: Use when: the user asks\n---\n").unwrap();
        assert_eq!(
            result.frontmatter["description"],
            json!("Use when: the user asks")
        );
        assert_eq!(result.recovered, vec![(3, "description".to_owned())]);
    }

    #[test]
    fn broken_yaml_reports_the_file_line() {
        let error = parsed("---\nname: a\ndescription: [unclosed\n---\n").unwrap_err();
        assert!(error.line.is_some_and(|line| line >= 3), "{error:?}");
        assert!(!error.message.is_empty());
    }

    #[test]
    fn booleans_stay_strict_and_yes_no_stay_text() {
        let result = parsed("---\nname: no\nflag: true\n---\n").unwrap();
        assert_eq!(result.frontmatter["name"], json!("no"));
        assert_eq!(result.frontmatter["flag"], json!(true));
    }

    #[test]
    fn the_head_reader_stops_at_the_closing_fence() {
        let text = "\u{feff}---\r\nname: a\r\n---\r\nbody that is never read\n";
        let head = read_head(std::io::Cursor::new(text)).unwrap();
        assert_eq!(head, "---\nname: a\n---\n");
    }

    #[test]
    fn the_head_reader_ends_lines_at_a_lone_carriage_return_as_normalise_does() {
        let text = "---\rname: a\r---\rbody";
        let head = read_head(std::io::Cursor::new(text)).unwrap();
        assert_eq!(head, "---\nname: a\n---\n");
        assert_eq!(
            split(&head).unwrap().yaml,
            split(&normalise(text)).unwrap().yaml
        );
    }
}
