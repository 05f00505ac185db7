//! The chat snapshots' call parser (src/snapshots/calls.rs, literal.rs) and built-ins
//! (builtins.rs): any reply text is scanned without a panic, calls come in text order and on
//! character boundaries, no call starts inside another, and applying each call either changes
//! the snapshot or fails leaving it exactly as it was.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use synapse_mcp::snapshots::builtins::Builtin;
use synapse_mcp::snapshots::calls::{self, Action, Syntaxes};

fuzz_target!(|text: &str| {
    let syntaxes = Syntaxes {
        callable: Builtin::CALLABLE.to_vec(),
        mvu: true,
        json_patch: true,
    };
    let found = calls::find(text, &syntaxes);
    let mut claimed = 0;
    for call in &found {
        assert!(text.is_char_boundary(call.position) && text.is_char_boundary(call.end));
        assert!(call.position >= claimed, "a call inside another: {found:?}");
        claimed = claimed.max(call.end);
    }
    let mut snapshot = json!({"角色": {"名字": "张三", "金币": 5}, "背包": ["剑"], "n": null});
    for call in found {
        let before = snapshot.clone();
        let outcome = match &call.action {
            Action::Builtin(builtin, arguments) => builtin.apply(&mut snapshot, arguments),
            Action::Patch(operations) => operations
                .iter()
                .try_for_each(|operation| operation.apply(&mut snapshot)),
            Action::Malformed(_) => Err(String::new()),
        };
        if outcome.is_err() && !matches!(call.action, Action::Patch(_)) {
            assert_eq!(snapshot, before, "a failed {} changed the snapshot", call.name);
        }
    }
});
