//! SKILL.md frontmatter (src/skills/frontmatter.rs, src/skills/validate.rs): normalising,
//! splitting, parsing and checking any text never panics, and the head-only read that start-up
//! uses finds the same YAML as reading the whole file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use synapse_mcp::skills::{frontmatter, validate};

fuzz_target!(|bytes: &[u8]| {
    let head = frontmatter::read_head(std::io::Cursor::new(bytes));
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let normalised = frontmatter::normalise(text);
    let whole = frontmatter::split(&normalised);
    let head = head.expect("a UTF-8 text reads");
    let from_head = frontmatter::split(&head).map(|split| split.yaml.to_owned());
    assert_eq!(
        whole
            .as_ref()
            .map(|split| split.yaml.to_owned())
            .map_err(|error| *error),
        from_head,
        "the head-only read disagrees with the whole file for {text:?}"
    );
    let Ok(split) = whole else {
        return;
    };
    let lines = validate::key_lines(split.yaml, split.yaml_line);
    match frontmatter::parse(&split) {
        Ok(parsed) => {
            let file = std::path::Path::new("skill/SKILL.md");
            let (_fields, diagnostics) =
                validate::check(&parsed.frontmatter, "skill", file, &lines);
            for diagnostic in diagnostics {
                assert!(!diagnostic.render(true).is_empty());
            }
        }
        Err(error) => assert!(!error.message.is_empty()),
    }
});
