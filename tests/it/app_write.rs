//! A person's writes through the workspace view: `AppWriteVar`, the view's own tool. It is
//! listed only to a client that declares the MCP Apps extension, marked `visibility: ["app"]`
//! so that its host keeps it from the model; any other client, and any plan, is refused it as
//! an unknown tool. It writes variables typed `USER_ADD`, with `WriteVar`'s bounds and errors.

use pretty_assertions::assert_eq;
use rmcp::model::{CallToolRequestParams, Tool};
use serde_json::{Value, json};

use crate::common::{Client, Elicitation, TestClient, call, call_error, spawn_binary, text};

fn with_apps() -> TestClient {
    TestClient::new(Elicitation::Unsupported).with_apps()
}

/// A call's whole answer: the result as JSON, or the JSON-RPC error as the client shows it.
async fn answer(client: &Client, tool: &str, arguments: Value) -> Result<Value, String> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .map(|result| serde_json::to_value(result).unwrap())
        .map_err(|error| error.to_string())
}

/// A tool error's whole result.
fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

/// The variables `ListVars` lists but the rules, each as it reports it but for the time of its
/// last update.
async fn listed(client: &Client) -> Vec<Value> {
    let listing = call(client, "ListVars", json!({})).await;
    let variables = listing.structured_content.unwrap()["variables"].clone();
    let Value::Array(mut variables) = variables else {
        panic!("variables are a list: {variables}")
    };
    variables.retain(|variable| variable["type"] != "RULE");
    for variable in &mut variables {
        variable.as_object_mut().unwrap().remove("updated");
    }
    variables
}

#[tokio::test]
async fn only_a_client_that_renders_apps_lists_it_marked_for_the_app_alone() {
    let client = spawn_binary(&[], with_apps()).await;
    let without_apps = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let (app_only, others): (Vec<Tool>, Vec<Tool>) = (client.list_all_tools().await.unwrap())
        .into_iter()
        .partition(|tool| tool.name == "AppWriteVar");
    assert_eq!(
        serde_json::to_value(&app_only).unwrap(),
        json!([{
            "name": "AppWriteVar",
            "title": "Write a variable (you)",
            "description": "Create or update a variable as you, the person in the workspace \
                view: it is typed USER_ADD, as written by you and not by the model. The value \
                is stored as typed, references and all; RULE variables are read-only.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "description": "Up to 256 characters, no `{`, `}` or `:`; `/` may group names."
                    },
                    "value": {"type": "string", "description": "The text to store, exactly as typed."},
                    "desc": {
                        "type": "string",
                        "description": "A one-line description (left out: an existing one is kept)."
                    },
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Tags (replace the existing ones; left out: they are kept)."
                    },
                    "_outputPath": {
                        "type": "string",
                        "pattern": "^†",
                        "description": "Store the result at †state.<path> or †var.<name>."
                    }
                },
                "required": ["name", "value"],
                "additionalProperties": false
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "created": {
                        "type": "boolean",
                        "description": "`true` when the variable did not exist before."
                    },
                    "length": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Length of the stored value in characters."
                    },
                    "evicted": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Variables evicted to stay within capacity."
                    }
                },
                "required": ["name", "created", "length"],
                "$schema": "https://json-schema.org/draft/2020-12/schema"
            },
            "annotations": {
                "readOnlyHint": false,
                "destructiveHint": true,
                "idempotentHint": true,
                "openWorldHint": false
            },
            "_meta": {"ui": {"visibility": ["app"]}}
        }])
    );
    // Every other tool is listed to it as to a client without apps, which lists no AppWriteVar.
    let model_tools = without_apps.list_all_tools().await.unwrap();
    assert_eq!(
        serde_json::to_value(&others).unwrap(),
        serde_json::to_value(&model_tools).unwrap()
    );

    // That client, and a plan of any client, is refused it as a tool that does not exist.
    let arguments = json!({"name": "forged", "value": "the model's"});
    let refused = call_error(&without_apps, "AppWriteVar", arguments.clone()).await;
    let unknown = call_error(&without_apps, "NoSuchTool", arguments).await;
    assert_eq!(refused, unknown.replace("NoSuchTool", "AppWriteVar"));
    let plan = |tool: &str| json!({"steps": [{"_id": "a", "_tool": tool, "name": "forged", "value": "x"}]});
    let planned = text(&call(&client, "RunPlan", plan("AppWriteVar")).await);
    let unknown = text(&call(&client, "RunPlan", plan("NoSuchTool")).await);
    assert_eq!(planned, unknown.replace("NoSuchTool", "AppWriteVar"));
    assert_eq!(listed(&client).await, Vec::<Value>::new());
    client.cancel().await.unwrap();
    without_apps.cancel().await.unwrap();
}

