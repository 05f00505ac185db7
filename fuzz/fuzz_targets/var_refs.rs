//! `$VAR_REF` parsing and resolution (src/refs.rs) against a plain recursive model of the
//! documented rules: no panic, no hang, the same text or a failure on both sides, a string
//! resolved alone or inside a JSON tree gives the same result.
#![no_main]

use std::borrow::Cow;
use std::sync::Arc;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use synapse_mcp::refs;
use synapse_mcp::vars::ValueKind;
use synapse_mcp_fuzz::{NAMES, VarToken, Variables, model_resolve, render_var_tokens};

#[derive(Arbitrary, Debug)]
struct Input {
    variables: Vec<(u8, bool, Vec<VarToken>)>,
    text: Vec<VarToken>,
}

fuzz_target!(|input: Input| {
    let mut variables = Variables::default();
    for (name, json, tokens) in &input.variables {
        let kind = if *json {
            ValueKind::Json
        } else {
            ValueKind::Text
        };
        let name = NAMES[usize::from(*name) % NAMES.len()].trim();
        variables.values.insert(
            name.to_owned(),
            (Arc::from(render_var_tokens(tokens)), kind),
        );
    }
    let text = render_var_tokens(&input.text);
    let resolved = refs::resolve_str(&text, &mut variables).map(Cow::into_owned);
    if !refs::contains_reference(&text) {
        assert_eq!(resolved.as_deref(), Ok(text.as_str()));
    }
    if let Err(error) = &resolved {
        assert!(!error.to_string().is_empty());
        if matches!(error, refs::Error::TooLarge { .. }) {
            return;
        }
    }
    let expected = model_resolve(&text, &variables.values, &mut Vec::new());
    assert_eq!(
        resolved.as_ref().ok(),
        expected.as_ref().ok(),
        "resolver and model disagree on {text:?}: {resolved:?} vs {expected:?}"
    );
    let mut tree = json!({"outer": [text.clone(), {"inner": text}], "count": 1});
    let in_tree = refs::resolve_value(&mut tree, &mut variables);
    match resolved {
        // The tree holds the text twice, paid from one budget: twice may be too much.
        Ok(_) if matches!(in_tree, Err(refs::Error::TooLarge { .. })) => {}
        Ok(alone) => {
            assert!(in_tree.is_ok());
            assert_eq!(tree["outer"][0], Value::String(alone.clone()));
            assert_eq!(tree["outer"][1]["inner"], Value::String(alone));
        }
        Err(_) => assert!(in_tree.is_err()),
    }
});
