//! The Agent Skills rules: typed fields read from the verbatim frontmatter, and diagnostics that
//! name the file, the line, the field and the rule. Every rule is checked in both modes; the
//! mode only decides what a diagnostic costs:
//! - [`Level::Fatal`]: the skill is skipped even in lenient mode (no description, YAML that
//!   cannot be parsed at all, no frontmatter);
//! - [`Level::Error`]: a violation of the specification, which fails `skills check --strict`;
//! - [`Level::Warning`]: worth fixing, never fails (unknown keys: real skills carry more).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use super::frontmatter::Frontmatter;

/// How much a diagnostic costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Warning,
    Error,
    Fatal,
}

/// One finding about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub level: Level,
    pub file: PathBuf,
    pub line: Option<usize>,
    pub field: Option<String>,
    /// A short, stable rule id, e.g. `name-matches-folder`.
    pub rule: &'static str,
    pub message: String,
}

impl Diagnostic {
    pub fn new(
        level: Level,
        file: impl Into<PathBuf>,
        rule: &'static str,
        message: String,
    ) -> Self {
        Self {
            level,
            file: file.into(),
            line: None,
            field: None,
            rule,
            message,
        }
    }

    #[must_use]
    pub fn at(mut self, line: Option<usize>, field: Option<&str>) -> Self {
        self.line = line;
        self.field = field.map(str::to_owned);
        self
    }
}

impl Diagnostic {
    /// One line: `file:line: level [rule] `field`: message`. In lenient mode a violation of the
    /// specification is only a warning.
    pub fn render(&self, strict: bool) -> String {
        Rendered(self, strict).to_string()
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        Rendered(self, true).fmt(formatter)
    }
}

struct Rendered<'a>(&'a Diagnostic, bool);

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self(diagnostic, strict) = self;
        let level = match diagnostic.level {
            Level::Error if *strict => "error",
            Level::Warning | Level::Error => "warning",
            Level::Fatal => "error (skipped)",
        };
        diagnostic.write(formatter, level)
    }
}

impl Diagnostic {
    fn write(&self, formatter: &mut fmt::Formatter<'_>, level: &str) -> fmt::Result {
        write!(formatter, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(formatter, ":{line}")?;
        }
        write!(formatter, ": {level} [{}]", self.rule)?;
        if let Some(field) = &self.field {
            write!(formatter, " `{field}`")?;
        }
        write!(formatter, ": {}", self.message)
    }
}

/// The typed view of a frontmatter: the specification's keys and the index's own keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub allowed_tools: Vec<String>,
    pub title: Option<String>,
    pub version: Option<String>,
    pub tags: Vec<String>,
    pub author: Option<String>,
}

const KNOWN_KEYS: [&str; 10] = [
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
    "title",
    "version",
    "tags",
    "author",
];

/// Where each top-level key is written, by a scan of the YAML lines.
pub fn key_lines(yaml: &str, yaml_line: usize) -> BTreeMap<String, usize> {
    let mut lines = BTreeMap::new();
    for (index, line) in yaml.lines().enumerate() {
        if line.starts_with([' ', '\t', '#', '-']) {
            continue;
        }
        if let Some((key, _)) = line.split_once(':') {
            lines
                .entry(key.trim().trim_matches(['"', '\'']).to_owned())
                .or_insert(index + yaml_line);
        }
    }
    lines
}

/// Reads the typed fields and checks every rule. `folder` is the skill folder's name.
pub fn check(
    frontmatter: &Frontmatter,
    folder: &str,
    file: &std::path::Path,
    lines: &BTreeMap<String, usize>,
) -> (Fields, Vec<Diagnostic>) {
    let mut checker = Checker {
        file,
        lines,
        diagnostics: Vec::new(),
    };
    let fields = Fields {
        name: checker.text(frontmatter, "name"),
        description: checker.text(frontmatter, "description"),
        license: checker.text(frontmatter, "license"),
        compatibility: checker.text(frontmatter, "compatibility"),
        metadata: checker.metadata(frontmatter),
        allowed_tools: checker.list(frontmatter, "allowed-tools"),
        title: checker.text(frontmatter, "title"),
        version: checker.text(frontmatter, "version"),
        tags: checker.list(frontmatter, "tags"),
        author: checker.text(frontmatter, "author"),
    };
    checker.name(fields.name.as_deref(), folder);
    checker.description(fields.description.as_deref());
    if let Some(compatibility) = &fields.compatibility {
        let length = compatibility.chars().count();
        if length > 500 {
            let message = format!("is {length} characters; the limit is 500");
            checker.report(
                Level::Error,
                "compatibility-length",
                "compatibility",
                message,
            );
        }
    }
    for key in frontmatter.keys() {
        if !KNOWN_KEYS.contains(&key.as_str()) {
            let message = "is not a key of the Agent Skills specification (kept, ignored)";
            checker.report(Level::Warning, "unknown-key", key, message.to_owned());
        }
    }
    (fields, checker.diagnostics)
}

/// Whether a name meets the spec's rule: 1–64 of `[a-z0-9-]`, no leading, trailing or double `-`.
pub fn valid_name(name: &str) -> bool {
    name_problem(name).is_none()
}

fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.chars().count() > 64 {
        return Some("must be 1–64 characters");
    }
    if !name
        .bytes()
        .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
    {
        return Some("may hold only lowercase letters a–z, digits and `-`");
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Some("must not start or end with `-` or hold `--`");
    }
    None
}

