//! The manifests of a tool folder (`docs/script-tools.md#manifests`): `NAME.tool.json` beside
//! each tool's script, and the optional `group.json` of the folder. Reading one gives either the
//! manifest or the problems that keep it from being served, each naming the file, the field and
//! the fix; nothing here runs anything.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The end of a tool manifest's file name; what comes before it is the tool's name.
pub const MANIFEST_SUFFIX: &str = ".tool.json";
/// The optional manifest of a whole group.
pub const GROUP_FILE: &str = "group.json";
/// The largest manifest read, in bytes.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024;
/// The most seconds a manifest's `timeoutSeconds` may give.
pub const MAX_TIMEOUT_SECONDS: u64 = 300;

/// One tool: `NAME.tool.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    /// What the tool does and when to use it, for the model.
    pub description: String,
    /// A short human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The script, relative to the group folder.
    pub script: String,
    /// The JSON Schema of the arguments (an object).
    pub input_schema: Map<String, Value>,
    /// The JSON Schema of the result: stdout is then read as JSON and checked against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// How the arguments reach the script.
    #[serde(default)]
    pub arguments: Passing,
    /// How long the script may run (default 30, at most 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    /// Characters of the result shown to the model before it is cut (default: the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit: Option<usize>,
    /// When the user is asked before a run.
    #[serde(default)]
    pub approval: Approval,
    /// What the tool does, as hints for clients.
    #[serde(default)]
    pub annotations: Hints,
    /// The outcomes of a run, in the order `_outputPath`'s `A || B || C` names them (default:
    /// success, and `error` for a failed run). Exit code *i* chooses the *i*-th, unless
    /// `outcomeMember` names the member of the JSON output that does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcomes: Option<Vec<String>>,
    /// The member of the JSON output (a string) that names the run's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome_member: Option<String>,
}

/// The most outcomes a manifest may declare.
pub const MAX_OUTCOMES: usize = 16;

/// How the arguments reach the script.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Passing {
    /// The arguments object as JSON on stdin.
    #[default]
    Stdin,
    /// On the command line, word by word; stdin is closed.
    Argv(Vec<Word>),
}

/// One word, or a few, of a command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum Word {
    /// Written as is.
    Literal(String),
    /// An argument's value (strings as they are, other values as JSON; each item of an array
    /// its own word), left out when the call does not give it.
    Value { argument: String },
    /// `option` followed by the argument's value (repeated for each item of an array), left
    /// out when the call does not give it.
    Option { argument: String, option: String },
    /// `flag` alone, when the boolean argument is `true`.
    Flag { argument: String, flag: String },
}

impl TryFrom<Value> for Word {
    type Error = String;

    fn try_from(value: Value) -> Result<Self, String> {
        const FORMS: &str = "an argv item is a string (written as is), or {\"arg\": NAME}, \
            {\"arg\": NAME, \"option\": \"--name\"} or {\"arg\": NAME, \"flag\": \"--name\"}";
        let mut object = match value {
            Value::String(literal) => return Ok(Self::Literal(literal)),
            Value::Object(object) => object,
            other => return Err(format!("{other} is not {FORMS}")),
        };
        let Some(Value::String(argument)) = object.remove("arg") else {
            return Err(format!(
                "`arg` (the argument's name, a string) is missing: {FORMS}"
            ));
        };
        let text = |value: Value, key: &str| match value {
            Value::String(text) if !text.is_empty() => Ok(text),
            _ => Err(format!(
                "`{key}` must be a non-empty string such as \"--{argument}\""
            )),
        };
        let option = object
            .remove("option")
            .map(|v| text(v, "option"))
            .transpose()?;
        let flag = object.remove("flag").map(|v| text(v, "flag")).transpose()?;
        if let Some(key) = object.keys().next() {
            return Err(format!("unknown key `{key}`: {FORMS}"));
        }
        match (option, flag) {
            (Some(_), Some(_)) => Err(format!(
                "`{argument}` has both `option` and `flag`; a flag stands alone for a boolean, an option is followed by a value: keep one"
            )),
            (Some(option), None) => Ok(Self::Option { argument, option }),
            (None, Some(flag)) => Ok(Self::Flag { argument, flag }),
            (None, None) => Ok(Self::Value { argument }),
        }
    }
}

