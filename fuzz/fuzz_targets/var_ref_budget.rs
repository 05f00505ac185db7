//! The `$VAR_REF` resolver's budget (src/refs.rs): whatever the variables hold (fan-outs of
//! empty values, cycles, slices), one resolution, or several sharing a budget as a plan's
//! steps do, never looks up more variables than the budget pays for, and a refused resolution
//! is refused as too large, never by running on.
#![no_main]

use std::sync::Arc;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use synapse_mcp::refs::{self, Budget, EXPANSION_COST, MAX_RESOLVED_BYTES};
use synapse_mcp::vars::ValueKind;
use synapse_mcp_fuzz::{NAMES, VarToken, Variables, render_var_tokens};

#[derive(Arbitrary, Debug)]
struct Input {
    /// Per variable: its name, how many times its tokens repeat (a fan-out), its tokens.
    variables: Vec<(u8, u8, Vec<VarToken>)>,
    /// The texts of the calls sharing one budget.
    calls: Vec<Vec<VarToken>>,
}

/// Most lookups one budget pays for: every expansion costs at least `EXPANSION_COST`.
const MOST_LOOKUPS: usize = MAX_RESOLVED_BYTES / EXPANSION_COST + 1;

fuzz_target!(|input: Input| {
    let mut variables = Variables::default();
    for (name, repeat, tokens) in &input.variables {
        let name = NAMES[usize::from(*name) % NAMES.len()].trim();
        let value = render_var_tokens(tokens).repeat(usize::from(*repeat % 16) + 1);
        variables
            .values
            .insert(name.to_owned(), (Arc::from(value), ValueKind::Text));
    }
    let budget = Budget::default();
    for tokens in input.calls.iter().take(8) {
        let mut arguments = Value::String(render_var_tokens(tokens));
        let before = variables.lookups;
        let outcome = refs::resolve_value_within(&mut arguments, &mut variables, &budget);
        let made = variables.lookups - before;
        assert!(made <= MOST_LOOKUPS, "{made} lookups in one call");
        if let Err(error) = outcome {
            assert!(!error.to_string().is_empty());
        }
    }
    assert!(
        variables.lookups <= MOST_LOOKUPS + input.calls.len().min(8),
        "{} lookups from one shared budget",
        variables.lookups
    );
});
