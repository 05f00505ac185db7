//! Rebuilds the binary when anything under `skills/` changes: the bundled skills are compiled in
//! with `include_dir!`, which tracks the files it read but not files added later.

fn main() {
    println!("cargo::rerun-if-changed=skills");
}
