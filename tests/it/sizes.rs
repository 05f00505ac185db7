//! The size of the crate's files, checked from its source: no file under `src/` is longer than
//! [`FILE_LIMIT`] lines outside its `#[cfg(test)]` items (a function's length is clippy's
//! `too_many_lines`, with the threshold in `clippy.toml`).

use std::path::Path;

use crate::layers::collect_sources;

/// The most lines of a source file, its test module left out.
const FILE_LIMIT: usize = 650;

#[test]
fn no_source_file_is_longer_than_the_limit_outside_its_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect_sources(&root, &mut files);
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let relative = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let lines = lines_outside_tests(&std::fs::read_to_string(file).unwrap());
            (lines > FILE_LIMIT).then(|| format!("{relative}: {lines} lines"))
        })
        .collect();
    long.sort();
    assert_eq!(
        long,
        Vec::<String>::new(),
        "files longer than {FILE_LIMIT} lines outside their tests: split them by what they own"
    );
}

#[test]
fn the_count_leaves_out_the_test_module_only() {
    let mut source = "//! A file.\nfn a() {}\n".repeat(FILE_LIMIT / 2);
    source.push_str("fn b() {}\n");
    assert_eq!(lines_outside_tests(&source), FILE_LIMIT + 1);
    source.push_str("#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n");
    assert_eq!(lines_outside_tests(&source), FILE_LIMIT + 1);
    assert_eq!(
        lines_outside_tests("fn a() {}\n#[cfg(test)]\nmod tests {}\n"),
        1
    );
}

/// The lines of `source` outside its top-level `#[cfg(test)]` items (its test module, and any
/// test-only `impl` or `mod` beside it): each runs from the attribute to its closing `}` or `;`
/// at the start of a line.
fn lines_outside_tests(source: &str) -> usize {
    let mut count = 0;
    let mut in_test_item = false;
    for line in source.lines() {
        if in_test_item {
            in_test_item = !(line == "}" || (!line.starts_with(' ') && line.ends_with(';')));
        } else if line == "#[cfg(test)]" {
            in_test_item = true;
        } else {
            count += 1;
        }
    }
    count
}
