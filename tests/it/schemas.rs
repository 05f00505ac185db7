//! The JSON Schemas in `schemas/` are generated from the code; this test fails when they drift.
//! `UPDATE_GOLDEN=1 cargo test` rewrites them.

use serde_json::Value;

use crate::common::{assert_golden, test_server};

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