impl From<Word> for Value {
    fn from(word: Word) -> Self {
        match word {
            Word::Literal(literal) => Self::String(literal),
            Word::Value { argument } => serde_json::json!({"arg": argument}),
            Word::Option { argument, option } => {
                serde_json::json!({"arg": argument, "option": option})
            }
            Word::Flag { argument, flag } => serde_json::json!({"arg": argument, "flag": flag}),
        }
    }
}

impl Word {
    /// The argument the word takes its value from.
    fn argument(&self) -> Option<&str> {
        match self {
            Self::Literal(_) => None,
            Self::Value { argument }
            | Self::Option { argument, .. }
            | Self::Flag { argument, .. } => Some(argument),
        }
    }
}

/// When the user is asked before a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approval {
    /// Never.
    Auto,
    /// Once, then again whenever the script or the manifest changes.
    #[default]
    AskOnce,
    /// Every run.
    AskAlways,
}

/// What the tool does, as hints for clients; what is left out is the cautious answer: a script
/// may change anything and reach anything, unless it is `readOnly`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Hints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Default: not `readOnly`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Default: `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Hints {
    pub fn read_only(self) -> bool {
        self.read_only.unwrap_or(false)
    }

    pub fn destructive(self) -> bool {
        self.destructive.unwrap_or(!self.read_only())
    }

    pub fn idempotent(self) -> bool {
        self.idempotent.unwrap_or(false)
    }

    pub fn open_world(self) -> bool {
        self.open_world.unwrap_or(true)
    }
}

/// `group.json`: what a whole group says of itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GroupManifest {
    /// Whether the group is on when nothing else says (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// What the model reads about the group's tools, in the server's instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Rules the group declares (`Rule/{group}/{name}` variables, read on demand, or pinned
    /// with `alwaysLoad`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<crate::config::DeclaredRule>,
}

/// Why a manifest or a folder is not served, or what is worth fixing in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    /// The field at fault, when one is.
    pub field: Option<String>,
    pub message: String,
    /// Whether what the file declares is left out (a warning leaves it served).
    pub skipped: bool,
}

impl Problem {
    pub fn skipped(file: &Path, field: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            field: field.map(str::to_owned),
            message: message.into(),
            skipped: true,
        }
    }

    pub fn warning(file: &Path, message: impl Into<String>) -> Self {
        Self {
            skipped: false,
            ..Self::skipped(file, None, message)
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = if self.skipped {
            "error (skipped)"
        } else {
            "warning"
        };
        write!(formatter, "{}: {level}: ", self.file.display())?;
        if let Some(field) = &self.field {
            write!(formatter, "`{field}`: ")?;
        }
        formatter.write_str(&self.message)
    }
}

/// Reads a JSON file of at most 256 KiB; a problem names the file and what to fix.
pub fn read_json<T: serde::de::DeserializeOwned>(file: &Path) -> Result<(T, Vec<u8>), Problem> {
    let too_large = |size: u64| {
        Problem::skipped(
            file,
            None,
            format!("the file has {size} bytes; a manifest may have at most {MAX_MANIFEST_BYTES}"),
        )
    };
    let metadata = std::fs::metadata(file)
        .map_err(|error| Problem::skipped(file, None, format!("cannot be read: {error}")))?;
    if metadata.len() > MAX_MANIFEST_BYTES {
        return Err(too_large(metadata.len()));
    }
    let bytes = std::fs::read(file)
        .map_err(|error| Problem::skipped(file, None, format!("cannot be read: {error}")))?;
    let parsed = serde_json::from_slice(&bytes).map_err(|error| {
        let message = format!("{error}; the manifest is JSON as docs/script-tools.md describes");
        Problem::skipped(file, None, message)
    })?;
    Ok((parsed, bytes))
}

