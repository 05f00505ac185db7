//! Results every client accepts: structured content cut to the output limit that still matches
//! the tool's output schema and says where the whole is, and `_outputPath` `||` / `&&` answers
//! that never claim a success without the declared structure.

use pretty_assertions::assert_eq;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

use crate::common::{Client, Elicitation, TestClient, call, is_error, spawn_binary, text};

/// Checks `value` against `schema` for the keywords the tools' output schemas use (`type`,
/// `properties`, `required`, `additionalProperties`, `items`, `$ref` into `$defs`, `anyOf`,
/// `oneOf`, `const`, `enum`, `minimum`); panics naming the first mismatch.
fn assert_matches(value: &Value, schema: &Value) {
    if let Err(problem) = check(value, schema, schema, "") {
        panic!("structured content does not match its output schema: {problem}\n{value}");
    }
}

fn check(value: &Value, schema: &Value, root: &Value, path: &str) -> Result<(), String> {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = root
            .pointer(reference.trim_start_matches('#'))
            .ok_or_else(|| format!("{path}: dangling {reference}"))?;
        return check(value, target, root, path);
    }
    if let Some(types) = schema.get("type") {
        let name = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let admitted = |kind: &Value| kind == name || (kind == "number" && name == "integer");
        let fits = match types {
            Value::Array(kinds) => kinds.iter().any(admitted),
            kind => admitted(kind),
        };
        if !fits {
            return Err(format!("{path}: {name} where the schema says {types}"));
        }
    }
    for (keyword, any) in [("anyOf", true), ("oneOf", false)] {
        if let Some(branches) = schema.get(keyword).and_then(Value::as_array) {
            let matching = branches
                .iter()
                .filter(|branch| check(value, branch, root, path).is_ok())
                .count();
            if (any && matching == 0) || (!any && matching != 1) {
                return Err(format!("{path}: {matching} branches of {keyword} match"));
            }
        }
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        return Err(format!("{path}: {value} is not {constant}"));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return Err(format!("{path}: {value} is not one of {options:?}"));
    }
    if let (Some(minimum), Some(number)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) && number < minimum
    {
        return Err(format!("{path}: {number} < {minimum}"));
    }
    if let Value::Object(members) = value {
        check_object(members, schema, root, path)?;
    }
    if let (Value::Array(items), Some(items_schema)) = (value, schema.get("items")) {
        for (index, item) in items.iter().enumerate() {
            check(item, items_schema, root, &format!("{path}/{index}"))?;
        }
    }
    Ok(())
}

fn check_object(
    members: &Map<String, Value>,
    schema: &Value,
    root: &Value,
    path: &str,
) -> Result<(), String> {
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = required.as_str().unwrap();
        if !members.contains_key(key) {
            return Err(format!("{path}: required `{key}` is missing"));
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, member) in members {
        match properties.and_then(|properties| properties.get(key)) {
            Some(declared) => check(member, declared, root, &format!("{path}/{key}"))?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    return Err(format!("{path}: `{key}` is not allowed"));
                }
                Some(extra) if extra.is_object() => {
                    check(member, extra, root, &format!("{path}/{key}"))?;
                }
                _ => {}
            },
        }
    }
    Ok(())
}

async fn output_schema(client: &Client, tool: &str) -> Value {
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools.iter().find(|listed| listed.name == tool).unwrap();
    Value::Object(tool.output_schema.clone().unwrap().as_ref().clone())
}

fn structure(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("no structured content: {}", text(result)))
}

fn json_length(value: &Value) -> usize {
    serde_json::to_string(value).unwrap().len()
}

/// A template of 248,033 characters: many members, long strings and a long array.
fn big_template() -> Value {
    let mut template = Map::new();
    for index in 0..2_000 {
        template.insert(
            format!("npc{index:04}"),
            json!({"mood": "calm", "hp": index, "notes": "n".repeat(60)}),
        );
    }
    template.insert("lore".to_owned(), json!("L".repeat(40_000)));
    template.insert("log".to_owned(), json!(vec!["entry"; 5_000]));
    Value::Object(template)
}

