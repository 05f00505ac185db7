//! The chat snapshots' call parser (src/snapshots/calls.rs, literal.rs), built-ins (builtins.rs)
//! and tree layout (src/store/tree.rs): any reply text is scanned without a panic, calls come in
//! text order and on character boundaries, no call starts inside another, applying each call
//! either changes the snapshot or fails leaving it exactly as it was, no call makes the snapshot
//! nest deeper than the limit, and the snapshot laid out again from the paths the calls say they
//! changed reads back exactly.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use synapse_mcp::json::nesting;
use synapse_mcp::snapshots::builtins::Builtin;
use synapse_mcp::snapshots::calls::{self, Action, Syntaxes};
use synapse_mcp::store::tree::{self, Changed, Encoded, SnapshotKey};

fn key() -> SnapshotKey {
    SnapshotKey {
        id: "fuzz".to_owned(),
        chat_file: "fuzz".to_owned(),
        message_id: None,
        swipe_id: None,
        created_at: None,
        summary: None,
        stored_bytes: None,
    }
}

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
    let mut snapshot = json!({"角色": {"名字": "张三", "金币": 5}, "背包": ["剑"], "n": null,
        "long": (0..40).collect::<Vec<_>>()});
    let mut encoded = Encoded::new();
    let mut nodes: HashMap<String, String> = HashMap::new();
    encoded.add(key(), &snapshot).unwrap();
    for call in found {
        let before = snapshot.clone();
        let mut changed = Changed::new();
        let outcome = match &call.action {
            Action::Builtin(builtin, arguments) => builtin
                .apply(&mut snapshot, arguments)
                .map(|path| changed.path(&path))
                .map_err(|error| error.to_string()),
            Action::Patch(operations) => operations.iter().try_for_each(|operation| {
                operation
                    .apply(&mut snapshot)
                    .map(|paths| paths.iter().for_each(|path| changed.path(path)))
                    .map_err(|error| error.to_string())
            }),
            Action::Malformed(_) => Err(String::new()),
        };
        if outcome.is_err() && !matches!(call.action, Action::Patch(_)) {
            assert_eq!(snapshot, before, "a failed {} changed the snapshot", call.name);
        }
        assert!(nesting::depth(&snapshot) <= nesting::MAX_DEPTH, "{} nested too deep", call.name);
        encoded.add_changed(key(), &snapshot, &changed).unwrap();
        nodes.extend(std::mem::take(&mut encoded.nodes));
        let root = encoded.snapshots.pop().map(|(_, root)| root).unwrap();
        encoded.committed();
        let read = tree::decode(
            &root,
            &mut |hash: &str| nodes.get(hash).cloned().ok_or_else(|| hash.to_owned()),
            |message| message,
        );
        assert_eq!(read.as_ref(), Ok(&snapshot), "laid out from {changed:?}");
    }
});
