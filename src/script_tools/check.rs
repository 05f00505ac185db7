//! `synapse-mcp tools check`: every problem of every tool folder of the given roots, and a count
//! of what would be served. Nothing is written (no `index.json`), and every manifest is read.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::scan;

/// The report and whether the check failed: a group or a tool would be left out.
pub fn report(roots: &[PathBuf], reserved: &[&str]) -> (String, bool) {
    let scan = scan::scan(roots, reserved, None);
    let mut text = String::new();
    for problem in &scan.problems {
        writeln!(text, "{problem}").ok();
    }
    let tools: usize = scan.groups.iter().map(|group| group.scripts.len()).sum();
    let skipped = scan
        .problems
        .iter()
        .filter(|problem| problem.skipped)
        .count();
    let warnings = scan.problems.len() - skipped;
    writeln!(
        text,
        "{tools} tools usable in {} groups, {skipped} skipped, {warnings} warnings ({} roots)",
        scan.groups.len(),
        roots.len()
    )
    .ok();
    (text, skipped > 0)
}
