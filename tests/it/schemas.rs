//! The JSON Schemas in `schemas/` are generated from the code; this test fails when they drift.
//! `UPDATE_GOLDEN=1 cargo test` rewrites them. Every tool schema a client lists is also checked
//! for what real clients reject: boolean schemas, `type` lists, `null` in optional fields,
//! formats outside JSON Schema's own, unresolved `$ref`s, schemas that constrain nothing.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use synapse_mcp::tools::{Annotations, Origin, ToolDefinition, ToolGroup, ToolOutput};

use crate::common::{
    Double, Elicitation, Nothing, TestClient, assert_golden, call, in_process, spawn_binary,
    test_server,
};

#[test]
fn tool_schemas_match_the_published_files() {
    let server = test_server("");
    for group in server.executor().registry().groups() {
        if group.name == "test" {
            continue;
        }
        for tool in &group.tools {
            let definition = tool.definition();
            let input = Value::Object(definition.input_schema.as_ref().clone());
            assert_golden(
                &format!("schemas/tools/{}.input.json", definition.name),
                &input,
            );
            if let Some(output) = &definition.output_schema {
                let output = Value::Object(output.as_ref().clone());
                assert_golden(
                    &format!("schemas/tools/{}.output.json", definition.name),
                    &output,
                );
            }
        }
    }
}

#[test]
fn the_config_file_schema_matches_the_published_file() {
    let schema = schemars::schema_for!(synapse_mcp::config::FileConfig);
    assert_golden(
        "schemas/config.json",
        &serde_json::to_value(schema).unwrap(),
    );
}

#[test]
fn the_workspace_export_schema_matches_the_published_file() {
    let schema = schemars::schema_for!(synapse_mcp::store::export::WorkspaceExport);
    assert_golden(
        "schemas/workspace-export.json",
        &serde_json::to_value(schema).unwrap(),
    );
}

/// The only spelling of "any JSON value" a tool schema uses: one single-typed branch per JSON
/// type (the only place `null` may appear).
fn any_value() -> Value {
    json!({"anyOf": [
        {"type": "object"},
        {"type": "array"},
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
    ]})
}