/// The problems of a parsed tool manifest, for the tool `name` of the group `group` whose folder
/// is `folder`: those that keep it from being served, and warnings.
pub fn check(manifest: &Manifest, file: &Path, folder: &Path, names: (&str, &str)) -> Vec<Problem> {
    let (group, name) = names;
    let mut problems = Vec::new();
    let mut problem = |field: Option<&str>, message: String| {
        problems.push(Problem::skipped(file, field, message));
    };
    let full = super::tool_name(group, name);
    if !super::valid_name(name, 64) || full.len() > 64 {
        problem(
            None,
            format!(
                "the tool name `{name}` (from the file name) makes `{full}`; a tool name has only \
                 letters, digits, `_` and `-`, and `{{group}}__{{tool}}` at most 64 characters: \
                 rename the file"
            ),
        );
    }
    if manifest.description.trim().is_empty() {
        problem(
            Some("description"),
            "is empty; say what the tool does and when the model should use it".to_owned(),
        );
    }
    if let Err(message) = script_problem(folder, &manifest.script) {
        problem(Some("script"), message);
    }
    for (field, schema) in [
        ("inputSchema", Some(&manifest.input_schema)),
        ("outputSchema", manifest.output_schema.as_ref()),
    ] {
        if let Some(schema) = schema
            && let Err(message) = schema_problem(schema)
        {
            problem(Some(field), message);
        }
    }
    if let Passing::Argv(words) = &manifest.arguments {
        for message in argv_problems(words, &manifest.input_schema) {
            problem(Some("arguments"), message);
        }
    }
    run_problems(manifest, &mut problem);
    if manifest.annotations.read_only() && manifest.annotations.destructive() {
        problem(
            Some("annotations"),
            "`readOnly` and `destructive` are both true; a tool that changes nothing cannot \
             destroy anything: set `destructive` to false, or `readOnly` to false"
                .to_owned(),
        );
    }
    for (field, schema) in [
        ("inputSchema", Some(&manifest.input_schema)),
        ("outputSchema", manifest.output_schema.as_ref()),
    ] {
        if schema.is_some_and(refers) {
            problems.push(Problem {
                field: Some(field.to_owned()),
                ..Problem::warning(
                    file,
                    "uses `$ref`, which clients that resolve no references cannot read (the \
                     schema reaches them as written); write the referenced schemas in place",
                )
            });
        }
    }
    problems
}

/// What is wrong with what a run is given and gives: its timeout, its output limit, its
/// outcomes.
fn run_problems(manifest: &Manifest, problem: &mut impl FnMut(Option<&str>, String)) {
    if let Some(seconds) = manifest.timeout_seconds
        && !(1..=MAX_TIMEOUT_SECONDS).contains(&seconds)
    {
        problem(
            Some("timeoutSeconds"),
            format!("is {seconds}; give 1 to {MAX_TIMEOUT_SECONDS} seconds"),
        );
    }
    if manifest.output_limit == Some(0) {
        problem(
            Some("outputLimit"),
            "is 0; give the number of characters shown before a result is cut, or leave it out \
             for the server's limit"
                .to_owned(),
        );
    }
    for (field, message) in outcome_problems(manifest) {
        problem(Some(field), message);
    }
}

/// What is wrong with the declared outcomes: names (1 to 40 letters, digits, `_` or `-`), at
/// most [`MAX_OUTCOMES`], none twice; an `outcomeMember` needs outcomes and an output schema.
/// Each with its field.
fn outcome_problems(manifest: &Manifest) -> Vec<(&'static str, String)> {
    let mut problems = Vec::new();
    if let Some(outcomes) = &manifest.outcomes {
        if outcomes.is_empty() || outcomes.len() > MAX_OUTCOMES {
            problems.push((
                "outcomes",
                format!(
                    "declares {} outcomes; declare 1 to {MAX_OUTCOMES} names, in the order `||` \
                     names them",
                    outcomes.len()
                ),
            ));
        }
        for (index, name) in outcomes.iter().enumerate() {
            if !super::valid_name(name, 40) {
                problems.push((
                    "outcomes",
                    format!(
                        "`{name}` is not an outcome name; use 1 to 40 letters, digits, `_` or `-`"
                    ),
                ));
            } else if outcomes[..index].contains(name) {
                problems.push((
                    "outcomes",
                    format!("`{name}` is declared twice; name each outcome once"),
                ));
            }
        }
    }
    if let Some(member) = &manifest.outcome_member {
        if manifest.outcomes.is_none() {
            problems.push((
                "outcomeMember",
                format!(
                    "`{member}` chooses among `outcomes`, which the manifest does not declare; \
                     add them, or remove `outcomeMember`"
                ),
            ));
        }
        if manifest.output_schema.is_none() {
            problems.push((
                "outcomeMember",
                format!(
                    "`{member}` is a member of the JSON output, and the manifest declares no \
                     `outputSchema`; add one that has `{member}`"
                ),
            ));
        }
    }
    problems
}