struct Checker<'a> {
    file: &'a std::path::Path,
    lines: &'a BTreeMap<String, usize>,
    diagnostics: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn report(&mut self, level: Level, rule: &'static str, field: &str, message: String) {
        let line = self.lines.get(field).copied();
        self.diagnostics
            .push(Diagnostic::new(level, self.file, rule, message).at(line, Some(field)));
    }

    /// A scalar as text: numbers and booleans are written as they read, other shapes refused.
    fn text(&mut self, frontmatter: &Frontmatter, key: &str) -> Option<String> {
        match frontmatter.get(key)? {
            Value::String(text) => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            Value::Bool(flag) => Some(flag.to_string()),
            Value::Null => None,
            Value::Array(_) | Value::Object(_) => {
                let message = "must be a single text value".to_owned();
                self.report(Level::Error, "field-type", key, message);
                None
            }
        }
    }

    /// A list, written as a YAML sequence or as one space- or comma-separated string.
    fn list(&mut self, frontmatter: &Frontmatter, key: &str) -> Vec<String> {
        match frontmatter.get(key) {
            Some(Value::String(text)) => text
                .split(|character: char| character.is_whitespace() || character == ',')
                .filter(|item| !item.is_empty())
                .map(str::to_owned)
                .collect(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_owned)
                })
                .collect(),
            Some(Value::Null) | None => Vec::new(),
            Some(_) => {
                let message = "must be a list or a space-separated string".to_owned();
                self.report(Level::Error, "field-type", key, message);
                Vec::new()
            }
        }
    }

    fn metadata(&mut self, frontmatter: &Frontmatter) -> BTreeMap<String, String> {
        let Some(value) = frontmatter.get("metadata") else {
            return BTreeMap::new();
        };
        let Value::Object(map) = value else {
            let message = "must be a map of text keys to text values".to_owned();
            self.report(Level::Error, "metadata-type", "metadata", message);
            return BTreeMap::new();
        };
        let mut metadata = BTreeMap::new();
        for (key, value) in map {
            let text = match value {
                Value::String(text) => text.clone(),
                other => {
                    let message = format!("value of `{key}` is not text; read as {other}");
                    self.report(Level::Warning, "metadata-type", "metadata", message);
                    other.to_string()
                }
            };
            metadata.insert(key.clone(), text);
        }
        metadata
    }

    fn name(&mut self, name: Option<&str>, folder: &str) {
        let Some(name) = name else {
            let message = format!("is required; the folder name `{folder}` is used");
            self.report(Level::Error, "name-required", "name", message);
            return;
        };
        if let Some(problem) = name_problem(name) {
            self.report(
                Level::Error,
                "name-format",
                "name",
                format!("`{name}` {problem}"),
            );
        }
        if name != folder {
            let message = format!("`{name}` must equal the folder name `{folder}`");
            self.report(Level::Error, "name-matches-folder", "name", message);
        }
    }

    fn description(&mut self, description: Option<&str>) {
        let Some(description) = description.filter(|text| !text.trim().is_empty()) else {
            let message = "is required: say what the skill does and when to use it".to_owned();
            self.report(Level::Fatal, "description-required", "description", message);
            return;
        };
        let length = description.chars().count();
        if length > 1024 {
            let message = format!("is {length} characters; the limit is 1024");
            self.report(Level::Error, "description-length", "description", message);
        }
        if description.contains(['<', '>']) {
            let message = "holds `<` or `>`, which some clients refuse".to_owned();
            self.report(
                Level::Warning,
                "description-angle-brackets",
                "description",
                message,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn run(value: Value, folder: &str) -> (Fields, Vec<(Level, &'static str)>) {
        let Value::Object(frontmatter) = value else {
            panic!("an object")
        };
        let (fields, diagnostics) = check(
            &frontmatter,
            folder,
            std::path::Path::new("x/SKILL.md"),
            &BTreeMap::new(),
        );
        let found = diagnostics.iter().map(|d| (d.level, d.rule)).collect();
        (fields, found)
    }

    #[test]
    fn a_spec_skill_has_no_findings() {
        let (fields, found) = run(
            json!({"name": "pdf", "description": "Merge PDFs. Use when…", "allowed-tools": "Read Bash",
                   "metadata": {"author": "me"}, "tags": ["a", "b"], "version": 1.5}),
            "pdf",
        );
        assert_eq!(found, vec![]);
        assert_eq!(fields.allowed_tools, ["Read", "Bash"]);
        assert_eq!(fields.tags, ["a", "b"]);
        assert_eq!(fields.version.as_deref(), Some("1.5"));
    }

    #[test]
    fn names_follow_the_spec() {
        for bad in [
            "",
            "Upper",
            "-lead",
            "trail-",
            "dou--ble",
            "sp ace",
            &"a".repeat(65),
        ] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        assert!(valid_name("pdf-tools-2"));
        let (_, found) = run(json!({"name": "other", "description": "d"}), "pdf");
        assert_eq!(found, vec![(Level::Error, "name-matches-folder")]);
    }

    #[test]
    fn a_missing_description_is_fatal_and_unknown_keys_are_warnings() {
        let (_, found) = run(json!({"name": "pdf", "model": "x"}), "pdf");
        assert_eq!(
            found,
            vec![
                (Level::Fatal, "description-required"),
                (Level::Warning, "unknown-key")
            ]
        );
    }

    #[test]
    fn over_long_fields_are_errors() {
        let (_, found) = run(
            json!({"name": "pdf", "description": "d".repeat(1025), "compatibility": "c".repeat(501)}),
            "pdf",
        );
        assert_eq!(
            found,
            vec![
                (Level::Error, "description-length"),
                (Level::Error, "compatibility-length")
            ]
        );
    }

    #[test]
    fn key_lines_find_top_level_keys_only() {
        let lines = key_lines("name: a\nmetadata:\n  name: b\ndescription: c\n", 2);
        assert_eq!(lines["name"], 2);
        assert_eq!(lines["description"], 5);
    }
}