const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords that constrain a value (Inspector's `--strict` list).
const CONSTRAINING_KEYWORDS: [&str; 39] = [
    "$ref",
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "items",
    "prefixItems",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "dependentSchemas",
    "unevaluatedItems",
];

/// Where `false` ("nothing else") is the usual spelling and every client takes a boolean.
const BOOLEAN_VALUED_KEYWORDS: [&str; 4] = [
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];

/// What a client would reject in `schema` (found at `at`, under `keyword` of its parent).
fn portability_problems(
    schema: &Value,
    at: &str,
    keyword: Option<&str>,
    problems: &mut Vec<String>,
) {
    let object = match schema {
        Value::Bool(false)
            if keyword.is_some_and(|name| BOOLEAN_VALUED_KEYWORDS.contains(&name)) =>
        {
            return;
        }
        Value::Object(object) => object,
        other => {
            problems.push(format!("{at}: `{other}` where a schema object is expected"));
            return;
        }
    };
    let mut without_notes = object.clone();
    without_notes.remove("description");
    without_notes.remove("title");
    if Value::Object(without_notes) == any_value() {
        return;
    }
    match object.get("type") {
        Some(Value::Array(types)) => problems.push(format!(
            "{at}: `type` is a list {types:?}; single-`type` dialects reject it"
        )),
        Some(Value::String(name)) if name == "null" => {
            problems.push(format!("{at}: `null` type (leave the field out instead)"));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = object.get("enum")
        && values.contains(&Value::Null)
    {
        problems.push(format!("{at}: `null` in `enum`"));
    }
    if let Some(format) = object.get("format")
        && !format
            .as_str()
            .is_some_and(|format| STANDARD_FORMATS.contains(&format))
    {
        problems.push(format!("{at}: non-standard format {format}"));
    }
    for name in ["nullable", "$ref", "$defs", "definitions", "$dynamicRef"] {
        if object.contains_key(name) {
            problems.push(format!(
                "{at}: `{name}` (tool schemas are inlined JSON Schema)"
            ));
        }
    }
    if keyword != Some("not")
        && !CONSTRAINING_KEYWORDS
            .iter()
            .any(|name| object.contains_key(*name))
    {
        problems.push(format!("{at}: constrains nothing (say what the value is)"));
    }
    for (name, value) in object {
        let child = |suffix: &str| format!("{at}/{name}{suffix}");
        match (name.as_str(), value) {
            (
                "items"
                | "contains"
                | "not"
                | "propertyNames"
                | "if"
                | "then"
                | "else"
                | "contentSchema"
                | "additionalProperties"
                | "unevaluatedProperties"
                | "additionalItems"
                | "unevaluatedItems",
                subschema,
            ) => portability_problems(subschema, &child(""), Some(name), problems),
            ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(subschemas)) => {
                for (index, subschema) in subschemas.iter().enumerate() {
                    portability_problems(
                        subschema,
                        &child(&format!("/{index}")),
                        Some(name),
                        problems,
                    );
                }
            }
            (
                "properties" | "patternProperties" | "dependentSchemas",
                Value::Object(subschemas),
            ) => {
                for (key, subschema) in subschemas {
                    portability_problems(
                        subschema,
                        &child(&format!("/{key}")),
                        Some(name),
                        problems,
                    );
                }
            }
            _ => {}
        }
    }
}

/// Every problem of one tool schema, including not being a valid 2020-12 object schema.
fn schema_problems(schema: &Map<String, Value>, at: &str) -> Vec<String> {
    let schema = Value::Object(schema.clone());
    let mut problems = Vec::new();
    if let Err(error) = jsonschema::draft202012::meta::validate(&schema) {
        problems.push(format!("{at}: not a valid 2020-12 schema: {error}"));
    }
    if let Err(error) = jsonschema::draft202012::new(&schema) {
        problems.push(format!("{at}: does not compile: {error}"));
    }
    if schema["type"] != "object" {
        problems.push(format!("{at}: the root is not `type: object`"));
    }
    portability_problems(&schema, at, None, &mut problems);
    problems
}

#[tokio::test]
async fn every_listed_tool_schema_is_portable_json_schema_2020_12() {
    let (_server, client) = in_process(
        "[groups]\nscripts = true\nsnapshots = true\n",
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    for expected in [
        "RunPlan",
        "SnapshotApply",
        "SnapshotProcess",
        "SkillRunScript",
        "Echo",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} is not listed: {names:?}"
        );
    }
    let mut problems = Vec::new();
    for tool in &tools {
        problems.extend(schema_problems(
            &tool.input_schema,
            &format!("{} inputSchema", tool.name),
        ));
        if let Some(output) = &tool.output_schema {
            problems.extend(schema_problems(
                output,
                &format!("{} outputSchema", tool.name),
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_portability_check_names_what_clients_reject() {
    let Value::Object(schema) = json!({
        "type": "object",
        "properties": {
            "snapshot": true,
            "position": {"type": ["integer", "null"], "format": "uint", "minimum": 0},
            "steps": {"type": "array", "items": {"$ref": "#/$defs/Step"}},
            "input": {"description": "Anything."},
            "closed": {"type": "object", "additionalProperties": false},
            "any": any_value(),
        },
        "$defs": {"Step": {"type": "object"}}
    }) else {
        unreachable!()
    };
    pretty_assertions::assert_eq!(
        schema_problems(&schema, "T"),
        [
            "T: `$defs` (tool schemas are inlined JSON Schema)",
            "T/properties/snapshot: `true` where a schema object is expected",
            "T/properties/position: `type` is a list [String(\"integer\"), String(\"null\")]; \
             single-`type` dialects reject it",
            "T/properties/position: non-standard format \"uint\"",
            "T/properties/steps/items: `$ref` (tool schemas are inlined JSON Schema)",
            "T/properties/input: constrains nothing (say what the value is)",
        ]
    );
}

/// The output a `Counter` claims to return.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Count {
    count: u32,
}

#[tokio::test]
async fn a_result_that_breaks_its_output_schema_fails_the_calling_test() {
    let (server, client) = in_process("", TestClient::new(Elicitation::Unsupported)).await;
    // A tool whose structured content breaks its own output schema.
    let counter = ToolDefinition::new::<Nothing>("Counter", "Counts.", Annotations::default())
        .with_output::<Count>();
    let counter = Double::with_definition(counter, |_: Nothing| async {
        Ok(ToolOutput::Structured(json!({"count": "three"})))
    });
    let group = ToolGroup {
        name: "counting".to_owned(),
        origin: Origin::BuiltIn,
        about: None,
        tools: vec![counter],
        rule_prompt: None,
        rules: Vec::new(),
    };
    server.executor().register_group(group, true).unwrap();
    let client = Arc::new(client);
    let calling = Arc::clone(&client);
    let task = tokio::spawn(async move { call(&calling, "Counter", json!({})).await });
    let panic = task.await.unwrap_err().into_panic();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.starts_with(
            "Counter's structuredContent does not match its outputSchema:\nat `/count`: "
        ),
        "{message}"
    );
}

#[tokio::test]
async fn a_missing_template_is_left_out_rather_than_sent_as_null() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let result = call(&client, "TemplateGet", json!({"characterId": "nobody"})).await;
    pretty_assertions::assert_eq!(
        result.structured_content,
        Some(json!({"characterId": "nobody"}))
    );
}

#[tokio::test]
async fn an_optional_argument_given_as_null_is_left_out_in_a_plan_as_in_a_direct_call() {
    let client = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let direct = call(&client, "ListVars", json!({"filter": null})).await;
    assert_eq!(direct.is_error, Some(false), "{direct:?}");
    let planned = call(
        &client,
        "RunPlan",
        json!({"steps": [{"_id": "list", "_tool": "ListVars", "filter": null}]}),
    )
    .await;
    assert_eq!(planned.is_error, Some(false), "{planned:?}");
    let structured = planned.structured_content.unwrap();
    pretty_assertions::assert_eq!(structured["ok"], json!(true));
}