#[tokio::test]
async fn structured_content_is_cut_to_the_output_limit_and_still_matches_its_schema() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let template = big_template();
    let set = call(
        &client,
        "TemplateSet",
        json!({"characterId": "hero", "template": template}),
    )
    .await;
    assert!(!is_error(&set), "{}", text(&set));
    let schema = output_schema(&client, "TemplateGet").await;

    for (limit, slack) in [(None, 2_000), (Some(200), 700)] {
        let mut arguments = json!({"characterId": "hero"});
        if let Some(limit) = limit {
            arguments["_outputLimit"] = json!(limit);
        }
        let got = call(&client, "TemplateGet", arguments).await;
        assert!(!is_error(&got), "{}", text(&got));
        let cut = structure(&got);
        assert_matches(cut, &schema);
        let limit = limit.unwrap_or(10_000);
        assert!(
            json_length(cut) <= limit + slack,
            "{} characters of structure for a limit of {limit}",
            json_length(cut)
        );
        assert!(text(&got).chars().count() <= limit + 1_000, "text too long");
        assert_eq!(cut["characterId"], json!("hero"));
        let about = &cut["_truncated"];
        let variable = about["variable"].as_str().expect("the cached variable");
        assert_eq!(
            about["reference"],
            json!(format!("$VAR_REF{{{{{variable}}}}}"))
        );
        assert!(!about["omitted"].as_array().unwrap().is_empty(), "{about}");
        assert!(
            text(&got).contains(&format!("$VAR_REF{{{{{variable}")),
            "the text hint names the variable: {}",
            text(&got)
        );
        // The whole result is in the variable.
        let whole = call(
            &client,
            "ReadVar",
            json!({"name": variable, "start": 0, "length": 1_000_000}),
        )
        .await;
        let whole = text(&whole);
        let body = whole.split_once('\n').unwrap().1;
        let stored: Value = serde_json::from_str(body).unwrap();
        assert_eq!(stored["template"], template);
    }
    // Everything when asked for.
    let all = call(
        &client,
        "TemplateGet",
        json!({"characterId": "hero", "_outputLimit": -1}),
    )
    .await;
    assert_eq!(structure(&all)["template"], template);
    assert!(structure(&all).get("_truncated").is_none());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_long_variable_list_is_cut_to_whole_items_with_a_count_of_the_rest() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    for index in 0..400 {
        let written = call(
            &client,
            "WriteVar",
            json!({"name": format!("item-{index:03}"), "value": "v", "desc": "d".repeat(200)}),
        )
        .await;
        assert!(!is_error(&written), "{}", text(&written));
    }
    let schema = output_schema(&client, "ListVars").await;
    let listed = call(&client, "ListVars", json!({})).await;
    let cut = structure(&listed);
    assert_matches(cut, &schema);
    assert!(json_length(cut) <= 12_000, "{}", json_length(cut));
    let kept = cut["variables"].as_array().unwrap();
    let total = cut["count"].as_u64().unwrap();
    assert!(total >= 400, "{total}");
    let omitted = &cut["_truncated"]["omitted"][0];
    assert_eq!(omitted["path"], json!("/variables"), "{cut}");
    assert_eq!(
        kept.len() as u64 + omitted["items"].as_u64().unwrap(),
        total,
        "kept + omitted = all"
    );
    // ListVars caches nothing, so the hint says how to see everything.
    assert!(
        cut["_truncated"]["hint"]
            .as_str()
            .unwrap()
            .contains("_outputLimit"),
        "{}",
        cut["_truncated"]
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn output_paths_never_claim_a_success_without_the_declared_structure() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    // `||` catches the failure of a tool with an output schema: the error is stored as data,
    // and the answer is an error result (no structure of the declared shape exists).
    let caught = call(
        &client,
        "WriteVar",
        json!({"name": "Rule/Agent/VarRef", "value": "x",
            "_outputPath": "†state.ok || †state.failed"}),
    )
    .await;
    assert!(is_error(&caught), "{caught:?}");
    assert_eq!(caught.structured_content, None);
    assert!(
        text(&caught).contains("written to †state.failed as data"),
        "{}",
        text(&caught)
    );
    let stored = call(&client, "ReadState", json!({"path": "failed"})).await;
    assert!(
        text(&stored).contains("Rule/Agent/VarRef"),
        "{}",
        text(&stored)
    );

    // `&&` on a success keeps the structure and writes it to both paths.
    let schema = output_schema(&client, "WriteVar").await;
    let both = call(
        &client,
        "WriteVar",
        json!({"name": "k", "value": "v", "_outputPath": "†state.a && †state.b"}),
    )
    .await;
    assert!(!is_error(&both), "{}", text(&both));
    assert_matches(structure(&both), &schema);
    assert!(text(&both).contains("[Written to"), "{}", text(&both));
}
