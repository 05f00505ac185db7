//! Dot paths and nesting (src/json/path.rs, src/json/nesting.rs): a parsed path prints back in
//! the path grammar to the same path and stays within the nesting limit; a write either lands where a read finds it or
//! changes nothing; and any text, however deep, is measured and flattened without recursion
//! into JSON that parses and nests no deeper than the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use synapse_mcp::json::nesting::{self, MAX_DEPTH};
use synapse_mcp::json::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(path) = Path::parse(text) {
        assert!(path.segments().len() <= MAX_DEPTH);
        assert_eq!(Path::parse(&path.to_string()).as_ref(), Ok(&path));
        let mut document = json!({"a": [1, {"b": null}], "0": "x"});
        let before = document.clone();
        let value = json!({"written": true});
        if nesting::check(&value, path.segments().len()).is_ok() {
            match path.set(&mut document, value.clone()) {
                Ok(()) => assert_eq!(path.get(&document), Some(&value)),
                Err(_) => assert_eq!(document, before),
            }
        }
    }
    let measured = nesting::text_depth(text);
    match nesting::flatten_text(text) {
        None => assert!(measured <= MAX_DEPTH),
        Some(flattened) => {
            assert!(measured > MAX_DEPTH);
            if serde_json::from_str::<Value>(text).is_ok() {
                let value: Value = serde_json::from_str(&flattened.text)
                    .unwrap_or_else(|error| panic!("flattened text does not parse: {error}"));
                assert!(nesting::depth(&value) <= MAX_DEPTH);
                assert!(!flattened.cut.is_empty());
            }
        }
    }
    // Deep texts built from the input: the fuzzer rarely nests a hundred brackets itself.
    if let Some((&first, rest)) = data.split_first() {
        let levels = usize::from(first) * 8;
        let inner = std::str::from_utf8(rest).unwrap_or("1");
        let deep = format!("{}{inner}{}", "[".repeat(levels), "]".repeat(levels));
        if let Some(flattened) = nesting::flatten_text(&deep)
            && serde_json::from_str::<Value>(inner).is_ok()
        {
            let value: Value = serde_json::from_str(&flattened.text).unwrap();
            assert!(nesting::depth(&value) <= MAX_DEPTH);
        }
    }
});
