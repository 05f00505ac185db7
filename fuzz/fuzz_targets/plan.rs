//! Plan parsing and validation (src/plans/plan.rs, src/plans/output.rs): any JSON array of
//! steps is either refused with at least one problem or ordered so that every step runs once,
//! after every step it depends on.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use synapse_mcp::plans::plan::{self, World};
use synapse_mcp::tools::{Annotations, ToolDefinition, Writes};

struct Tools {
    state: Value,
}

impl World for Tools {
    fn tool(&self, name: &str) -> Option<ToolDefinition> {
        let schema = match name {
            "Echo" => json!({"type": "object", "properties": {"text": {}}, "required": ["text"]}),
            "WriteVar" => json!({"type": "object", "additionalProperties": false,
                "properties": {"name": {"type": "string"}, "value": {}, "tags": {"type": "array"}},
                "required": ["name"]}),
            "Count" => json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            _ => return None,
        };
        let mut definition = ToolDefinition::from_schemas(
            name,
            "",
            Annotations::default(),
            schema.as_object()?.clone(),
            None,
        );
        if name == "WriteVar" {
            definition.writes = Writes::VariableNamed("name");
        }
        Some(definition)
    }

    fn state(&self) -> &Value {
        &self.state
    }

    fn variable_exists(&self, name: &str) -> bool {
        name == "notes"
    }
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(Value::Array(steps)) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    let parsed = match plan::parse(&steps) {
        Ok(parsed) => parsed,
        Err(problems) => {
            assert!(!problems.is_empty());
            return;
        }
    };
    let world = Tools {
        state: json!({"user": {"name": "Ada"}, "items": [1]}),
    };
    match plan::validate(&parsed, &json!({"topic": "x"}), &world) {
        Err(problems) => assert!(!problems.is_empty()),
        Ok(validated) => {
            let mut done = vec![false; parsed.len()];
            for layer in &validated.order {
                let indices: Vec<usize> = layer
                    .iter()
                    .map(|id| {
                        parsed
                            .iter()
                            .position(|step| &step.id == id)
                            .expect("a known id")
                    })
                    .collect();
                for &index in &indices {
                    assert!(!done[index], "step {index} ordered twice");
                    for &dependency in &validated.dependencies[index] {
                        assert!(
                            done[dependency],
                            "step {index} runs before its dependency {dependency}"
                        );
                    }
                }
                for index in indices {
                    done[index] = true;
                }
            }
            assert!(
                done.iter().all(|ran| *ran),
                "a step is missing from the order"
            );
        }
    }
});
