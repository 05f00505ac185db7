//! The executor's default truncation: keep the head and the tail,
//! replace the middle with a marker that says how much was left out and where it starts.
//! Structured content is cut to the same limit in `truncate/structure.rs`.

mod structure;

use serde_json::{Map, Value};

use super::{Tool, ToolOutput, Truncation};
use crate::json::compact_length;
pub(super) use crate::text::{Truncated, truncate_content};

pub(crate) use structure::{Fitted, Omitted, allows_extra_member, fit_structure};

/// The meta-argument that sets the output limit of one call, in characters; `0` or `-1` means
/// no truncation. The leading underscore keeps it apart from every tool's own parameters.
pub const OUTPUT_LIMIT_ARGUMENT: &str = "_outputLimit";

/// The formatted text cut to the limit, unless the tool is never truncated.
pub(super) fn truncate(
    tool: &dyn Tool,
    formatted: &str,
    limit: Option<usize>,
) -> Option<Truncated> {
    let limit = limit?;
    if tool.definition().truncation == Truncation::Never {
        return None;
    }
    truncate_content(formatted, limit)
}

pub(super) fn truncation_hint(cut: &Truncated, formatted: &str, variable: Option<&str>) -> String {
    let total = formatted.chars().count();
    let Some(variable) = variable else {
        return format!(
            "[Output truncated: {total} characters in all. Call again with {OUTPUT_LIMIT_ARGUMENT}: -1 to see everything.]"
        );
    };
    let (start, length) = (cut.omitted_start, cut.omitted_length);
    format!(
        "[Output truncated: the full result ({total} characters) is in variable `{variable}`. \
         Read the omitted part with ReadVar {{\"name\": \"{variable}\", \"start\": {start}, \"length\": {length}}} \
         or pass $VAR_REF{{{{{variable}:{start}:{length}}}}} to another tool; $VAR_REF{{{{{variable}}}}} is the whole text.]"
    )
}

/// The member of cut structured content that says what was cut and where the whole is.
const TRUNCATED_MEMBER: &str = "_truncated";
/// Cuts listed one by one in [`TRUNCATED_MEMBER`]; the rest are counted.
const LISTED_CUTS: usize = 10;

/// Structured content cut to the output limit, described in a `_truncated` member where the
/// schema allows one.
pub(super) fn cut_structure(
    tool: &dyn Tool,
    output: &ToolOutput,
    limit: Option<usize>,
    variable: Option<&str>,
) -> Option<Fitted> {
    let (ToolOutput::Structured(value), Some(limit)) = (output, limit) else {
        return None;
    };
    // Most results fit: measured without allocating, before the schema is copied for the walk.
    if compact_length(value) <= limit {
        return None;
    }
    let schema = tool.definition().output_schema.as_ref()?;
    let schema = Value::Object(schema.as_ref().clone());
    let mut fitted = fit_structure(value, &schema, limit)?;
    if let Value::Object(members) = &mut fitted.value
        && allows_extra_member(&schema, TRUNCATED_MEMBER)
    {
        let mut about = Map::new();
        match variable {
            Some(variable) => {
                about.insert("variable".to_owned(), Value::from(variable));
                about.insert(
                    "reference".to_owned(),
                    Value::from(format!("$VAR_REF{{{{{variable}}}}}")),
                );
            }
            None => {
                about.insert(
                    "hint".to_owned(),
                    Value::from(format!("call again with {OUTPUT_LIMIT_ARGUMENT}: -1")),
                );
            }
        }
        let cuts: Vec<Value> = fitted
            .omissions
            .iter()
            .take(LISTED_CUTS)
            .map(|omission| {
                let (unit, count) = match omission.what {
                    Omitted::Characters(count) => ("characters", count),
                    Omitted::Items(count) => ("items", count),
                    Omitted::Members(count) => ("members", count),
                };
                serde_json::json!({"path": omission.path, unit: count})
            })
            .collect();
        about.insert("omitted".to_owned(), Value::Array(cuts));
        if fitted.omissions.len() > LISTED_CUTS {
            about.insert(
                "moreCuts".to_owned(),
                Value::from(fitted.omissions.len() - LISTED_CUTS),
            );
        }
        members.insert(TRUNCATED_MEMBER.to_owned(), Value::Object(about));
    }
    Some(fitted)
}

/// The text hint for structured content that was cut while the text was not.
pub(super) fn structure_hint(cut: &Fitted, variable: Option<&str>) -> String {
    let cuts = cut.omissions.len();
    match variable {
        Some(variable) => format!(
            "[Structured content cut to the output limit ({cuts} cuts): the full result is in \
             variable `{variable}`. Read it with ReadVar {{\"name\": \"{variable}\", \"start\": 0}} \
             or pass $VAR_REF{{{{{variable}}}}} to another tool.]"
        ),
        None => format!(
            "[Structured content cut to the output limit ({cuts} cuts). Call again with \
             {OUTPUT_LIMIT_ARGUMENT}: -1 to see everything.]"
        ),
    }
}