#[tokio::test]
async fn it_stores_the_persons_text_as_typed_and_typed_user_add() {
    let client = spawn_binary(&[], with_apps()).await;
    // References are stored as written: a person's text is not the model's template.
    let value = "Lin's notes: $VAR_REF{{report}} and †state.project stay as typed.\nSecond line.";
    assert_eq!(
        answer(
            &client,
            "AppWriteVar",
            json!({"name": "notes/from-you", "value": value, "tags": ["mine"]})
        )
        .await,
        Ok(json!({
            "content": [{"type": "text", "text": "{\"name\":\"notes/from-you\",\"created\":true,\"length\":78}"}],
            "structuredContent": {"name": "notes/from-you", "created": true, "length": 78},
            "isError": false
        }))
    );
    // A variable the model wrote becomes the person's once they write its value.
    call(
        &client,
        "WriteVar",
        json!({"name": "draft", "value": "model", "desc": "kept"}),
    )
    .await;
    call(
        &client,
        "AppWriteVar",
        json!({"name": "draft", "value": "person"}),
    )
    .await;
    assert_eq!(
        listed(&client).await,
        [
            json!({"name": "draft", "length": 6, "type": "USER_ADD", "desc": "kept"}),
            json!({"name": "notes/from-you", "length": 78, "type": "USER_ADD", "tags": ["mine"]}),
        ]
    );
    let read = text(&call(&client, "ReadVar", json!({"name": "notes/from-you"})).await);
    assert_eq!(read.split_once('\n').map(|(_, stored)| stored), Some(value));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_bad_name_or_a_full_workspace_is_a_clear_error_that_loses_nothing() {
    let client = spawn_binary(&["--workspace-max-bytes", "100"], with_apps()).await;
    assert_eq!(
        answer(&client, "AppWriteVar", json!({"name": "a{b", "value": "x"})).await,
        Ok(tool_error(
            "invalid variable name `a{b`: the name contains `{`, which would make \
             `$VAR_REF{{name:start:length}}` ambiguous; use another separator such as `/` or `_`"
        ))
    );
    call(
        &client,
        "AppWriteVar",
        json!({"name": "kept", "value": "forty characters of the person's own text"}),
    )
    .await;
    let full = "workspace `default` would hold 163 bytes, over its cap of 100 bytes; remove \
        variables with RemoveVars (or state with WriteState), or raise workspace_max_bytes in \
        the config file (--workspace-max-bytes)";
    let long = "x".repeat(120);
    assert_eq!(
        answer(
            &client,
            "AppWriteVar",
            json!({"name": "more", "value": long})
        )
        .await,
        Ok(tool_error(full))
    );
    assert_eq!(
        answer(
            &client,
            "AppWriteVar",
            json!({"name": "kept", "value": "y".repeat(200)})
        )
        .await,
        Ok(tool_error(&full.replace("163", "202")))
    );
    assert_eq!(
        listed(&client).await,
        [json!({"name": "kept", "length": 41, "type": "USER_ADD"})]
    );
    let read = text(&call(&client, "ReadVar", json!({"name": "kept"})).await);
    assert!(
        read.ends_with("\nforty characters of the person's own text"),
        "{read}"
    );
    client.cancel().await.unwrap();
}
