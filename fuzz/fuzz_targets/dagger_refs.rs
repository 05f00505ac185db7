//! `†kind.path` references (src/refs/dagger.rs, src/json/path.rs): parsing never panics and
//! round-trips (pieces printed back with `††` escapes parse to the same pieces), and resolution
//! against a state document never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use synapse_mcp::json::path::Path;
use synapse_mcp::refs::dagger::{self, Context, DAGGER, Kind, Piece};
use synapse_mcp_fuzz::{DaggerToken, render_dagger_tokens};

struct Document(Value);

impl Context for Document {
    fn read(&mut self, kind: Kind, path: &Path) -> Result<Option<Value>, String> {
        if kind == Kind::Input {
            return Err("†input is only available inside RunPlan".to_owned());
        }
        Ok(path.get(&self.0).cloned())
    }
}

fn print(pieces: &[Piece]) -> String {
    let mut text = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(literal) => text.push_str(&literal.replace(DAGGER, "††")),
            Piece::Reference(reference) => text.push_str(&reference.source),
        }
    }
    text
}

fuzz_target!(|tokens: (Vec<DaggerToken>, Vec<DaggerToken>)| {
    let text = render_dagger_tokens(&tokens.0);
    if let Ok(pieces) = dagger::parse(&text) {
        let printed = print(&pieces);
        assert_eq!(
            dagger::parse(&printed).as_ref(),
            Ok(&pieces),
            "{text:?} printed as {printed:?}"
        );
    }
    let mut document = Document(json!({
        "user": {"name": "Ada", "age": 36, "a-b": null},
        "items": [{"name": "first"}, [1, 2], "third"],
        "x_y": true
    }));
    let mut value = json!({"whole": text, "list": [render_dagger_tokens(&tokens.1)]});
    if let Err(error) = dagger::resolve_value(&mut value, &mut document) {
        assert!(error.to_string().contains(DAGGER));
    }
    let mut target = document.0.clone();
    if let Ok(path) = Path::parse(&render_dagger_tokens(&tokens.1)) {
        if path.set(&mut target, json!("written")).is_ok() {
            assert_eq!(path.get(&target), Some(&json!("written")));
        }
    }
});