/// Whether a schema refers to another (`$ref`, `$dynamicRef`) anywhere in it.
fn refers(schema: &Map<String, Value>) -> bool {
    let mut pending: Vec<&Map<String, Value>> = vec![schema];
    while let Some(object) = pending.pop() {
        if object.contains_key("$ref") || object.contains_key("$dynamicRef") {
            return true;
        }
        for value in object.values() {
            match value {
                Value::Object(inner) => pending.push(inner),
                Value::Array(items) => pending.extend(items.iter().filter_map(Value::as_object)),
                _ => {}
            }
        }
    }
    false
}

/// Why the script cannot be the tool's: a path leaving the folder, a missing or unrunnable file.
fn script_problem(folder: &Path, script: &str) -> Result<(), String> {
    let relative = Path::new(script);
    let leaves = relative.is_absolute()
        || relative
            .components()
            .any(|component| !matches!(component, std::path::Component::Normal(_)));
    if script.is_empty() || leaves {
        return Err(format!(
            "`{script}` is not a path inside the group folder; give the script's file name, \
             such as \"count.py\""
        ));
    }
    let path = folder.join(relative);
    let inside = std::fs::canonicalize(&path)
        .ok()
        .zip(std::fs::canonicalize(folder).ok())
        .is_some_and(|(path, folder)| path.starts_with(folder));
    if !path.is_file() {
        return Err(format!(
            "`{script}` is not a file of {}; put the script there or fix the name",
            folder.display()
        ));
    }
    if !inside {
        return Err(format!(
            "`{script}` is a link that leaves the group folder; put the script itself in the folder"
        ));
    }
    if !crate::runner::runnable(&path) {
        return Err(format!(
            "`{script}` has no known extension (.sh, .py, .js, .mjs) and is not executable; \
             rename it or make it executable (chmod +x) with a shebang line"
        ));
    }
    Ok(())
}

/// Why a schema cannot be a tool's: not an object schema, or not valid JSON Schema 2020-12.
fn schema_problem(schema: &Map<String, Value>) -> Result<(), String> {
    if schema.get("type") != Some(&Value::from("object")) {
        return Err(
            "must describe an object: add \"type\": \"object\" at its top (MCP tools take and \
             give objects)"
                .to_owned(),
        );
    }
    let value = Value::Object(schema.clone());
    if let Err(error) = jsonschema::meta::validate(&value) {
        return Err(format!(
            "is not a valid JSON Schema: {error} (at `{}`)",
            error.instance_path()
        ));
    }
    super::compile(&value).map(drop)
}

/// Why argv words cannot work with the input schema: an argument it does not declare, a flag
/// for an argument that is not a boolean.
fn argv_problems(words: &[Word], input_schema: &Map<String, Value>) -> Vec<String> {
    let properties = input_schema.get("properties").and_then(Value::as_object);
    let mut problems = Vec::new();
    for word in words {
        let Some(argument) = word.argument() else {
            continue;
        };
        let Some(property) = properties.and_then(|properties| properties.get(argument)) else {
            problems.push(format!(
                "`{argument}` is not a property of `inputSchema`; name one of its properties"
            ));
            continue;
        };
        let declared = property.get("type").and_then(Value::as_str);
        if matches!(word, Word::Flag { .. }) && declared.is_some_and(|kind| kind != "boolean") {
            problems.push(format!(
                "the flag for `{argument}` needs a boolean argument, but `{argument}` is a \
                 {}; use `option` to pass its value",
                declared.unwrap_or_default()
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn folder_with_script() -> tempfile::TempDir {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("count.py"), "print(1)\n").unwrap();
        folder
    }

    fn manifest(value: Value) -> Manifest {
        serde_json::from_value(value).unwrap()
    }

    fn messages(problems: &[Problem]) -> Vec<String> {
        problems
            .iter()
            .map(|problem| {
                format!(
                    "{}: {}",
                    problem.field.as_deref().unwrap_or("-"),
                    problem.message
                )
            })
            .collect()
    }

    #[test]
    fn a_minimal_manifest_takes_the_defaults() {
        let folder = folder_with_script();
        let parsed = manifest(json!({
            "description": "Counts.",
            "script": "count.py",
            "inputSchema": {"type": "object"}
        }));
        assert_eq!(parsed.arguments, Passing::Stdin);
        assert_eq!(parsed.approval, Approval::AskOnce);
        assert_eq!(parsed.annotations, Hints::default());
        let file = folder.path().join("count.tool.json");
        assert_eq!(check(&parsed, &file, folder.path(), ("text", "count")), []);
    }

    #[test]
    fn argv_words_read_in_every_form_and_round_trip() {
        let words = json!(["count", {"arg": "path"}, {"arg": "lines", "option": "--lines"},
            {"arg": "verbose", "flag": "-v"}]);
        let parsed: Passing = serde_json::from_value(json!({"argv": words})).unwrap();
        let Passing::Argv(read) = &parsed else {
            panic!("not argv: {parsed:?}")
        };
        assert_eq!(
            read[2],
            Word::Option {
                argument: "lines".to_owned(),
                option: "--lines".to_owned()
            }
        );
        assert_eq!(
            serde_json::to_value(&parsed).unwrap(),
            json!({"argv": words})
        );
        let both = serde_json::from_value::<Passing>(
            json!({"argv": [{"arg": "x", "flag": "-x", "option": "--x"}]}),
        )
        .unwrap_err();
        assert!(
            both.to_string().contains("both `option` and `flag`"),
            "{both}"
        );
    }

    #[test]
    fn outcomes_are_named_once_and_a_member_needs_them_and_an_output_schema() {
        let folder = folder_with_script();
        let file = folder.path().join("count.tool.json");
        let declared = |extra: Value| {
            let mut value = json!({"description": "d", "script": "count.py",
                "inputSchema": {"type": "object"}});
            value
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            messages(&check(
                &manifest(value),
                &file,
                folder.path(),
                ("text", "count"),
            ))
        };
        assert_eq!(
            declared(json!({"outcomes": ["found", "found", "no way"], "outcomeMember": "status"})),
            [
                "outcomes: `found` is declared twice; name each outcome once",
                "outcomes: `no way` is not an outcome name; use 1 to 40 letters, digits, `_` or `-`",
                "outcomeMember: `status` is a member of the JSON output, and the manifest \
                 declares no `outputSchema`; add one that has `status`"
            ]
        );
        assert_eq!(
            declared(json!({"outcomeMember": "status", "outputSchema": {"type": "object"}})),
            [
                "outcomeMember: `status` chooses among `outcomes`, which the manifest does not \
              declare; add them, or remove `outcomeMember`"
            ]
        );
        assert_eq!(
            declared(json!({"outcomes": ["found", "missing", "error"]})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_problem_names_its_field_and_the_fix() {
        let folder = folder_with_script();
        let broken = manifest(json!({
            "description": " ",
            "script": "../count.py",
            "inputSchema": {"type": "array"},
            "outputSchema": {"type": "object", "properties": {"n": {"type": "nope"}}},
            "arguments": {"argv": [{"arg": "missing"}, {"arg": "n", "flag": "-n"}]},
            "timeoutSeconds": 0,
            "annotations": {"readOnly": true, "destructive": true}
        }));
        let file = folder.path().join("bad name.tool.json");
        let found = messages(&check(&broken, &file, folder.path(), ("text", "bad name")));
        let fields: Vec<&str> = found
            .iter()
            .map(|message| message.split(':').next().unwrap())
            .collect();
        assert_eq!(
            fields,
            [
                "-",
                "description",
                "script",
                "inputSchema",
                "outputSchema",
                "arguments",
                "arguments",
                "timeoutSeconds",
                "annotations"
            ],
            "{found:#?}"
        );
        assert!(
            found[2].contains("not a path inside the group folder"),
            "{}",
            found[2]
        );
        assert!(found[3].contains("\"type\": \"object\""), "{}", found[3]);
        assert!(found[4].contains("not a valid JSON Schema"), "{}", found[4]);
    }

    #[test]
    fn a_reference_in_a_schema_is_a_warning() {
        let folder = folder_with_script();
        let referring = manifest(json!({
            "description": "Counts.",
            "script": "count.py",
            "inputSchema": {"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}},
                "$defs": {"n": {"type": "integer"}}}
        }));
        let file = folder.path().join("count.tool.json");
        let found = check(&referring, &file, folder.path(), ("text", "count"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(!found[0].skipped && found[0].field.as_deref() == Some("inputSchema"));
    }

    #[test]
    fn unknown_fields_are_named_with_their_line() {
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join("x.tool.json");
        std::fs::write(&file, "{\n  \"description\": \"d\",\n  \"timeout\": 5\n}\n").unwrap();
        let problem = read_json::<Manifest>(&file).unwrap_err();
        assert!(
            problem.message.contains("unknown field `timeout`")
                && problem.message.contains("line 3"),
            "{problem}"
        );
    }
}
